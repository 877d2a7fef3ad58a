"""Folders retrievekit writes to (``work_dir``, ``tree_dir``, index folders): checked first, created with typed errors.

A folder asked for under a regular file (``work_dir="notes.txt/cache"``) used to surface as a raw
``NotADirectoryError`` from deep inside an index build, after the expensive part. :func:`check_folder_path` refuses
such a path up front (nothing is created), and :func:`ensure_folder` creates a folder, turning the operating system's
error into an :class:`~retrievekit.core.errors.InvalidPathError` that names the path and what it was for.

Examples:
    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> ensure_folder(base / "a" / "b").is_dir()
    True
    >>> _ = (base / "notes.txt").write_text("x")
    >>> check_folder_path(base / "notes.txt" / "sub", "work_dir")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidPathError: work_dir .../notes.txt/sub cannot be a folder: .../notes.txt is a file, not a folder
"""

from __future__ import annotations

import os
from pathlib import Path

from retrievekit.core.errors import InvalidPathError

__all__ = ["check_folder_path", "ensure_folder"]


def check_folder_path(path: str | os.PathLike[str], what: str = "folder") -> Path:
    """Check that ``path`` is, or can be created as, a folder; create nothing.

    The path itself and its nearest existing ancestor must be folders. ``what`` names the argument in the message
    (``"work_dir"``, ``"tree_dir"``).

    Raises:
        InvalidPathError: ``path`` is a regular file, or lies under one.

    Examples:
        >>> import tempfile
        >>> check_folder_path(tempfile.mkdtemp() + "/not/yet/there").name
        'there'
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InvalidPathError(f"{what} {p} is a file, not a folder")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InvalidPathError(f"{what} {p} cannot be a folder: {parent} is a file, not a folder")
            break
    return p


def ensure_folder(path: str | os.PathLike[str], what: str = "folder") -> Path:
    """Create ``path`` (and its parents) as a folder if needed and return it.

    Raises:
        InvalidPathError: ``path`` is a file or lies under one, or the operating system refuses to create it
            (no permission, read-only file system); the message names the path and the reason.

    Examples:
        >>> import tempfile
        >>> ensure_folder(tempfile.mkdtemp() + "/x", "work_dir").is_dir()
        True
    """
    p = check_folder_path(path, what)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidPathError(f"{what} {p} cannot be created: {e.strerror or e}") from e
    return p
