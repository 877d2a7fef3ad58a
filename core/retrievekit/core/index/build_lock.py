"""One builder per cached folder: processes that would build the same folder at once take turns.

Sharded benchmark runs (``--shard K/N``, one process per core) start together over the same corpus. Without a lock
each would build the same cached index or LATTICE tree side by side (minutes to hours of work each, all but one
thrown away by the last rename). :func:`build_lock` holds an exclusive lock on a hidden sibling file of the folder
while one process loads or builds it; the others wait, say so on stderr, then find the folder built and load it. The
lock is the kernel's (``flock``), so a builder that is killed releases it at once. The lock file is removed when
its holder leaves, so a finished build leaves nothing beside the folder (a killed one leaves an empty file, which the
next holder removes).

Examples:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "bm25-abc"
    >>> with build_lock(d):
    ...     d.mkdir()
    >>> d.is_dir()
    True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from retrievekit.core.paths import ensure_folder

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["build_lock", "lock_path"]


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of the folder ``path``: ``.<name>.build-lock`` beside it.

    Examples:
        >>> lock_path("runs/cache/bm25-abc").name
        '.bm25-abc.build-lock'
    """
    path = Path(path)
    return path.with_name(f".{path.name}.build-lock")


@contextmanager
def build_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the build lock of the folder ``path`` (created with its parent if missing) for the ``with`` block.

    A second process asking for the same lock waits until the first leaves its block (or dies), after one line on
    stderr naming the folder. Check again for the folder inside the block: the process that waited usually finds it
    built. Without ``fcntl`` (not POSIX) there is no lock.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "tree"
        >>> with build_lock(d):
        ...     lock_path(d).exists()
        True
        >>> lock_path(d).exists()
        False
    """
    if fcntl is None:  # pragma: no cover - not POSIX: no lock
        yield
        return
    lock = lock_path(path)
    ensure_folder(lock.parent)
    handle = _acquire(lock, str(path))
    try:
        yield
    finally:
        with suppress(FileNotFoundError):  # removed while held: a later process makes a new one
            os.unlink(lock)
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


def _acquire(lock: Path, what: str) -> BinaryIO:
    """Open and lock ``lock``; retry when its holder removed it on leaving (the lock this process got is then
    on a file no other process can see any more)."""
    said = False
    while True:
        handle = open(lock, "a+b")  # noqa: SIM115 - kept open while the lock is held
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not said:
                print(f"retrievekit: another process is building {what}; waiting for it", file=sys.stderr, flush=True)
                said = True
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            if os.fstat(handle.fileno()).st_ino == os.stat(lock).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()
