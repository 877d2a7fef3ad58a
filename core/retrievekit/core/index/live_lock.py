"""One writer at a time on a living index, across threads and processes: :class:`WriterLock`.

Every change of a :class:`~retrievekit.core.index.live.LiveIndex` (``upsert``, ``delete``, ``compact``; the
integrations' add, update and merge go through them) holds the index's writer lock for that change only. The
threads of one process take turns on a re-entrant lock; for a folder index, processes take turns on an exclusive
``flock`` of ``<folder>/.writer-lock`` (:data:`LOCK_NAME`). Readers take neither. A writer that cannot have the lock
within ``wait_s`` seconds (:data:`WRITER_WAIT_S` by default) raises
:class:`~retrievekit.core.errors.IndexLockedError` naming the folder and how long it waited, having changed nothing.
The lock is the kernel's: a writer that is killed releases it at once, and the next one proceeds.

The lock file also says whether the folder moved on without this index. Each holder writes a fresh stamp in it,
``"<token> changing"`` when it takes the lock and ``"<token> done"`` once its change returned (a change that raised
leaves ``changing``). A writer that finds another stamp than the last one it left or read (another process changed
the folder, sealed a part when it closed, or was killed or failed mid-change) first brings its index to the
folder's committed state (``on_stale``), so no process writes over a change it has not seen: two processes adding
to one folder lose nothing.

Examples:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> reloads = []
    >>> lock = WriterLock(folder, on_stale=lambda: reloads.append(1))
    >>> with lock:
    ...     with lock:  # re-entrant: one flock for the outermost hold
    ...         read_stamp(folder).endswith(" changing")
    True
    >>> read_stamp(folder) == lock.seen, reloads  # its own change: nothing to catch up on
    (True, [])
    >>> other = WriterLock(folder, on_stale=lambda: reloads.append("other"))  # reads the folder now: up to date
    >>> with other:
    ...     pass
    >>> with lock:  # another writer changed the folder since: caught up first
    ...     pass
    >>> reloads
    [1]
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from retrievekit.core.errors import IndexLockedError, InvalidInputError
from retrievekit.core.paths import ensure_folder

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: threads only
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "WRITER_WAIT_S", "WriterLock", "read_stamp"]

LOCK_NAME = ".writer-lock"
"""The lock file inside a living index's folder (kept: never removed, so every process locks the same file)."""

WRITER_WAIT_S = 60.0
"""Seconds a change waits, by default, for another process's change of the same folder."""

_POLL_S = 0.05


