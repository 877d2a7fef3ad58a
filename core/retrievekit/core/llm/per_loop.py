"""One async client per event loop, closed with its loop.

An async HTTP client (``openai.AsyncOpenAI`` over ``httpx``) belongs to the event loop it was first used on: used
again from a second ``asyncio.run``, or from a thread running a loop of its own, it fails with "Event loop is
closed", and left open when its loop ends it prints that error at garbage collection. :class:`PerLoop` keeps one
client per running loop, made on first use there, and closes it when ``asyncio.run`` shuts the loop down (an async
generator of the loop's, which ``loop.shutdown_asyncgens()`` finalises). A framework edge keeps its client's async
copies in one (``retrievekit.llama_index.LlamaIndexChatLLM``, ``retrievekit.langchain.LangChainChatLLM``).

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
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["PerLoop"]

T = TypeVar("T")


class PerLoop(Generic[T]):
    """``make()`` once per running event loop; ``aclose(obj)`` awaited when that loop shuts down (module docstring).

    Examples:
        >>> import asyncio
        >>> asyncio.run(PerLoop(list).get())
        []
    """

    def __init__(self, make: Callable[[], T], aclose: Callable[[T], Awaitable[None]] | None = None) -> None:
        self._make = make
        self._aclose = aclose
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[T, object]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    async def get(self) -> T:
        """The object of the running loop (made now when this loop has none)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._by_loop.get(loop)
        if held is not None:
            return held[0]
        obj = self._make()
        keeper = self._keeper(obj)
        with self._lock:  # stored before the first await: concurrent first uses on this loop share it
            held = self._by_loop.setdefault(loop, (obj, keeper))
        if held[1] is keeper:
            await keeper.asend(None)  # started: the loop finalises it at shutdown_asyncgens()
        return held[0]

    async def _keeper(self, obj: T) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._aclose is not None:
                await self._aclose(obj)
