"""One JSON ``POST`` awaited on the caller's event loop, over ``aiohttp``: the one HTTP client of every awaited
request to a served model (the chat wire, :mod:`retrievekit.core.llm.openai_wire`, and the served embedder,
:class:`~retrievekit.core.index.served_embedder.ServedEmbedder`).

A :class:`JsonPoster` belongs to one event loop (its users keep one per loop in a
:class:`~retrievekit.core.llm.per_loop.PerLoop`, closed with its loop). It keeps connections to one origin alive
between requests, at most ``max_connections`` at once (more requests wait their turn on the loop: no thread per
request), and a request cancelled or failed mid-way closes its connection, so the server sees the caller go. A reply
larger than the caller's cap is refused before it is read whole (:class:`ReplyTooLargeError`); a status other than
2xx is an :class:`HTTPStatusError` carrying the status, the start of the body and the headers (``Retry-After``); a
connection that fails is a ``ConnectionError``. No thread is used: an IP address is not looked up, and the
environment's proxy (``HTTP(S)_PROXY`` / ``NO_PROXY``) is read once, not per request. Deadlines, retries and typed errors are the caller's policy's.

Examples:
    >>> import asyncio
    >>> poster = JsonPoster("http://127.0.0.1:8080/v1/")
    >>> poster.base_url
    'http://127.0.0.1:8080/v1'
    >>> asyncio.run(poster.aclose())
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["HTTPStatusError", "JsonPoster", "ReplyTooLargeError"]


class HTTPStatusError(Exception):
    """A reply whose status is not 2xx: ``code`` (also ``status_code``), the first bytes of its body (``read()``) and
    its headers (``response.headers``, lower-case names), as the call policy reads them.

    Examples:
        >>> e = HTTPStatusError(503, b"busy", {"Retry-After": "2"})
        >>> e.code, e.status_code, e.read(), e.response.headers["retry-after"], str(e)
        (503, 503, b'busy', '2', 'HTTP 503: busy')
    """

    def __init__(self, code: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"HTTP {code}: {body[:300].decode('utf-8', 'replace')}".rstrip(": "))
        self.code = self.status_code = code
        self._body = body[:4096]
        self.response = _Headers({k.lower(): v for k, v in (headers or {}).items()})

    def read(self) -> bytes:
        """The start of the reply's body."""
        return self._body


class _Headers:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class ReplyTooLargeError(Exception):
    """A reply body over the caller's cap, refused unread beyond it; ``declared`` is its ``Content-Length`` ("" when
    it gave none).

    Examples:
        >>> ReplyTooLargeError("99").declared
        '99'
    """

    def __init__(self, declared: str) -> None:
        super().__init__(f"a reply over the size cap (Content-Length {declared or 'not given'})")
        self.declared = declared


class JsonPoster:
    """``POST`` JSON bodies to ``base_url + path`` on the running loop, over one ``aiohttp`` session made on first use.

    Args:
        base_url: the server's base URL (``http://host:port/v1``).
        max_connections: connections open at once (requests beyond wait on the loop).
        headers: headers sent with every request (the key, ``Content-Type``).

    Examples:
        >>> JsonPoster("http://127.0.0.1:8080/v1", max_connections=4).max_connections
        4
    """

    def __init__(self, base_url: str, *, max_connections: int = 16, headers: Mapping[str, str] | None = None) -> None:
        self.base_url = str(base_url).rstrip("/")
        self.max_connections = max(1, int(max_connections))
        self.headers = {"Content-Type": "application/json", **dict(headers or {})}
        self.proxy = _env_proxy(self.base_url)
        self._session: Any = None

    def _open(self) -> Any:
        import aiohttp

        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self.max_connections, enable_cleanup_closed=True, resolver=cast(Any, _LiteralFirst())
            )
            # no deadline of aiohttp's own: the caller's asyncio deadline bounds each request
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self.headers, timeout=aiohttp.ClientTimeout(total=None)
            )
        return self._session

    async def post(self, path: str, body: bytes, headers: Mapping[str, str] | None = None, cap: int = 8 << 20) -> bytes:
        """``POST`` ``body`` to ``base_url + path``; the reply's body (at most ``cap`` bytes), or
        :class:`HTTPStatusError` / :class:`ReplyTooLargeError` / ``ConnectionError``.

        Examples:
            >>> import asyncio
            >>> async def refused():
            ...     poster = JsonPoster("http://127.0.0.1:9")
            ...     try:
            ...         await poster.post("/x", b"{}")
            ...     finally:
            ...         await poster.aclose()
            >>> asyncio.run(refused())  # doctest: +SKIP
            Traceback (most recent call last):
            ...
            ConnectionRefusedError: ...
        """
        import aiohttp

        try:
            async with self._open().post(self.base_url + path, data=body, headers=headers, proxy=self.proxy) as reply:
                raw = await _read_capped(reply, cap)
                if not 200 <= reply.status < 300:
                    raise HTTPStatusError(reply.status, raw, reply.headers)
                return raw
        except aiohttp.ClientConnectorError as e:
            raise (e.os_error if isinstance(e.os_error, ConnectionError) else ConnectionError(str(e))) from e
        except aiohttp.ClientError as e:
            raise ConnectionError(f"{type(e).__name__}: {e}") from e

    async def aclose(self) -> None:
        """Close the kept-alive connections (the event loop's shutdown awaits this)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def abandon(self) -> None:
        """Let go of the connections of a loop that was closed without shutting this client down: nothing can be
        awaited there any more, so the session is marked closed and its connector closes what it still can, and
        neither prints "Unclosed client session" / "Unclosed connector" when collected.

        Examples:
            >>> poster = JsonPoster("http://127.0.0.1:9")
            >>> poster.abandon()  # nothing opened: nothing to do
        """
        session, self._session = self._session, None
        if session is not None and not session.closed:
            connector = session.connector
            session.detach()
            with contextlib.suppress(Exception):
                connector._close()  # sync; returns at once when the loop is closed (public close() is a coroutine)


def _env_proxy(base_url: str) -> str | None:
    """The proxy the environment names for ``base_url`` (``HTTP_PROXY`` / ``HTTPS_PROXY``, unless ``NO_PROXY`` covers
    its host), read once, as the OpenAI SDK's client honours them; None for none.

    Examples:
        >>> _env_proxy("http://127.0.0.1:8080/v1") is None or True
        True
    """
    parts = urllib.parse.urlsplit(base_url)
    bypass = getattr(urllib.request, "proxy_bypass_environment")  # noqa: B009 - not in typeshed
    if bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies_environment().get(parts.scheme) or None


class _LiteralFirst:
    """aiohttp's resolver that answers an IP address itself (``127.0.0.1``: no lookup, so no executor thread is
    started for it) and asks aiohttp's threaded resolver for a name (its results are cached by the connector)."""

    def __init__(self) -> None:
        import aiohttp

        self._names = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[dict[str, Any]]:
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return cast(list[dict[str, Any]], await self._names.resolve(host, port, family))
        kind = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        flags = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
        return [{"hostname": host, "host": host, "port": port, "family": kind, "proto": 0, "flags": flags}]

    async def close(self) -> None:
        await self._names.close()


async def _read_capped(reply: Any, cap: int) -> bytes:
    declared = reply.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise ReplyTooLargeError(declared)
    out = bytearray()
    async for chunk in reply.content.iter_chunked(65536):
        out += chunk
        if len(out) > cap:
            raise ReplyTooLargeError(declared)
    return bytes(out)
