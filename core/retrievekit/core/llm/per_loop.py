"""One async client per event loop, closed with its loop.

An async HTTP client (``openai.AsyncOpenAI`` over ``httpx``) belongs to the event loop it was first used on: used
again from a second ``asyncio.run``, or from a thread running a loop of its own, it fails with "Event loop is
closed", and left open when its loop ends it prints that error at garbage collection. :class:`PerLoop` keeps one
client per running loop, made on first use there, and closes it when ``asyncio.run`` shuts the loop down (an async
generator of the loop's, which ``loop.shutdown_asyncgens()`` finalises). A framework edge keeps its client's async
copies in one (``retrievekit.llama_index.LlamaIndexChatLLM``, ``retrievekit.langchain.LangChainChatLLM``).

``shards`` clients are kept per loop and handed out in turn: an ``httpx`` connection pool assigns its queued requests
to its connections in time that grows with both (every assignment scans them all), so hundreds of requests in flight
through one pool spend more CPU queueing than sending; :data:`REQUESTS_PER_CLIENT` in flight per client keeps that
small (:func:`shards_for`).

Examples:
    >>> import asyncio
    >>> closed = []
    >>> async def close(client):
    ...     closed.append(client)
    >>> clients = PerLoop(lambda: object(), close)
    >>> async def twice():
    ...     return (await clients.get()) is (await clients.get())
    >>> asyncio.run(twice()), len(closed)
    (True, 1)
    >>> asyncio.run(twice()), len(closed)  # a new loop, a new client, closed with it
    (True, 2)
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["REQUESTS_PER_CLIENT", "PerLoop", "outlived_its_loop", "shards_for"]

T = TypeVar("T")

REQUESTS_PER_CLIENT = 16
"""Requests in flight through one async client (ours: 16; see the module docstring)."""


def shards_for(max_concurrency: int) -> int:
    """How many clients a model with ``max_concurrency`` slots keeps per loop.

    Examples:
        >>> shards_for(4), shards_for(16), shards_for(256)
        (1, 1, 16)
    """
    return max(1, math.ceil(int(max_concurrency) / REQUESTS_PER_CLIENT))


class PerLoop(Generic[T]):
    """``make()`` once per running event loop; ``aclose(obj)`` awaited when that loop shuts down (module docstring).
    A loop closed by hand, without that shutdown, is forgotten at the first :meth:`get` on a new loop (the closed
    one can ask no more), each of its objects handed to ``abandon(obj)`` (sync: its loop can run nothing any more).

    Examples:
        >>> import asyncio
        >>> asyncio.run(PerLoop(list).get())
        []
    """

    def __init__(
        self,
        make: Callable[[], T],
        aclose: Callable[[T], Awaitable[None]] | None = None,
        *,
        shards: int = 1,
        abandon: Callable[[T], None] | None = None,
    ) -> None:
        self._make = make
        self._aclose = aclose
        self._abandon = abandon
        self._shards = max(1, int(shards))
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Held[T]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def get(self) -> T:
        """An object of the running loop (made now when this loop has none), the loop's ``shards`` in turn."""
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._by_loop.get(loop)
        if held is None:  # a loop's first use: the only time the others are looked at (not once per request)
            self._forget_closed_loops()
            objs = [self._make() for _ in range(self._shards)]
            mine = _Held(objs, self._keeper(objs))
            with self._lock:  # stored before the first await: concurrent first uses on this loop share it
                held = self._by_loop.setdefault(loop, mine)
            if held is mine:
                await mine.keeper.asend(None)  # started: the loop finalises it at shutdown_asyncgens()
        return held.objs[next(held.turn) % len(held.objs)]

    def _forget_closed_loops(self) -> None:
        """Loops closed by hand, their objects never closed: dropped quietly, each handed to ``abandon``, no await."""
        with self._lock:
            gone = [self._by_loop.pop(old) for old in list(self._by_loop) if old.is_closed()]
        for dropped in gone:
            for obj in dropped.objs:
                if self._abandon is not None:
                    self._abandon(obj)

    async def _keeper(self, objs: list[T]) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._aclose is not None:
                for obj in objs:
                    await self._aclose(obj)


class _Held(Generic[T]):
    """A loop's objects, the generator that closes them with the loop, and whose turn it is."""

    def __init__(self, objs: list[T], keeper: AsyncGenerator[None, None]) -> None:
        self.objs, self.keeper, self.turn = objs, keeper, itertools.count()


def outlived_its_loop() -> bool:
    """Whether the running coroutine is being closed after its event loop was (a loop closed by hand with requests
    in flight, the coroutine collected later): its client's clean-up fails then ("Event loop is closed", "no running
    event loop") and nothing is left to tell, so an awaited request ends quietly instead of raising into
    ``sys.unraisablehook``.

    Examples:
        >>> outlived_its_loop()  # no loop runs here
        True
        >>> import asyncio
        >>> async def inside():
        ...     return outlived_its_loop()
        >>> asyncio.run(inside())
        False
    """
    try:
        return asyncio.get_running_loop().is_closed()
    except RuntimeError:
        return True
