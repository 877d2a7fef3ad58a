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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.file_handle import FileHandle

__all__ = ["PreadArray"]

_LITTLE = "<|=" if sys.byteorder == "little" else "<|"

_ITER_BLOCK = 1 << 16  # entries read at a time when iterating

SPAN = 1 << 16
"""A gather whose positions span at most this many bytes is one read of the span."""

FENCE = 256
""":meth:`PreadArray.insertion_point` keeps every ``FENCE``-th entry of a sorted array in memory: a search is one
read of at most this many entries instead of a read per probe."""


class PreadArray:
    """Entries ``[0, size)`` along the first axis of an array of one ``dtype`` starting ``offset`` bytes into a file
    (each entry a scalar, or a row of shape ``row_shape``), read on demand.

    ``a[i]`` is an ``int`` for a 1-d integer array (a numpy scalar for another dtype, a row's ``ndarray`` for a 2-d
    array); ``a[i:j]`` (step 1) and ``a[positions]`` (an integer array) are new ``ndarray`` s; :meth:`view` is a
    sub-array that reads the same file. Open one with :meth:`open`. Example: the module docstring.
    """

    __slots__ = ("_fence", "_file", "_int", "_signed", "_unit", "dtype", "offset", "row_shape", "size")

    def __init__(
        self, file: FileHandle, dtype: np.dtype[Any], offset: int, size: int, row_shape: tuple[int, ...] = ()
    ) -> None:
        self._file, self.dtype, self.offset, self.size, self.row_shape = file, dtype, offset, size, row_shape
        self._unit = dtype.itemsize * int(np.prod(row_shape, dtype=np.int64))  # bytes an entry
        self._fence: np.ndarray | None = None  # every FENCE-th entry, read on the first insertion_point
        self._int = not row_shape and dtype.kind in "iu" and dtype.byteorder in _LITTLE  # an int from its bytes
        self._signed = dtype.kind == "i"

    @classmethod
    def open(cls, path: str | os.PathLike[str], dtype: Any, *, ndim: int = 1) -> PreadArray:
        """The ``ndim``-d ``dtype`` array of the ``.npy`` file at ``path`` (its header read, its data left in the
        file); :class:`IndexFormatError` naming the file when it is missing, holds another dtype or shape, or is cut
        short.

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
                shape, fortran, held = header(f)
                offset = f.tell()
        except (OSError, ValueError, EOFError) as e:  # a bad header or a truncated file
            raise IndexFormatError(f"{path} is corrupt: {type(e).__name__}: {e}") from e
        if held != want or len(shape) != ndim or (fortran and ndim > 1):
            raise IndexFormatError(
                f"{path} is corrupt: it holds {held} of shape {shape}, expected a {ndim}-d {want} array"
            )
        if path.stat().st_size != offset + int(np.prod(shape, dtype=np.int64)) * want.itemsize:
            raise IndexFormatError(f"{path} is corrupt: its size is not its header's shape {shape}")
        return cls(FileHandle(path, os.O_RDONLY), want, offset, int(shape[0]), tuple(int(d) for d in shape[1:]))

    @property
    def nbytes(self) -> int:
        """Bytes the array holds in its file (none of them in memory)."""
        return self.size * self._unit

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size, *self.row_shape)

    @property
    def ndim(self) -> int:
        return 1 + len(self.row_shape)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Any]:
        """The entries in order, read a block at a time (ints for a 1-d integer array, as :meth:`__getitem__`)."""
        for at in range(0, self.size, _ITER_BLOCK):
            block = self[at : at + _ITER_BLOCK]
            yield from (block.tolist() if self._int else block)

    def close(self) -> None:
        """Close the file now (every view of it included); collecting the last array closes it too."""
        self._file.close()

    def view(self, start: int, stop: int) -> PreadArray:
        """Entries ``[start, stop)`` as an array of their own over the same file (nothing read)."""
        start, stop, _ = slice(start, stop).indices(self.size)
        offset = self.offset + start * self._unit
        return PreadArray(self._file, self.dtype, offset, max(0, stop - start), self.row_shape)

    def _read(self, first: int, count: int) -> np.ndarray:
        want = count * self._unit
        got = os.pread(self._file.fd, want, self.offset + first * self._unit)
        if len(got) != want:
            raise IndexFormatError(f"an array file was cut short: {len(got)} of {want} bytes at entry {first}")
        return np.frombuffer(got, dtype=self.dtype).reshape(count, *self.row_shape)

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int and self._int and 0 <= key < self.size:  # a binary search's probe: the fast path
            got = os.pread(self._file.fd, self._unit, self.offset + key * self._unit)
            if len(got) == self._unit:
                return int.from_bytes(got, "little", signed=self._signed)
        if isinstance(key, slice):
            start, stop, step = key.indices(self.size)
            if step != 1:
                raise IndexError("a PreadArray slice takes step 1")
            return self._read(start, max(0, stop - start)).copy()
        if isinstance(key, np.ndarray):
            return self._gather(key.ravel()).reshape(*key.shape, *self.row_shape)
        i = int(key)
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError(f"index {int(key)} is out of bounds for size {self.size}")
        entry = self._read(i, 1)[0]
        return int(entry) if self._int else entry

    def insertion_point(self, value: Any) -> int:
        """``np.searchsorted(a, value)`` for a sorted 1-d array: the first call keeps every :data:`FENCE`-th entry in
        memory (one pass over the file, a block at a time); then each search is one read of at most ``FENCE``
        entries.

        Examples:
            >>> import pathlib, tempfile
            >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.npy"
            >>> np.save(path, np.arange(1000, dtype=np.int64) * 2)
            >>> a = PreadArray.open(path, np.int64)
            >>> a.insertion_point(0), a.insertion_point(513), a.insertion_point(2000)
            (0, 257, 1000)
        """
        if self._fence is None:
            blocks = [
                self._read(at, min(_ITER_BLOCK, self.size - at))[::FENCE] for at in range(0, self.size, _ITER_BLOCK)
            ]
            self._fence = np.concatenate(blocks) if blocks else np.zeros(0, dtype=self.dtype)
        block = int(np.searchsorted(self._fence, value))  # entries [0, block * FENCE) before it hold a smaller one
        lo, hi = max(block - 1, 0) * FENCE, min(block * FENCE, self.size)
        return lo + int(np.searchsorted(self._read(lo, hi - lo), value))

    def _gather(self, positions: np.ndarray) -> np.ndarray:
        """The entries at ``positions``: one read of their span when it is short or dense, else one read each."""
        if not positions.size:
            return np.zeros((0, *self.row_shape), dtype=self.dtype)
        pos = positions.astype(np.int64, copy=False)
        lo, hi = int(pos.min()), int(pos.max())
        if lo < 0 or hi >= self.size:
            raise IndexError(f"positions [{lo}, {hi}] are out of bounds for size {self.size}")
        unit = self._unit
        if (hi - lo + 1) * unit <= SPAN or hi - lo < 4 * pos.size:
            return self._read(lo, hi - lo + 1)[pos - lo]
        fd, base = self._file.fd, self.offset
        got = b"".join([os.pread(fd, unit, base + p * unit) for p in pos.tolist()])
        if len(got) != pos.size * unit:
            raise IndexFormatError(f"an array file was cut short: {len(got)} of {pos.size * unit} bytes")
        return np.frombuffer(got, dtype=self.dtype).reshape(pos.size, *self.row_shape)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (or copied) as its file's path and place: the copy opens the file again (a descriptor number
        means nothing in another process)."""
        return (_reopened, (str(self._file.path), self.dtype.str, self.offset, self.size, self.row_shape))

    def __repr__(self) -> str:
        return f"PreadArray(<{'x'.join(map(str, self.shape))} {self.dtype}>)"


def _reopened(path: str, dtype: str, offset: int, size: int, row_shape: tuple[int, ...] = ()) -> PreadArray:
    return PreadArray(FileHandle(Path(path), os.O_RDONLY), np.dtype(dtype), offset, size, row_shape)
