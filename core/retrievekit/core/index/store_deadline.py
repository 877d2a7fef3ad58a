"""Calls into a framework's vector store that end within a timeout, with retrievekit's typed errors.

A framework store (LlamaIndex's ``PGVectorStore``, LangChain's ``PGVector``) talks to its server through its own
driver, whose reads wait as long as the socket does: a paused server (``SIGSTOP``, a frozen VM) keeps a query waiting
forever. :class:`StoreDeadline` runs each call on a daemon thread (:func:`~retrievekit.core.threads.run_with_deadline`) and stops waiting at the deadline, raising
:class:`~retrievekit.core.errors.StoreUnavailableError`; the abandoned call ends when its driver gives up (set the
driver's own timeouts too, e.g. libpq's ``connect_timeout`` and ``tcp_user_timeout``). A driver's connection errors
(``OperationalError``, ``InterfaceError``, ``ConnectionError``, ``TimeoutError``) become the same error; a vector of
the wrong dimension becomes :class:`~retrievekit.core.errors.IndexFormatError`.

Examples:
    >>> StoreDeadline(5.0, where="table docs").run("count", lambda: 3)
    3
    >>> StoreDeadline(5.0, where="table docs").run("count", lambda: 1 / 0)
    Traceback (most recent call last):
    ...
    ZeroDivisionError: division by zero
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from retrievekit.core.errors import IndexFormatError, StoreUnavailableError

__all__ = ["DEFAULT_STORE_TIMEOUT_S", "StoreDeadline", "classify_store_error"]

T = TypeVar("T")

DEFAULT_STORE_TIMEOUT_S = 60.0
"""Seconds one call into a vector store server may take (the same default as a Chroma server's)."""

_UNAVAILABLE = frozenset(
    {"OperationalError", "InterfaceError", "DisconnectionError", "ConnectionError", "TimeoutError"}
)


def classify_store_error(e: BaseException) -> str | None:
    """'unavailable' (the server is down, unreachable or timed out), 'dimension' (a vector of another dimension than
    the store's) or None (anything else: raised as it is). Read from the exception's class names, so no driver is
    imported.

    Examples:
        >>> classify_store_error(ConnectionRefusedError("refused"))
        'unavailable'
        >>> class DataError(Exception): ...
        >>> classify_store_error(DataError("different vector dimensions 384 and 3"))
        'dimension'
        >>> classify_store_error(KeyError("x")) is None
        True
    """
    names = {c.__name__ for c in type(e).__mro__}
    text = str(e).lower()
    if "dimension" in text and ("expected" in text or "different vector" in text or "dimensions" in text):
        return "dimension"
    if names & _UNAVAILABLE or isinstance(e, ConnectionError | TimeoutError):
        return "unavailable"
    return None


class StoreDeadline:
    """Runs calls into one store: each must end within ``timeout`` seconds (None: wait as the driver does).

    Args:
        timeout: seconds per call; None runs calls on the caller's thread with no deadline.
        where: the store, for messages (``"PGVectorStore table docs"``).

    Examples:
        >>> StoreDeadline(None, where="x").timeout is None
        True
        >>> StoreDeadline(0, where="x")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: timeout must be a positive number of seconds or None, not 0
    """

    def __init__(self, timeout: float | None = DEFAULT_STORE_TIMEOUT_S, *, where: str) -> None:
        from retrievekit.core.errors import InvalidInputError

        if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
            raise InvalidInputError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
        self.timeout, self.where = timeout, where

    def run(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, ended at the deadline; typed errors for a store that is down, paused or of another dimension.

        Examples:
            >>> import time
            >>> StoreDeadline(0.2, where="a paused server").run("query", lambda: time.sleep(5))
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.StoreUnavailableError: a paused server did not answer query within 0.2 s (no reply within 0.2 s); is it down, paused or overloaded?
        """
        from retrievekit.core.threads import run_with_deadline

        try:
            return run_with_deadline(fn, self.timeout)
        except (StoreUnavailableError, IndexFormatError):
            raise
        except TimeoutError as e:  # the deadline, or the driver's own timeout
            raise StoreUnavailableError(
                f"{self.where} did not answer {what} within {self.timeout} s ({str(e)[:200]}); "
                "is it down, paused or overloaded?"
            ) from e
        except Exception as e:
            kind = classify_store_error(e)
            if kind == "unavailable":
                raise StoreUnavailableError(
                    f"cannot reach {self.where} for {what}: {type(e).__name__}: {str(e).strip()[:300]}"
                ) from e
            if kind == "dimension":
                raise IndexFormatError(
                    f"{self.where} holds vectors of another dimension than the embedding model's ({what}): "
                    f"{str(e).strip()[:300]}; pass the model that wrote it"
                ) from e
            raise
