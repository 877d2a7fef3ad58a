"""A saved LATTICE tree's objects, read per hit from its folder: :class:`StoredObjects`.

A tree saves its leaves' objects in ``objects.jsonl`` sorted by id, and each line's byte offset in
``object_offsets.npy``. Opened, the tree keeps only those offsets (memory-mapped) and the file: a search reads the
lines of the objects it shows the LLM (a leaf's text is its object's:
:meth:`~retrievekit.core.lattice.tree.SemanticTree.text`) and returns, nothing else, so a tree opens without the
corpus in memory.

1. **Read-only underneath.** The file is opened once and read with ``os.pread`` (threads read side by side); a
   tree saved over its own folder later keeps reading the file it was opened with.
2. **Changes on top.** An insert or a delete on an opened tree (``LiveLattice``) goes to an overlay (added objects, ids
   removed from the file's); the next save writes the merged view.
3. **Copies share the file.** ``copy.deepcopy`` (a change made on a copy of the tree) copies the overlay only; a
   pickled copy is the plain dict of the objects.

Examples:
    >>> import pathlib, tempfile
    >>> from retrievekit.core.types import Passage
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> offsets = write_sorted_objects(folder, [Passage(id="b", text="beta"), Passage(id="a", text="alpha")])
    >>> objs = StoredObjects.open(folder, ["a", "b"])
    >>> objs["b"].text, "c" in objs, len(objs)
    ('beta', False, 2)
"""

from __future__ import annotations

import copy
import json
import os
import weakref
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.store import OBJECTS, write_objects
from retrievekit.core.types import DataObject, object_from_dict

__all__ = ["OFFSETS", "StoredObjects", "copy_sorted_objects", "write_sorted_objects"]

OFFSETS = "object_offsets.npy"
"""Each ``objects.jsonl`` line's byte offset, in the file's order (the objects' ids, sorted)."""


def write_sorted_objects(folder: Path, objects: Iterable[DataObject]) -> int:
    """Write ``objects`` sorted by id as ``objects.jsonl`` and their lines' offsets as :data:`OFFSETS`; returns how
    many.

    Examples:
        >>> import pathlib, tempfile
        >>> from retrievekit.core.types import Passage
        >>> write_sorted_objects(pathlib.Path(tempfile.mkdtemp()), [Passage(id="a", text="x")])
        1
    """
    offsets: list[int] = []
    n = write_objects(folder, sorted(objects, key=lambda o: o.id), offsets=offsets)
    _save_offsets(folder, offsets)
    return n


def copy_sorted_objects(folder: Path, lines: Path, starts: Sequence[int], order: Iterable[int]) -> int:
    """Write ``objects.jsonl`` and :data:`OFFSETS` into ``folder`` from a file of object lines in another order
    (``lines``; line ``i`` is bytes ``[starts[i], starts[i + 1])``): line ``order[0]`` first, and so on, each read
    with ``os.pread``, so a streamed build writes its objects sorted by id without holding them. Returns how many.

    Examples:
        >>> import pathlib, tempfile
        >>> from retrievekit.core.types import Passage
        >>> folder = pathlib.Path(tempfile.mkdtemp()); at: list[int] = []
        >>> _ = write_objects(folder, [Passage(id="b", text="beta"), Passage(id="a", text="alpha")], offsets=at)
        >>> (folder / "unsorted.jsonl").write_bytes((folder / OBJECTS).read_bytes()) > 0
        True
        >>> copy_sorted_objects(folder, folder / "unsorted.jsonl", at, [1, 0])
        2
        >>> StoredObjects.open(folder, ["a", "b"])["a"].text
        'alpha'
    """
    offsets = array("q")  # 8 bytes a line, not a Python int's 36
    position = 0
    with open(lines, "rb") as src, open(folder / OBJECTS, "wb") as out:
        for i in order:
            a, b = int(starts[i]), int(starts[i + 1])
            line = os.pread(src.fileno(), b - a, a)
            if len(line) != b - a:
                raise OSError(f"{lines}: read {len(line)} of {b - a} bytes at {a}")
            offsets.append(position)
            out.write(line)
            position += len(line)
        out.flush()
        os.fsync(out.fileno())
    offsets.append(position)
    _save_offsets(folder, offsets)
    return len(offsets) - 1


def _save_offsets(folder: Path, offsets: Sequence[int]) -> None:
    with open(folder / OFFSETS, "wb") as f:
        np.save(f, np.asarray(offsets, dtype=np.int64))  # the end too: line i is [o[i], o[i + 1])
        f.flush()
        os.fsync(f.fileno())


class _File:
    """The open ``objects.jsonl``, closed when no copy of the objects reads it any more."""

    def __init__(self, path: Path) -> None:
        self.path, self.fd = path, os.open(path, os.O_RDONLY)
        self._closer = weakref.finalize(self, os.close, self.fd)


