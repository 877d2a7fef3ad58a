"""An open file descriptor that closes itself: :class:`FileHandle`, shared by the arrays and views that read one
file (:class:`~retrievekit.core.index.pread_array.PreadArray`, :class:`~retrievekit.core.index.row_file.RowFile`).

Examples:
    >>> import pathlib, tempfile
    >>> h = FileHandle(pathlib.Path(tempfile.mkdtemp()) / "f", os.O_RDWR | os.O_CREAT)
    >>> h.fd >= 0, h.close(), h.fd
    (True, None, -1)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["FileHandle"]


class FileHandle:
    """``os.open(path, flags, mode)``'s descriptor as ``fd`` (-1 once closed), closed by :meth:`close` or when the
    handle is collected; a failed open raises ``OSError`` and leaves nothing to close.

    Examples:
        >>> import pathlib, tempfile
        >>> FileHandle(pathlib.Path(tempfile.mkdtemp()) / "none", os.O_RDONLY)
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] No such file or directory: ...
    """

    def __init__(self, path: Path, flags: int, mode: int = 0o600) -> None:
        self.fd = -1  # until it opens
        self.path = Path(path)
        self.fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), mode)

    def close(self) -> None:
        """Close the descriptor (again: nothing)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()
