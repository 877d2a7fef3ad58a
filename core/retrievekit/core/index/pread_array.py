"""A read-only one-dimensional array left in its ``.npy`` file and read with ``os.pread``: :class:`PreadArray`.

A memory mapping counts every page a read touches in the process's resident set, and recent Linux kernels map a whole
page-cache folio (up to hundreds of kilobytes) per touch, so scattered reads of a large mapped array (a suffix
array's binary searches) soon map most of the file. A :class:`PreadArray` copies only the bytes asked for into the
process; the file's pages stay in the kernel's page cache, shared and reclaimable, not in the process.

An element is one ``pread`` (about a microsecond); a slice is one ``pread``; a gather of scattered positions reads
each position, or the span between them when they lie close together.

Examples:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.npy"
    >>> np.save(path, np.arange(10, dtype=np.int32) * 3)
    >>> a = PreadArray.open(path, np.int32)
    >>> a.size, a.dtype, int(a[4]), a[2:5].tolist(), a[np.array([9, 0, 9])].tolist()
    (10, dtype('int32'), 12, [6, 9, 12], [27, 0, 27])
    >>> a.view(2, 6)[1:3].tolist(), a.close()
    ([9, 12], None)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import IndexFormatError

__all__ = ["PreadArray"]

_LITTLE = "<|=" if sys.byteorder == "little" else "<|"

SPAN = 1 << 16
"""A gather whose positions span at most this many bytes is one read of the span."""


class _File:
    """An open file descriptor, closed when the last array reading it is collected."""

    __slots__ = ("fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class PreadArray:
    """Elements ``[0, size)`` of one ``dtype`` starting ``offset`` bytes into a file, read on demand.

    ``a[i]`` is an ``int`` for an integer dtype (a numpy scalar for another), ``a[i:j]`` (step 1) and ``a[positions]`` (an integer array) new ``ndarray`` s;
    :meth:`view` is a sub-array that reads the same file. Open one with :meth:`open`. Example: the module docstring.
    """

    __slots__ = ("_file", "_int", "_signed", "dtype", "offset", "size")

    def __init__(self, file: _File, dtype: np.dtype[Any], offset: int, size: int) -> None:
        self._file, self.dtype, self.offset, self.size = file, dtype, offset, size
        self._int = dtype.kind in "iu" and dtype.byteorder in _LITTLE  # an element: an int straight from its bytes
        self._signed = dtype.kind == "i"

    @classmethod
    def open(cls, path: str | os.PathLike[str], dtype: Any) -> PreadArray:
        """The 1-d ``dtype`` array of the ``.npy`` file at ``path`` (its header read, its data left in the file);
        :class:`IndexFormatError` naming the file when it is missing, holds another dtype or shape, or is cut short.

        Examples:
            >>> import pathlib, tempfile
            >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.npy"
            >>> np.save(path, np.zeros(3, dtype=np.float32))
            >>> PreadArray.open(path, np.int32)
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ...a.npy is corrupt: it holds float32 of shape (3,), expected a 1-d int32 array
        """
        path, want = Path(path), np.dtype(dtype)
        if not path.is_file():
            raise IndexFormatError(f"{path} is missing (the index folder was written with it); rebuild it")
        try:
            with open(path, "rb") as f:
                version = np.lib.format.read_magic(f)
                header = (
                    np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                )
                shape, _, held = header(f)
                offset = f.tell()
        except (OSError, ValueError, EOFError) as e:  # a bad header or a truncated file
            raise IndexFormatError(f"{path} is corrupt: {type(e).__name__}: {e}") from e
        if held != want or len(shape) != 1:
            raise IndexFormatError(f"{path} is corrupt: it holds {held} of shape {shape}, expected a 1-d {want} array")
        if path.stat().st_size != offset + int(shape[0]) * want.itemsize:
            raise IndexFormatError(f"{path} is corrupt: its size is not its header's {shape[0]} elements")
        return cls(_File(path), want, offset, int(shape[0]))

    @property
    def nbytes(self) -> int:
        """Bytes the array holds in its file (none of them in memory)."""
        return self.size * self.dtype.itemsize

    @property
    def shape(self) -> tuple[int]:
        return (self.size,)

    def __len__(self) -> int:
        return self.size

    def close(self) -> None:
        """Close the file now (every view of it included); collecting the last array closes it too."""
        self._file.close()

    def view(self, start: int, stop: int) -> PreadArray:
        """Elements ``[start, stop)`` as an array of their own over the same file (nothing read)."""
        start, stop, _ = slice(start, stop).indices(self.size)
        return PreadArray(self._file, self.dtype, self.offset + start * self.dtype.itemsize, max(0, stop - start))

    def _read(self, first: int, count: int) -> np.ndarray:
        size = self.dtype.itemsize
        want = count * size
        got = os.pread(self._file.fd, want, self.offset + first * size)
        if len(got) != want:
            raise IndexFormatError(f"an array file was cut short: {len(got)} of {want} bytes at element {first}")
        return np.frombuffer(got, dtype=self.dtype)

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int and self._int and 0 <= key < self.size:  # a binary search's probe: the fast path
            size = self.dtype.itemsize
            got = os.pread(self._file.fd, size, self.offset + key * size)
            if len(got) == size:
                return int.from_bytes(got, "little", signed=self._signed)
        if isinstance(key, slice):
            start, stop, step = key.indices(self.size)
            if step != 1:
                raise IndexError("a PreadArray slice takes step 1")
            return self._read(start, max(0, stop - start)).copy()
        if isinstance(key, np.ndarray):
            return self._gather(key.ravel()).reshape(key.shape)
        i = int(key)
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError(f"index {int(key)} is out of bounds for size {self.size}")
        element = self._read(i, 1)[0]
        return int(element) if self._int else element

    def _gather(self, positions: np.ndarray) -> np.ndarray:
        """The elements at ``positions``: one read of their span when it is short or dense, else one read each."""
        if not positions.size:
            return np.zeros(0, dtype=self.dtype)
        pos = positions.astype(np.int64, copy=False)
        lo, hi = int(pos.min()), int(pos.max())
        if lo < 0 or hi >= self.size:
            raise IndexError(f"positions [{lo}, {hi}] are out of bounds for size {self.size}")
        size = self.dtype.itemsize
        if (hi - lo + 1) * size <= SPAN or hi - lo < 4 * pos.size:
            return self._read(lo, hi - lo + 1)[pos - lo]
        fd, base = self._file.fd, self.offset
        got = b"".join([os.pread(fd, size, base + p * size) for p in pos.tolist()])
        if len(got) != pos.size * size:
            raise IndexFormatError(f"an array file was cut short: {len(got)} of {pos.size * size} bytes")
        return np.frombuffer(got, dtype=self.dtype)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (or copied) as its file's path and place: the copy opens the file again (a descriptor number
        means nothing in another process)."""
        return (_reopened, (str(self._file.path), self.dtype.str, self.offset, self.size))

    def __repr__(self) -> str:
        return f"PreadArray(<{self.size} {self.dtype}>)"


def _reopened(path: str, dtype: str, offset: int, size: int) -> PreadArray:
    return PreadArray(_File(Path(path)), np.dtype(dtype), offset, size)
