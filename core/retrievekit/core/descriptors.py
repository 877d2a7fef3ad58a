"""Running out of file descriptors is a :class:`~retrievekit.core.errors.ResourceLimitError`, not a damaged file.

A process at its descriptor limit (``ulimit -n``) fails to open files in ways that look like damage: Python raises
``OSError(EMFILE)`` while a manifest is read, SQLite says "unable to open database file", Chroma's Rust core panics
with ``Os { code: 24 }`` or reports a failed compaction. Every place that would call a file corrupt or an index
damaged first calls :func:`check_descriptors`, which raises the typed error instead when either

1. the error, or an error it was raised from, says so (``errno`` EMFILE / ENFILE, "Too many open files",
   "os error 24"), or
2. the process is within :data:`FD_HEADROOM` (or an eighth of its limit) of the limit, or so far out of descriptors
   that it cannot even list its own (Chroma frees its descriptors as it fails, so the count is read after the fact
   and the margin covers what the failed call held).

Examples:
    >>> import errno
    >>> check_descriptors("reading manifest.json", OSError(errno.EMFILE, "Too many open files"))
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.ResourceLimitError: reading manifest.json failed because the process is out of file ...
    >>> check_descriptors("reading manifest.json", ValueError("bad JSON"))  # descriptors to spare: nothing to say
"""

from __future__ import annotations

import errno
import os

from retrievekit.core.errors import ResourceLimitError

__all__ = ["FD_HEADROOM", "check_descriptors", "resource_unlimited", "says_out_of_descriptors"]

FD_HEADROOM = 32
"""File descriptors an open needs to have free, at the least (an eighth of the limit when that is more): Chroma's
HNSW reader opens several files per segment, on several threads at once."""

_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})
_PHRASES = ("too many open files", "os error 24", "os error 23")  # EMFILE, ENFILE as Python, Rust and SQLite say them


def says_out_of_descriptors(error: BaseException) -> bool:
    """Whether ``error``, or an error in its ``__cause__`` / ``__context__`` chain, reports running out of file
    descriptors (errno EMFILE or ENFILE, or their text as Rust and SQLite write it).

    Examples:
        >>> import errno
        >>> says_out_of_descriptors(OSError(errno.EMFILE, "Too many open files"))
        True
        >>> says_out_of_descriptors(RuntimeError('Os { code: 24, message: "Too many open files" }'))  # Rust's panic
        True
        >>> says_out_of_descriptors(OSError(errno.ENOENT, "No such file or directory"))
        False
    """
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in _ERRNOS:
            return True
        if any(p in str(e).lower() for p in _PHRASES):
            return True
        e = e.__cause__ or e.__context__
    return False


def _descriptors() -> tuple[int, int] | None:
    """``(open file descriptors, soft limit)`` of this process; ``(limit, limit)`` when it has none left to list its
    own; None where that cannot be read (not Linux)."""
    try:
        import resource

        limit = int(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError as e:
        if e.errno in _ERRNOS:  # listing needs a descriptor of its own: none is left
            return limit, limit
        return None  # pragma: no cover - no /proc
    return used, limit


def check_descriptors(what: str, error: BaseException, *, by_count: bool = True) -> None:
    """Raise :class:`~retrievekit.core.errors.ResourceLimitError` (from ``error``) when ``error`` came from running out
    of file descriptors (see the module's docstring for how that is told); return otherwise.

    ``by_count=False`` trusts the error alone: Python's own file reads always say EMFILE, so a JSON or checksum error
    raised while the process happens to be near its limit is still called what it is.

    Examples:
        >>> check_descriptors("open", RuntimeError("x"))  # plenty of descriptors free: nothing to say
    """
    state = _descriptors()
    near = False
    if by_count and state is not None and state[1] != resource_unlimited():
        near = state[1] - state[0] < max(FD_HEADROOM, state[1] // 8)
    if not (near or says_out_of_descriptors(error)):
        return
    count = f"{state[0]} open, limit {state[1]}" if state is not None else "the limit was reached"
    raise ResourceLimitError(
        f"{what} failed because the process is out of file descriptors ({count}), not because the "
        "index is damaged: close the indexes you no longer use (index.close(), or open them in a with-block) or "
        f"raise the limit (ulimit -n); the error was: {type(error).__name__}: {str(error)[:200]}"
    ) from error


def resource_unlimited() -> int:
    """The value of an unlimited resource limit (``resource.RLIM_INFINITY``), or -1 where there is none.

    Examples:
        >>> isinstance(resource_unlimited(), int)
        True
    """
    try:
        import resource

        return int(resource.RLIM_INFINITY)
    except ImportError:  # pragma: no cover - not POSIX
        return -1