def read_stamp(folder: str | os.PathLike[str]) -> str:
    """The stamp the last writer of ``folder`` left in its lock file (``""`` when none has written one).

    Examples:
        >>> import tempfile
        >>> read_stamp(tempfile.mkdtemp())
        ''
    """
    try:
        return (Path(folder) / LOCK_NAME).read_bytes().decode("utf-8", "replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        return ""


class WriterLock:
    """The writer lock of one living index (see the module docstring): ``with lock:`` holds it for a change,
    re-entrantly; :meth:`holding` with ``catch_up=False`` holds it without catching up (a close that seals a part).

    Args:
        folder: the index's folder (None: in memory, threads only).
        on_stale: called under the lock, before the change, when the folder moved on since :attr:`seen`.
        wait_s: seconds to wait for another process before :class:`IndexLockedError`.

    Attributes:
        seen: the stamp of the folder's state this index holds (read when the index was opened, then its own).

    Examples:
        >>> lock = WriterLock(None, on_stale=lambda: None)
        >>> with lock:
        ...     lock.held
        True
    """

    def __init__(self, folder: Path | None, *, on_stale: Callable[[], None], wait_s: float = WRITER_WAIT_S) -> None:
        self.folder = folder
        self.wait_s = wait_s
        self.thread = threading.RLock()
        """The in-process part alone (a read that binds a lazily loaded part takes only this)."""
        self.seen = read_stamp(folder) if folder is not None else ""
        self._on_stale = on_stale
        self._depth = 0
        self._fd: int | None = None
        self._token = ""

    @property
    def wait_s(self) -> float:
        """Seconds to wait for another process before :class:`IndexLockedError` (a number >= 0).

        Examples:
            >>> WriterLock(None, on_stale=lambda: None, wait_s=-1)
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: a writer lock's wait must be a number of seconds >= 0, not -1
        """
        return self._wait_s

    @wait_s.setter
    def wait_s(self, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
            raise InvalidInputError(f"a writer lock's wait must be a number of seconds >= 0, not {seconds!r}")
        self._wait_s = float(seconds)

    @property
    def held(self) -> bool:
        """Whether this process holds the lock now (from any of its threads)."""
        return self._depth > 0

    def __enter__(self) -> WriterLock:
        self._enter(catch_up=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._exit(failed=kind is not None)

    @contextmanager
    def holding(self, *, catch_up: bool = True) -> Iterator[None]:
        """Hold the lock for the ``with`` block; ``catch_up=False``: without calling ``on_stale`` first.

        Examples:
            >>> import tempfile, pathlib
            >>> lock = WriterLock(pathlib.Path(tempfile.mkdtemp()), on_stale=lambda: 1 / 0)
            >>> lock.seen = "another state"
            >>> with lock.holding(catch_up=False):
            ...     lock.held
            True
        """
        self._enter(catch_up=catch_up)
        failed = True
        try:
            yield
            failed = False
        finally:
            self._exit(failed=failed)

    def _enter(self, *, catch_up: bool) -> None:
        self.thread.acquire()
        self._depth += 1
        try:
            if self._depth == 1 and self.folder is not None and fcntl is not None:
                self._take(catch_up)
        except BaseException:
            self._depth -= 1
            self.thread.release()
            raise

    def _take(self, catch_up: bool) -> None:
        """Lock the folder's lock file (waiting at most ``wait_s``), stamp it as changing, catch up if stale (held
        already: a hold inside ``on_stale`` takes no second flock)."""
        assert self.folder is not None
        fd = _acquire(self.folder, self.wait_s)
        try:
            before = _read(fd)
            self._fd, self._token = fd, uuid.uuid4().hex
            _write(fd, f"{self._token} changing")  # a holder killed from here on leaves it so: the next one reloads
            if catch_up and before != self.seen:
                self._on_stale()
        except BaseException:
            self._fd = None
            _release(fd)
            raise

    def _exit(self, *, failed: bool) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                try:
                    # a change that raised leaves "changing": other writers reload the folder; this index keeps
                    # the state its change left it in (a method's all-or-nothing change has put it back)
                    self.seen = f"{self._token} {'changing' if failed else 'done'}"
                    if not failed:
                        _write(fd, self.seen)
                finally:
                    _release(fd)
        finally:
            self.thread.release()


def _acquire(folder: Path, wait_s: float) -> int:
    """The locked descriptor of ``folder``'s lock file; :class:`IndexLockedError` after ``wait_s`` seconds."""
    ensure_folder(folder)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    start = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            waited = time.monotonic() - start
            if waited >= wait_s:
                os.close(fd)
                raise IndexLockedError(
                    f"{folder}: another writer (another process, or another LiveIndex over this folder) held its "
                    f"writer lock ({LOCK_NAME}) for the {waited:.1f} s this change waited (at most {wait_s:g} s); "
                    "nothing was changed; retry when that writer is done"
                ) from None
            time.sleep(min(_POLL_S, max(wait_s - waited, 0.0)))
        except BaseException:
            os.close(fd)
            raise


def _read(fd: int) -> str:
    return os.pread(fd, 256, 0).decode("utf-8", "replace").strip()


def _write(fd: int, stamp: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, stamp.encode("utf-8"), 0)


def _release(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
