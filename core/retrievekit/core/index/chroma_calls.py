"""Calls into a Chroma client with a finite timeout, bounded retries and retrievekit's typed errors.

chromadb's HTTP client waits for a server forever (its ``httpx`` session has no timeout), and a stopped server
surfaces as a raw ``httpx.ConnectError``. :class:`StoreCalls` sets a finite timeout on a server client's session,
retries the calls that are safe to repeat (reads: query, get, count, collection lookups) a bounded number of times
with a short backoff, and turns what is left into :class:`~retrievekit.core.errors.StoreUnavailableError` naming
the server and the operation. Chroma's own errors (a collection deleted under the index, a database it cannot
read) become :class:`~retrievekit.core.errors.IndexFormatError`.

Examples:
    >>> calls = StoreCalls(None)  # an embedded client: no server, no timeout to set
    >>> calls.run("count", lambda: 3)
    3
    >>> calls.run("count", lambda: 1 / 0)
    Traceback (most recent call last):
    ...
    ZeroDivisionError: division by zero
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from retrievekit.core.descriptors import FD_HEADROOM, check_descriptors, resource_unlimited
from retrievekit.core.errors import IndexFormatError, StoreUnavailableError
from retrievekit.core.index.folder_swap import storage_error

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "FD_HEADROOM",
    "StoreCalls",
    "check_descriptors",
    "resource_unlimited",
]

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
"""Seconds a Chroma server may take to answer one request (chromadb itself waits forever)."""
DEFAULT_RETRIES = 2
"""Further tries of a read that timed out or could not connect, after 0.5 s and then 1 s."""
_BACKOFF_S = (0.5, 1.0, 2.0)


def _server_session(client: Any) -> Any:
    """The ``httpx.Client`` of a chromadb HTTP client, or None (an embedded client, or an unknown layout)."""
    server = getattr(client, "_server", None)
    session = getattr(server, "_session", None)
    try:
        import httpx
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        return None
    return session if isinstance(session, httpx.Client) else None


class StoreCalls:
    """Runs calls on one Chroma client: finite timeout (server clients), bounded retries of reads, typed errors.

    Args:
        client: the Chroma client (``HttpClient`` for a server; an embedded client has no timeout to set).
        timeout: seconds per server request; None leaves the client's own setting.
        retries: further tries of a read that timed out or could not connect.
        where: the folder of an embedded client, named when a write fails for a full disk or a denied permission.

    Examples:
        >>> StoreCalls(None, timeout=5.0).server is None
        True
    """

    def __init__(
        self, client: Any, *, timeout: float | None = DEFAULT_TIMEOUT_S, retries: int = DEFAULT_RETRIES, where: str = ""
    ):
        self.where = where  # the folder of an embedded client, named by a disk-full or permission error
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, not {retries!r}")
        self.timeout, self.retries = timeout, int(retries)
        session = _server_session(client)
        self.server: str | None = None
        if session is not None:
            import httpx

            self.server = str(getattr(client._server, "_api_url", "")) or "the Chroma server"
            if timeout is not None:
                session.timeout = httpx.Timeout(timeout)

    def run(self, what: str, fn: Callable[[], T], *, retry: bool = True) -> T:
        """``fn()``, retried (when ``retry``) on a timeout or a failed connection; typed errors for what remains.

        Examples:
            >>> StoreCalls(None).run("list", lambda: ["a"])
            ['a']
        """
        tries = 1 + (self.retries if retry else 0)
        for attempt in range(tries):
            try:
                return fn()
            except Exception as e:
                kind = _classify(e)
                if kind is None:
                    raise
                if kind == "chroma":
                    check_descriptors(what, e)  # out of file descriptors: not a damaged index
                    typed = storage_error(self.where or "the Chroma database", e)  # read-only or full: say so
                    if typed is not None:
                        raise typed from e
                    raise IndexFormatError(f"Chroma refused {what}: {type(e).__name__}: {e}") from e
                if attempt + 1 < tries:
                    time.sleep(_BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)])
                    continue
                raise StoreUnavailableError(self._message(what, kind, e, tries)) from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _message(self, what: str, kind: str, e: Exception, tries: int) -> str:
        where = self.server or "the Chroma server"
        n = f"{tries} tr{'y' if tries == 1 else 'ies'}"
        if kind == "timeout":
            return f"{where} did not answer {what} within {self.timeout} s ({n}); is it overloaded or stopped?"
        return f"cannot reach {where} for {what} ({n}): {type(e).__name__}: {e}"


def _classify(e: Exception) -> str | None:
    """'timeout', 'connect' (transport failures and server-side 5xx), 'chroma' (Chroma's own errors) or None."""
    try:
        import httpx
    except ImportError:  # pragma: no cover
        httpx = None  # type: ignore[assignment]
    if httpx is not None:
        if isinstance(e, httpx.TimeoutException):
            return "timeout"
        if isinstance(e, httpx.TransportError):
            return "connect"
        if isinstance(e, httpx.HTTPStatusError) and e.response.status_code >= 500:
            return "connect"
    try:
        from chromadb.errors import ChromaError
    except ImportError:  # pragma: no cover
        return None
    return "chroma" if isinstance(e, ChromaError) else None
