"""The searches of a living index and its changes, in one process: a search reads one state of the parts, never one a
change (or a reload of the folder) is half-way through.

A :class:`LiveIndex <retrievekit.core.index.live.LiveIndex>` changes some parts in place (the dense part's Chroma
collection, the held objects, a tantivy BM25 part) and reopens them all when another process changed its folder
(the dense part's Chroma client is released before it is opened again). :class:`Readers` lets the two meet in order:
a search enters with :meth:`~Readers.reading` (or :meth:`~Readers.areading` on an event loop, which waits without
blocking it); a change or a reload with :meth:`~Readers.changing`, which waits for the searches already under way
and holds new ones back until it is done. Many searches read at once. Each wait is bounded: past ``wait_s`` seconds it
raises :class:`~retrievekit.core.errors.IndexLockedError` saying what it waited for, never a hang. A change does not
wait for itself: one thread's nested ``changing()`` enters at once, and its own searches read what it is making.

Examples:
    >>> readers = Readers()
    >>> with readers.reading():
    ...     readers.busy
    1
    >>> with readers.changing():
    ...     readers.busy
    -1
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from retrievekit.core.errors import IndexLockedError

__all__ = ["Readers"]

_POLL_S = 0.002
"""How often an awaited search looks again whether a change is done (its loop is free meanwhile)."""


class Readers:
    """Searches read together; a change (or a reload) waits for them and holds new ones back until it is done.

    Args:
        wait_s: seconds a search waits for a change, and a change for the searches under way, before
            :class:`~retrievekit.core.errors.IndexLockedError` (a callable: the index's current ``writer_wait``).

    Examples:
        >>> import threading
        >>> readers, seen = Readers(), []
        >>> with readers.changing():
        ...     t = threading.Thread(target=lambda: (readers.wait_to_read(), seen.append("read")))
        ...     t.start(); t.join(0.05); seen  # the search waits for the change
        []
        >>> t.join(); seen
        ['read']
    """

    def __init__(self, wait_s: float | Callable[[], float] = 60.0) -> None:
        self._cond = threading.Condition()
        self._reading = 0  # searches under way
        self._changer: int | None = None  # the thread that is changing, if any
        self._depth = 0  # its nested changing() entries
        self._wait_s = wait_s

    @property
    def busy(self) -> int:
        """Searches under way (``-1`` while a change holds the index).

        Examples:
            >>> Readers().busy
            0
        """
        return -1 if self._changer is not None else self._reading

    def _limit(self) -> float:
        return float(self._wait_s() if callable(self._wait_s) else self._wait_s)

    def wait_to_read(self) -> None:
        """Enter as a search (waiting for a change under way). Leave with :meth:`done_reading`.

        Examples:
            >>> r = Readers(); r.wait_to_read(); r.busy
            1
        """
        me = threading.get_ident()
        with self._cond:
            if self._changer == me:  # the change's own thread reads what it is making
                self._reading += 1
                return
            if not self._cond.wait_for(lambda: self._changer is None, timeout=self._limit()):
                raise IndexLockedError(
                    f"a search waited {self._limit():g} s for a change of this index to finish (writer_wait)"
                )
            self._reading += 1

    def done_reading(self) -> None:
        """Leave as a search.

        Examples:
            >>> r = Readers(); r.wait_to_read(); r.done_reading(); r.busy
            0
        """
        with self._cond:
            self._reading -= 1
            self._cond.notify_all()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A search's turn: it waits for a change under way, then reads with the other searches.

        Examples:
            >>> with Readers().reading():
            ...     pass
        """
        self.wait_to_read()
        try:
            yield
        finally:
            self.done_reading()

    @asynccontextmanager
    async def areading(self) -> AsyncIterator[None]:
        """:meth:`reading` on an event loop: the wait for a change is awaited in short sleeps (the loop stays free).

        Examples:
            >>> async def search(r):
            ...     async with r.areading():
            ...         return r.busy
            >>> asyncio.run(search(Readers()))
            1
        """
        deadline = time.monotonic() + self._limit()
        while True:
            with self._cond:
                if self._changer is None:
                    self._reading += 1
                    break
            if time.monotonic() >= deadline:
                raise IndexLockedError(
                    f"a search waited {self._limit():g} s for a change of this index to finish (writer_wait)"
                )
            await asyncio.sleep(_POLL_S)
        try:
            yield
        finally:
            self.done_reading()

    @contextmanager
    def changing(self) -> Iterator[None]:
        """A change's (or a reload's) turn: no new search enters, the ones under way finish, then it runs alone.

        Examples:
            >>> r = Readers()
            >>> with r.changing(), r.changing():  # nested in one thread: enters at once
            ...     r.busy
            -1
        """
        me = threading.get_ident()
        with self._cond:
            if self._changer == me:
                self._depth += 1
            else:
                limit = self._limit()
                if not self._cond.wait_for(lambda: self._changer is None, timeout=limit):
                    raise IndexLockedError(f"a change waited {limit:g} s for another change of this index")
                self._changer, self._depth = me, 1
                if not self._cond.wait_for(lambda: self._reading == 0, timeout=limit):
                    self._changer, self._depth = None, 0
                    self._cond.notify_all()
                    raise IndexLockedError(
                        f"a change waited {limit:g} s for {self._reading} search(es) of this index to finish "
                        "(writer_wait); nothing was changed"
                    )
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if self._depth == 0:
                    self._changer = None
                    self._cond.notify_all()
