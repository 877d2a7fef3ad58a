"""Turns on the event loop: many searches in flight share it in slices, so it stays on time.

Awaited, a search's own code between its model calls (calibration, anchor draws, prompts) and each call's request
and reply handling run on the caller's event loop. One such piece takes a millisecond or two; two hundred queries whose
replies arrive together would hold the loop for hundreds of milliseconds in one pass, and every other task on it
(a web server's timers, its other requests) would wait that long. Running that code on worker threads instead does
not help in CPython: the threads and the loop take turns on one interpreter lock, and the loop, which gives the lock
away at every socket call, waits up to the interpreter's switch interval (5 ms) each time to get it back.

So the code stays on the loop and takes turns: :func:`take_turn` is awaited before each piece (a search step's
resume between its batches of model calls: :func:`~retrievekit.core.llm.drivers.adrive`). The pieces of one pass of
the loop run until together they have held it :data:`TURN_S`; the others wait, in the order they came, and run first
in a later pass, after the loop has served its sockets and timers (each piece that runs wakes two waiting ones for
the next pass, so a pass costs work in proportion to the pieces it runs, not to those waiting). A piece that starts
always finishes (it is not interrupted), so the pieces of a pass hold the loop at most :data:`TURN_S` plus one piece;
what a piece starts (its requests, their replies' reading) is in proportion to it. No thread is used, and an idle
loop pays a clock read per piece.

Examples:
    >>> import asyncio
    >>> async def main():
    ...     await take_turn()
    ...     return "ran"
    >>> asyncio.run(main())
    'ran'
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque

__all__ = ["TURN_S", "take_turn"]

TURN_S = 0.005
"""How long the pieces that :func:`take_turn` admits may hold the loop in one pass (ours: 5 ms; a task waking every
20 ms then stays within a few passes of its time)."""

_clock = time.perf_counter


class _Turns:
    """One loop's turns: when this pass's slice began, the pieces waiting (in order), and those woken for the next."""

    __slots__ = ("retry", "start", "waiting", "woken")

    def __init__(self) -> None:
        self.start: float | None = None  # None: no piece has run in this pass yet
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.retry: deque[asyncio.Future[None]] = deque()  # woken but over that pass's slice: first in line
        self.woken = 0  # woken for the next pass, not run yet: newcomers queue behind them

    def admit(self, loop: asyncio.AbstractEventLoop) -> bool:
        """True when a piece may run now (this pass's slice has time left), starting the slice if none has."""
        now = _clock()
        if self.start is None:
            self.start = now
            loop.call_soon(self.next_pass)  # runs first in the next pass: a new slice
            return True
        return now - self.start < TURN_S

    def wake(self, n: int) -> None:
        """Wake the first ``n`` waiting pieces for the next pass (a cancelled one's ticket is dropped)."""
        for line in (self.retry, self.waiting):
            while line and n > 0:
                ticket = line.popleft()
                if not ticket.done():
                    ticket.set_result(None)
                    self.woken += 1
                    n -= 1

    def next_pass(self) -> None:
        """The loop's next pass: the slice is free again; if nobody was woken for it, the first in line is."""
        self.start = None
        if not self.woken:
            self.wake(1)


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turns] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _turns(loop: asyncio.AbstractEventLoop) -> _Turns:
    got = _by_loop.get(loop)
    if got is None:
        with _lock:
            got = _by_loop.setdefault(loop, _Turns())
    return got


async def take_turn() -> None:
    """Return when the piece of code that follows may run on this loop now (module docstring): at once when this
    pass's slice has time left and nobody waits, else in a later pass, in arrival order.

    Examples:
        >>> import asyncio
        >>> async def pieces():
        ...     order = []
        ...     async def piece(i):
        ...         await take_turn()
        ...         order.append(i)
        ...     await asyncio.gather(*(piece(i) for i in range(5)))
        ...     return order
        >>> asyncio.run(pieces())
        [0, 1, 2, 3, 4]
    """
    loop = asyncio.get_running_loop()
    turns = _turns(loop)
    if not turns.waiting and not turns.retry and not turns.woken and turns.admit(loop):
        return
    line = turns.waiting
    while True:
        ticket: asyncio.Future[None] = loop.create_future()
        line.append(ticket)
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():  # woken, then cancelled: its successors are woken
                turns.woken -= 1
                turns.wake(2)
            raise
        turns.woken -= 1
        if turns.admit(loop):
            turns.wake(2)  # two successors for the next pass: as many run as its slice holds, the rest wait again
            return
        line = turns.retry  # over this pass's slice: first in line for the next
