"""Arrays of an index folder as separate ``.npy`` files, opened memory-mapped.

An index folder's arrays (a trie's CSR arrays, a suffix array, a tree's node vectors) are each written as one
uncompressed ``.npy`` file by :func:`save_arrays` and opened by :func:`open_arrays` with
``np.load(..., mmap_mode=...)``: opening reads each file's header only, and a query reads the pages it touches
(the operating system's page cache holds them, shared between processes and given back under memory pressure), so
a process that opens an index does not hold it in its own memory. The default mode ``"c"`` (copy-on-write) lets a
structure that changes in place (a keyed trie) write to its arrays: a written page becomes private to the process
and the file is never changed.

The folder's checksums (:mod:`retrievekit.core.index.checksums`) are still verified on open, before any array is
mapped: that reads every file once from disk in 1 MiB chunks (time in proportion to the folder's bytes, memory
flat); it is what keeps a flipped bit from becoming a wrong answer, so it is kept.

A file that is missing, not an ``.npy`` file, truncated, or of another dtype or shape than the caller expects is an
:class:`~retrievekit.core.errors.IndexFormatError` naming it, never a raw numpy error.

Examples:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> save_arrays(d, {"start": np.arange(3, dtype=np.int64)})
    >>> a = open_arrays(d, {"start": np.int64})["start"]
    >>> is_mapped(a), a.tolist()
    (True, [0, 1, 2])
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.pread_array import PreadArray

__all__ = ["is_mapped", "open_arrays", "release_pages", "save_arrays", "save_concatenated"]

_COPY_BLOCK = 1 << 22  # elements of a PreadArray copied at a time by save_concatenated


def save_arrays(folder: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> None:
    """Write each array as ``<name>.npy`` (uncompressed, no pickle) into ``folder``, synced to disk.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> save_arrays(d, {"a": np.zeros(2), "b": np.ones(1)}); sorted(p.name for p in d.iterdir())
        ['a.npy', 'b.npy']
    """
    root = Path(folder)
    for name, array in arrays.items():
        with open(root / f"{name}.npy", "wb") as f:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())


def save_concatenated(
    folder: str | os.PathLike[str], name: str, parts: Sequence[np.ndarray | PreadArray], dtype: Any
) -> None:
    """Write the concatenation of ``parts`` as ``<name>.npy`` without holding it in memory (each part is copied
    into the file in turn, a :class:`~retrievekit.core.index.pread_array.PreadArray` a block at a time), synced to
    disk.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> save_concatenated(d, "a", [np.arange(2), np.arange(3)], np.int64)
        >>> np.load(d / "a.npy").tolist()
        [0, 1, 0, 1, 2]
    """
    path = Path(folder) / f"{name}.npy"
    total = sum(int(p.size) for p in parts)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.dtype(dtype), shape=(total,))
    at = 0
    for part in parts:
        if isinstance(part, PreadArray):  # read from its file a block at a time, never whole
            for i in range(0, part.size, _COPY_BLOCK):
                out[at + i : at + min(part.size, i + _COPY_BLOCK)] = part[i : i + _COPY_BLOCK]
        else:
            out[at : at + part.size] = part.reshape(-1)
        at += int(part.size)
    out.flush()
    del out
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def is_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is a view of a memory mapping (its data not owned by it, nor by any array it views).

    Examples:
        >>> is_mapped(np.zeros(3)), is_mapped(np.zeros(3)[1:])
        (False, False)
    """
    base: object = array
    while isinstance(base, np.ndarray):
        if isinstance(base, np.memmap):
            return True
        base = base.base
    return isinstance(base, mmap.mmap)


def release_pages(*arrays: np.ndarray) -> None:
    """Tell the kernel this process is done with the pages of the mappings behind ``arrays`` for now
    (``madvise(MADV_DONTNEED)``): they leave its resident set and stay in the page cache, and a later read maps them
    again from there. For a check that reads whole arrays once on opening (a tree's structure), so the process is
    not charged for every page of them; arrays that are not mapped, and mappings written through (``mode="c"``
    after a write: the written pages would be lost), are left alone.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> save_arrays(d, {"a": np.arange(4096, dtype=np.int64)})
        >>> a = open_arrays(d, {"a": np.int64}, mode="r")["a"]
        >>> int(a.sum()); release_pages(a, np.zeros(2)); int(a[4095])
        8386560
        4095
    """
    for array in arrays:
        base: object = array
        while isinstance(base, np.ndarray) and not isinstance(base, np.memmap):
            base = base.base
        mapping = getattr(base, "_mmap", None) if isinstance(base, np.memmap) else None
        if isinstance(mapping, mmap.mmap) and getattr(base, "mode", None) == "r" and hasattr(mmap, "MADV_DONTNEED"):
            mapping.madvise(mmap.MADV_DONTNEED)


def open_arrays(
    folder: str | os.PathLike[str],
    dtypes: Mapping[str, Any],
    *,
    ndim: Mapping[str, int] | None = None,
    mode: Literal["r", "c"] = "c",
) -> dict[str, np.ndarray]:
    """Open ``<name>.npy`` for each name of ``dtypes`` memory-mapped (``mode`` ``"c"``: copy-on-write, ``"r"``:
    read-only); each must hold exactly that dtype and ``ndim[name]`` dimensions (1 by default), else
    :class:`IndexFormatError` naming the file. Each array is returned as a plain ``ndarray`` view of its mapping
    (:func:`is_mapped`): ``np.memmap``'s own indexing runs Python code at every element read.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> save_arrays(d, {"a": np.zeros(2, dtype=np.float32)})
        >>> open_arrays(d, {"a": np.int64})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...a.npy is corrupt: it holds float32 of shape (2,), expected a 1-d int64 array
        >>> open_arrays(d, {"b": np.int64})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...b.npy is missing ...
    """
    root, out = Path(folder), {}
    for name, dtype in dtypes.items():
        path, want, dims = root / f"{name}.npy", np.dtype(dtype), (ndim or {}).get(name, 1)
        if not path.is_file():
            raise IndexFormatError(f"{path} is missing (the index folder was written with it); rebuild it")
        try:
            array = np.load(path, mmap_mode=mode, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:  # a bad header, a truncated file, a pickled object array
            check_descriptors(f"reading {path}", e, by_count=False)  # out of file descriptors: not a damaged file
            raise IndexFormatError(f"{path} is corrupt: {type(e).__name__}: {e}") from e
        if array.dtype != want or array.ndim != dims:
            raise IndexFormatError(
                f"{path} is corrupt: it holds {array.dtype} of shape {array.shape}, expected a {dims}-d {want} array"
            )
        out[name] = np.asarray(array)  # a plain view of the mapping: numpy's memmap indexes through Python code
    return out
