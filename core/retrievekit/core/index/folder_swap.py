"""The last step of an atomic folder write, and what its failures leave: the swap of a finished temp folder into
place, a disk-full or permission error said as such, and the restore of a swap a kill interrupted.

* :func:`swap_folder` -- ``path`` to ``.<name>.old-<pid>``, the temp folder to ``path``, the old copy removed; a
  failed second rename puts the old copy back, so ``path`` always holds one complete folder.
* :func:`restore_interrupted_swap` -- a process killed between the two renames left nothing at ``path`` and the old
  copy in ``.<name>.old-<pid>``: the next write or open renames it back. A swap holds the kernel's lock on
  ``.<name>.swap-lock`` across its renames (released when its process dies), so the restore asks the lock, not
  whether the pid is alive: a pid reused by another process, or the same pid after a reboot, changes nothing.
* :func:`storage_error` -- an ``OSError`` of a full disk (``ENOSPC``, ``EDQUOT``) or a denied write (``EACCES``,
  ``EPERM``, ``EROFS``) as a :class:`~retrievekit.core.errors.StorageWriteError` naming the folder.

Examples:
    >>> import errno
    >>> str(storage_error("/data/idx", OSError(errno.ENOSPC, "No space left on device")))
    'disk full: /data/idx cannot be written (No space left on device); what was there before is intact'
    >>> storage_error("/data/idx", OSError(errno.ENOENT, "gone")) is None
    True
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from retrievekit.core.errors import StorageWriteError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the pid decides, as before the lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["pid_alive", "restore_interrupted_swap", "storage_error", "swap_folder"]

_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_DENIED = {errno.EACCES, errno.EPERM, errno.EROFS}
_OLD = re.compile(r"old-(\d+)")


def storage_error(path: str | os.PathLike[str], exc: BaseException) -> StorageWriteError | None:
    """``exc`` as a :class:`StorageWriteError` naming ``path`` when it is a full disk or a denied write (an errno,
    or SQLite's "attempt to write a readonly database"), else None.

    Examples:
        >>> import errno
        >>> storage_error("/ro/idx", PermissionError(errno.EACCES, "Permission denied")).errno == errno.EACCES
        True
    """
    if isinstance(exc, StorageWriteError):  # said deeper down: name this folder too when it does not
        return (
            exc
            if str(path) in exc.message
            else StorageWriteError(exc.errno or errno.EIO, f"{exc.message} (writing {path})")
        )
    if "readonly database" in str(exc) and "1032" not in str(exc):  # SQLite's words for a folder it may not write
        # (code 1032, SQLITE_READONLY_DBMOVED, is a database moved away while open: not a permission)
        return StorageWriteError(
            errno.EACCES, f"permission denied: {path} cannot be written ({type(exc).__name__}: {str(exc)[:200]})"
        )
    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    if exc.errno in _DISK_FULL:
        what = "disk full"
    elif exc.errno in _DENIED:
        what = "permission denied"
    else:
        return None
    reason = exc.strerror or str(exc)
    return StorageWriteError(exc.errno, f"{what}: {path} cannot be written ({reason}); what was there before is intact")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (True when that cannot be told).

    Examples:
        >>> pid_alive(os.getpid())
        True
    """
    if os.name == "nt":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def restore_interrupted_swap(path: str | os.PathLike[str]) -> bool:
    """Rename the old copy a killed swap left (``.<name>.old-<pid>``) back to ``path`` when nothing is at ``path``
    and no swap of ``path`` is running (its lock is free); returns whether it did. The newest such copy wins.

    Examples:
        >>> import tempfile, pathlib
        >>> parent = pathlib.Path(tempfile.mkdtemp())
        >>> (parent / f".idx.old-{os.getpid()}").mkdir()  # even this live process's pid: no swap holds the lock
        >>> restore_interrupted_swap(parent / "idx"), sorted(p.name for p in parent.iterdir())
        (True, ['idx'])
    """
    path = Path(path)
    if path.exists() or path.is_symlink() or not _old_copies(path):
        return False
    with _swap_lock(path, wait=False) as free:
        olds = _old_copies(path) if free and not (path.exists() or path.is_symlink()) else []
        if not olds:
            return False
        try:
            newest = max(olds, key=lambda e: (e.stat().st_mtime_ns, e.name))
            os.replace(newest, path)
        except OSError:
            return False
    return True


def _old_copies(path: Path) -> list[Path]:
    """The old copies swaps of ``path`` moved aside (``.<name>.old-<pid>`` folders); without a lock (not POSIX),
    only those whose process is gone."""
    prefix = f".{path.name}."
    try:
        return [
            e
            for e in path.parent.iterdir()
            if e.name.startswith(prefix)
            and (m := _OLD.fullmatch(e.name[len(prefix) :])) is not None
            and (fcntl is not None or not pid_alive(int(m.group(1))))
            and e.is_dir()
            and not e.is_symlink()
        ]
    except OSError:
        return []


@contextmanager
def _swap_lock(path: Path, *, wait: bool) -> Iterator[bool]:
    """Hold the kernel's lock on ``.<name>.swap-lock`` beside ``path``; yields whether it is held. ``wait``: block
    until it is free (a swap; a lock file that cannot be made raises); else yield False at once when another
    process holds it or it cannot be made (a restore). The file is removed on release, as :mod:`build_lock` does."""
    if fcntl is None:  # pragma: no cover - not POSIX: no lock
        yield True
        return
    lock = path.with_name(f".{path.name}.swap-lock")
    while True:
        try:
            handle = open(lock, "a+b")  # noqa: SIM115 - kept open while the lock is held
        except OSError:
            if wait:
                raise
            yield False
            return
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.close()
            yield False
            return
        with suppress(FileNotFoundError):
            if os.fstat(handle.fileno()).st_ino == os.stat(lock).st_ino:
                break
        handle.close()  # its holder removed it on leaving: lock the new one
    try:
        yield True
    finally:
        with suppress(FileNotFoundError):
            os.unlink(lock)
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


def swap_folder(tmp: Path, path: Path) -> None:
    """Put the finished ``tmp`` at ``path``: the old folder aside, ``tmp`` in, the old one removed. When the second
    rename fails the old folder goes back, so ``path`` holds the old or the new folder, whole, whatever fails.

    Examples:
        >>> import tempfile, pathlib
        >>> parent = pathlib.Path(tempfile.mkdtemp())
        >>> (parent / "new").mkdir(); (parent / "idx").mkdir()
        >>> swap_folder(parent / "new", parent / "idx"); sorted(p.name for p in parent.iterdir())
        ['idx']
    """
    old: Path | None = None
    with _swap_lock(path, wait=True):  # a reader meeting nothing at ``path`` meanwhile leaves the old copy alone
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        try:
            os.replace(tmp, path)
        except BaseException:
            if old is not None and not path.exists():
                os.replace(old, path)
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
