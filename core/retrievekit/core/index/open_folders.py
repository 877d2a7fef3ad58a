"""Which folder an index handle reads, and which handles this process holds on a folder.

A handle opened on an index folder keeps reading the files it opened; a rebuild swaps a new folder in under it
(:func:`~retrievekit.core.index.store.atomic_folder`). So a handle records the folder's identity when it opens
(:func:`folder_identity`, the folder's device and inode, which the swap changes) and seals or changes only that
folder; and a build refuses a folder that a handle of this process has open (:func:`open_handles`).

Examples:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> folder_identity(d) == folder_identity(d), folder_identity(d / "none")
    (True, None)
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

__all__ = ["folder_identity", "open_handles"]

_OPEN: dict[str, weakref.WeakSet[Any]] = {}
_LOCK = threading.Lock()


def open_handles(path: str | os.PathLike[str]) -> weakref.WeakSet[Any]:
    """The live handles of this process on the folder ``path`` (resolved: a symlink is the folder it points to);
    add a handle to it when it opens. Handles that are garbage-collected leave it by themselves.

    Examples:
        >>> class Handle: pass
        >>> h = Handle(); open_handles("/tmp/some-index").add(h); h in open_handles("/tmp/some-index")
        True
    """
    with _LOCK:
        return _OPEN.setdefault(str(Path(path).resolve()), weakref.WeakSet())


def folder_identity(path: str | os.PathLike[str] | None) -> tuple[int, int] | None:
    """``(device, inode)`` of a folder, which a rebuild (a new folder swapped in) changes; None for none.

    Examples:
        >>> folder_identity(None) is None
        True
    """
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