class StoredObjects(MutableMapping[str, DataObject]):
    """The objects of a saved tree by id, each read from the file when asked for (module docstring).

    Examples:
        >>> import pathlib, tempfile
        >>> from retrievekit.core.types import Passage
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = write_sorted_objects(folder, [Passage(id="a", text="alpha")])
        >>> objs = StoredObjects.open(folder, ["a"])
        >>> objs["z"] = Passage(id="z", text="zeta"); del objs["a"]
        >>> sorted(objs), objs["z"].text
        (['z'], 'zeta')
    """

    def __init__(self, file: _File, ids: Sequence[str], offsets: np.ndarray) -> None:
        self._file, self._ids, self._offsets = file, ids, offsets
        self._find = getattr(ids, "find", None)  # the leaf ids of a tree of format version 4: found by hash
        self._added: dict[str, DataObject] = {}
        self._removed: set[str] = set()  # stored ids deleted or shadowed by an added object

    @classmethod
    def open(cls, folder: str | os.PathLike[str], ids: Sequence[str]) -> StoredObjects:
        """The objects of the tree in ``folder``, whose sorted leaf ids are ``ids`` (the file's order);
        ``IndexFormatError`` when the offsets do not match them.

        Examples:
            >>> import tempfile
            >>> StoredObjects.open(tempfile.mkdtemp(), ["a"])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... has no object_offsets.npy
        """
        folder = Path(folder)
        if not (folder / OFFSETS).is_file():
            raise IndexFormatError(f"tree folder {folder} has no {OFFSETS}")
        try:
            offsets = np.load(folder / OFFSETS, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise IndexFormatError(f"{folder / OFFSETS} is corrupt: {e}") from e
        size = (folder / OBJECTS).stat().st_size if (folder / OBJECTS).is_file() else -1
        if offsets.ndim != 1 or len(offsets) != len(ids) + 1 or int(offsets[-1]) != size:
            raise IndexFormatError(f"{folder / OFFSETS} does not match {OBJECTS} ({len(ids)} leaves, {size} bytes)")
        return cls(_File(folder / OBJECTS), list(ids) if isinstance(ids, list) else ids, offsets)

    def _row(self, key: object) -> int | None:
        if not isinstance(key, str) or key in self._removed:
            return None
        if self._find is not None:
            return self._find(key)
        i = bisect_left(self._ids, key)
        return i if i < len(self._ids) and self._ids[i] == key else None

    def __contains__(self, key: object) -> bool:
        return key in self._added or self._row(key) is not None

    def __getitem__(self, key: str) -> DataObject:
        if key in self._added:
            return self._added[key]
        i = self._row(key)
        if i is None:
            raise KeyError(key)
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        raw = os.pread(self._file.fd, end - start, start)
        try:
            obj = object_from_dict(json.loads(raw))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as e:
            raise IndexFormatError(f"{self._file.path} is corrupt at object {key!r}: {e}") from e
        if obj.id != key:
            raise IndexFormatError(f"{self._file.path} holds {obj.id!r} where {key!r} belongs: rebuild the tree")
        return obj

    def __setitem__(self, key: str, value: DataObject) -> None:
        if self._row(key) is not None:
            self._removed.add(key)
        self._added[key] = value

    def __delitem__(self, key: str) -> None:
        if key in self._added:
            del self._added[key]
        elif self._row(key) is not None:
            self._removed.add(key)
        else:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        removed = self._removed
        yield from (i for i in self._ids if i not in removed) if removed else iter(self._ids)
        yield from self._added

    def __len__(self) -> int:
        return len(self._ids) - len(self._removed) + len(self._added)

    def holds_exactly(self, sorted_ids: Sequence[str]) -> bool:
        """Whether these objects are exactly ``sorted_ids`` (a whole list compared at once: what opening a tree
        checks instead of one lookup a leaf).

        Examples:
            >>> import pathlib, tempfile
            >>> from retrievekit.core.types import Passage
            >>> folder = pathlib.Path(tempfile.mkdtemp())
            >>> _ = write_sorted_objects(folder, [Passage(id="a", text="alpha")])
            >>> StoredObjects.open(folder, ["a"]).holds_exactly(["a"])
            True
        """
        if not self._added and not self._removed:
            return sorted_ids is self._ids or list(sorted_ids) == list(self._ids)
        return sorted(self) == list(sorted_ids)

    def __deepcopy__(self, memo: dict[int, Any]) -> StoredObjects:
        twin = self.copy()
        twin._added = copy.deepcopy(self._added, memo)
        return twin

    def copy(self) -> StoredObjects:
        """A copy to change apart: the file and its index shared (read-only), the objects set since shared too
        (frozen); only the overlay's maps are copied.

        Examples:
            >>> import pathlib, tempfile
            >>> from retrievekit.core.types import Passage
            >>> folder = pathlib.Path(tempfile.mkdtemp())
            >>> _ = write_sorted_objects(folder, [Passage(id="a", text="alpha")])
            >>> held = StoredObjects.open(folder, ["a"]); twin = held.copy(); del twin["a"]
            >>> len(held), len(twin)
            (1, 0)
        """
        twin = StoredObjects(self._file, self._ids, self._offsets)  # the file and its index are read-only: shared
        twin._added, twin._removed = dict(self._added), set(self._removed)
        return twin

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the plain dict of its objects (another process cannot share the open file)."""
        return (dict, (dict(self.items()),))

    def __repr__(self) -> str:
        return f"StoredObjects({len(self)} objects in {self._file.path})"
