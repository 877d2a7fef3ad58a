"""A float32 matrix kept in a file and read with ``os.pread``: the rows a build writes as it goes and reads back.

A streamed build of ten million documents cannot hold its vectors (10M rows of 384 ``float32`` are 15 GB), and a
memory-mapped file would not help its memory: every page a read touches counts in the process's resident set until
the kernel takes it back. :class:`RowFile` appends rows to a plain file and reads them with ``os.preadv`` into
arrays of its own, so the process holds only what it asked for (the page cache keeps the rest, outside it).

1. **Append.** :meth:`RowFile.append` writes rows at the end (their width fixed by the first rows).
2. **Read like an array.** ``rows[i:j]`` reads a block; ``rows[idx]`` (an array of row numbers, any order) reads
   each run of consecutive rows with one call; ``rows.shape`` and ``len(rows)`` are the matrix's.
3. **Views.** :meth:`RowFile.view` is rows ``start:stop`` as a matrix of its own, sharing the file.

The file is scratch space: it has no header, and :meth:`RowFile.remove` closes and deletes it (or whoever made its
folder removes it).

Examples:
    >>> import pathlib, tempfile
    >>> rows = RowFile(pathlib.Path(tempfile.mkdtemp()) / "rows.f32")
    >>> rows.append(np.arange(6, dtype=np.float32).reshape(3, 2))
    >>> rows.shape, rows[1:3].tolist(), rows[np.array([2, 0])].tolist()
    ((3, 2), [[2.0, 3.0], [4.0, 5.0]], [[4.0, 5.0], [0.0, 1.0]])
    >>> rows.view(1, 3)[np.array([1])].tolist()
    [[4.0, 5.0]]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.file_handle import FileHandle

__all__ = ["RowFile"]

_ITEM = np.dtype(np.float32).itemsize


class _Handle(FileHandle):
    """The open file and the matrix's width and length, shared by a file and its views."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
        self.width, self.rows = 0, 0


class RowFile:
    """Rows of ``float32`` in the file at ``path`` (created empty), appended and read back; see the module docstring.

    Examples:
        >>> import pathlib, tempfile
        >>> rows = RowFile(pathlib.Path(tempfile.mkdtemp()) / "r")
        >>> rows.append(np.ones((2, 3))); rows.append(np.zeros((1, 3))); len(rows), float(rows[2:3].sum())
        (3, 0.0)
    """

    def __init__(self, path: Path, *, _handle: _Handle | None = None, _start: int = 0, _stop: int | None = None):
        self._h = _handle if _handle is not None else _Handle(Path(path))
        self._start, self._stop = _start, _stop
        self.path = Path(path)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, width)``."""
        stop = self._h.rows if self._stop is None else self._stop
        return stop - self._start, self._h.width

    def __len__(self) -> int:
        return self.shape[0]

    def append(self, rows: Any) -> None:
        """Write ``rows`` (a matrix; converted to ``float32``) after the last row of the file."""
        x = np.ascontiguousarray(rows, dtype=np.float32)
        if x.ndim != 2 or (self._h.rows and x.shape[1] != self._h.width):
            raise InvalidInputError(f"rows of shape {x.shape} cannot follow rows of width {self._h.width}")
        if self._stop is not None:
            raise InvalidInputError("a view of a row file is read-only")
        self._h.width = x.shape[1]
        os.pwrite(self._h.fd, x.tobytes(), self._h.rows * x.shape[1] * _ITEM)
        self._h.rows += x.shape[0]

    def remove(self) -> None:
        """Close the file (this matrix and its views: they read nothing more) and delete it. Deleting alone would not
        give its disk space back while the file is still open.

        Examples:
            >>> import pathlib, tempfile
            >>> rows = RowFile(pathlib.Path(tempfile.mkdtemp()) / "r"); rows.append(np.ones((1, 2))); rows.remove()
            >>> rows.path.exists()
            False
        """
        self._h.close()
        self.path.unlink(missing_ok=True)

    def view(self, start: int, stop: int) -> RowFile:
        """Rows ``start:stop`` of this matrix as a matrix of their own (the same file)."""
        return RowFile(self.path, _handle=self._h, _start=self._start + start, _stop=self._start + stop)

    def __getitem__(self, key: slice | np.ndarray) -> np.ndarray:
        if isinstance(key, slice):
            first, last, step = key.indices(len(self))
            if step != 1:
                raise InvalidInputError("a row file reads slices with step 1")
            return self._read_runs(np.arange(first, max(first, last), dtype=np.int64))
        idx = np.asarray(key, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"row out of range for a matrix of {len(self)} rows")
        order = np.argsort(idx, kind="stable")
        out = np.empty((idx.size, self._h.width), dtype=np.float32)
        out[order] = self._read_runs(idx[order])
        return out

    def _read_runs(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (ascending) read with one ``preadv`` per run of consecutive rows."""
        out = np.empty((rows.size, self._h.width), dtype=np.float32)
        if not rows.size:
            return out
        cut = np.flatnonzero(np.diff(rows) != 1) + 1
        starts, ends = np.r_[0, cut].tolist(), np.r_[cut, rows.size].tolist()
        row_bytes = self._h.width * _ITEM
        for a, b, first in zip(starts, ends, rows[starts].tolist(), strict=True):
            want = (b - a) * row_bytes
            got = os.preadv(self._h.fd, [out[a:b].data.cast("B")], (self._start + first) * row_bytes)
            if got != want:
                raise OSError(f"{self.path}: read {got} of {want} bytes at row {self._start + first}")
        return out
