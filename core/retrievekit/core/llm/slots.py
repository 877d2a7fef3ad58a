"""One budget of requests in flight per model, shared by every thread and every event loop that uses it.

A served model's ``max_concurrency`` is the server's slots: it must hold for all its callers at once, whether they
call the sync API from threads or await the async one from any number of event loops (successive ``asyncio.run``,
threads each running a loop of their own). A ``threading.Semaphore`` blocks a loop; an ``asyncio.Semaphore`` belongs
to one loop. :class:`SharedSlots` is both: ``with slots:`` waits in a thread, ``async with slots:`` waits as a future
of the running loop, and a freed slot goes to the longest waiter, whichever kind it is (first come, first served).

A cancelled async waiter leaves the queue (a slot handed to it just then is passed on). Called on a thread that is
running an event loop (sync code inside a coroutine), ``with slots:`` does not wait: waiting there could deadlock
the loop whose tasks hold the slots, so it takes a slot over the budget, and later callers wait until the count is
back under it.

Examples:
    >>> import asyncio
    >>> slots = SharedSlots(1)
    >>> async def one(i, seen):
    ...     async with slots:
    ...         seen.append(slots.free)
    ...         await asyncio.sleep(0)
    >>> async def main():
    ...     seen = []
    ...     await asyncio.gather(*(one(i, seen) for i in range(3)))
    ...     return seen
    >>> asyncio.run(main()), slots.free
    ([0, 0, 0], 1)
    >>> with slots:
    ...     slots.free
    0
"""

from __future__ import annotations

import asyncio
import collections
import threading
from types import TracebackType

__all__ = ["SharedSlots"]


class _Waiter:
    """One caller waiting for a slot: a thread (``event``) or a task of ``loop`` (``future``)."""

    __slots__ = ("event", "future", "granted", "loop")

    def __init__(
        self,
        event: threading.Event | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        future: asyncio.Future[None] | None = None,
    ) -> None:
        self.event, self.loop, self.future, self.granted = event, loop, future, False


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class SharedSlots:
    """``n`` slots shared by threads (``with``) and event loops (``async with``): the module docstring.

    Examples:
        >>> slots = SharedSlots(2)
        >>> with slots:
        ...     with slots:
        ...         slots.free
        0
        >>> SharedSlots(0)
        Traceback (most recent call last):
        ...
        ValueError: SharedSlots needs n >= 1, got 0
    """

    def __init__(self, n: int) -> None:
        if int(n) < 1:
            raise ValueError(f"SharedSlots needs n >= 1, got {n}")
        self.size = int(n)
        self._free = int(n)
        self._waiters: collections.deque[_Waiter] = collections.deque()
        self._lock = threading.Lock()

    @property
    def free(self) -> int:
        """Slots free now (negative while callers on a loop's own thread run over the budget)."""
        return self._free

    def _take_or_queue(self, waiter: _Waiter) -> bool:
        """Take a free slot (True), or join the queue (False); under the lock."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        self._waiters.append(waiter)
        return False

    def acquire(self) -> None:
        """Take a slot, waiting in this thread; on a thread running an event loop, take it at once (module
        docstring)."""
        on_loop = _running_loop() is not None
        waiter = _Waiter(event=threading.Event())
        with self._lock:
            if on_loop:
                self._free -= 1
                return
            if self._take_or_queue(waiter):
                return
        waiter.event.wait()  # type: ignore[union-attr]

    async def aacquire(self) -> None:
        """Take a slot, waiting as a future of the running loop; a cancelled wait takes none."""
        loop = asyncio.get_running_loop()
        waiter = _Waiter(loop=loop, future=loop.create_future())
        with self._lock:
            if self._take_or_queue(waiter):
                return
        try:
            await waiter.future  # type: ignore[misc]
        except BaseException:
            with self._lock:
                if not waiter.granted:
                    self._waiters.remove(waiter)
                    raise
            self.release()  # handed to us as we were cancelled: pass it on
            raise

    def release(self) -> None:
        """Free a slot: it goes to the longest waiter (a thread or a task of a loop still open), else back."""
        with self._lock:
            waiter = None
            while self._waiters:
                candidate = self._waiters.popleft()
                if candidate.loop is None or not candidate.loop.is_closed():
                    waiter = candidate
                    waiter.granted = True
                    break
            if waiter is None:
                self._free += 1
                return
        if waiter.event is not None:
            waiter.event.set()
            return
        if _running_loop() is waiter.loop:  # freed on the waiter's own loop: woken directly, no wake-up write
            _wake(waiter.future)  # type: ignore[arg-type]
            return
        try:
            waiter.loop.call_soon_threadsafe(_wake, waiter.future)  # type: ignore[union-attr, arg-type]
        except RuntimeError:  # its loop closed meanwhile
            self.release()

    def __enter__(self) -> SharedSlots:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    async def __aenter__(self) -> SharedSlots:
        await self.aacquire()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
