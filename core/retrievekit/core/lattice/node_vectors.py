"""A LATTICE tree's node vectors, read from a memory-mapped matrix and changed in memory.

:class:`NodeVectors` is the mapping ``{node id: vector}`` a :class:`~retrievekit.core.lattice.tree.SemanticTree`
keeps as ``tree.embeddings``. An opened tree's vectors stay in their file (``vectors.npy``, one ``float32`` row a
node, memory-mapped read-only): a lookup returns the row's view, and only the rows a search reads are paged in. A
vector set or replaced later (an insertion, a refreshed summary) is held in memory beside them, and a deleted one
is forgotten; the file is never written (the tree's ``save`` writes a new folder). What stays in memory is the id of
each row (about 100 bytes a node).

Examples:
    >>> import numpy as np
    >>> v = NodeVectors(["a", "b"], np.eye(2, dtype=np.float32))
    >>> v["b"].tolist(), len(v), "c" in v
    ([0.0, 1.0], 2, False)
    >>> v["c"] = np.ones(2); del v["a"]; sorted(v)
    ['b', 'c']
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path

import numpy as np

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.mapped import open_arrays
from retrievekit.core.index.pread_array import PreadArray

__all__ = ["NodeVectors", "read_node_vectors", "write_node_vectors"]

EMBEDDINGS = "embeddings.npz"  # a tree folder of format version 1
VECTORS, VECTOR_IDS = "vectors", "vector_ids.json"  # format version 2 on: vectors.npy, memory-mapped


class NodeVectors(MutableMapping[str, np.ndarray]):
    """Node vectors by id: rows of ``matrix`` (named by ``ids``, in order), then the ones set since.

    Args:
        ids: the id of each row of ``matrix`` (distinct).
        matrix: a 2-d ``float32`` array (a memory-mapped one, or a
            :class:`~retrievekit.core.index.pread_array.PreadArray` whose rows are read from its file, is read, never
            written).

    Raises:
        InvalidInputError: ``ids`` and ``matrix`` disagree, or an id repeats.

    Examples:
        >>> v = NodeVectors(["a"], np.zeros((1, 3), dtype=np.float32))
        >>> v.get("a").shape, v.get("z")
        ((3,), None)
    """

    def __init__(self, ids: Sequence[str], matrix: np.ndarray | PreadArray) -> None:
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise InvalidInputError(f"NodeVectors: {len(ids)} ids for a matrix of shape {matrix.shape}")
        self._row: MutableMapping[str, int] = {k: i for i, k in enumerate(ids)}
        if len(self._row) != len(ids):
            raise InvalidInputError("NodeVectors: an id names two rows")
        self._matrix = matrix
        self._set: dict[str, np.ndarray] = {}

    @classmethod
    def over_rows(cls, rows: MutableMapping[str, int], matrix: np.ndarray | PreadArray) -> NodeVectors:
        """Vectors whose rows ``rows`` names (a row lookup read from the tree's folder instead of a ``dict`` of every
        id: :class:`~retrievekit.core.lattice.node_arrays.VectorRows`).

        Examples:
            >>> NodeVectors.over_rows({"a": 0}, np.ones((1, 2), dtype=np.float32))["a"].tolist()
            [1.0, 1.0]
        """
        vectors = cls([], matrix[:0])
        vectors._matrix, vectors._row = matrix, rows
        return vectors

    def __getitem__(self, key: str) -> np.ndarray:
        """The vector of ``key`` (``KeyError`` when it has none).

        Examples:
            >>> NodeVectors(["a"], np.ones((1, 2), dtype=np.float32))["a"].tolist()
            [1.0, 1.0]
        """
        held = self._set.get(key)
        if held is not None:
            return held
        return np.asarray(self._matrix[self._row[key]])

    def __setitem__(self, key: str, value: np.ndarray) -> None:
        """Set (or replace) the vector of ``key``, as ``float32``, in memory.

        Examples:
            >>> v = NodeVectors([], np.zeros((0, 2), dtype=np.float32)); v["x"] = [1, 2]; v["x"].dtype
            dtype('float32')
        """
        self._row.pop(key, None)
        self._set[key] = np.asarray(value, dtype=np.float32)

    def __delitem__(self, key: str) -> None:
        """Forget the vector of ``key`` (``KeyError`` when it has none).

        Examples:
            >>> v = NodeVectors(["a"], np.ones((1, 2), dtype=np.float32)); del v["a"]; len(v)
            0
        """
        if key in self._set:
            del self._set[key]
        else:
            del self._row[key]

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` has a vector.

        Examples:
            >>> "a" in NodeVectors(["a"], np.ones((1, 2), dtype=np.float32))
            True
        """
        return key in self._set or key in self._row

    def __iter__(self) -> Iterator[str]:
        """The ids: the matrix's rows still held, then the ones set since.

        Examples:
            >>> list(NodeVectors(["b", "a"], np.ones((2, 1), dtype=np.float32)))
            ['b', 'a']
        """
        yield from list(self._row)
        yield from list(self._set)

    def __len__(self) -> int:
        """How many ids have a vector.

        Examples:
            >>> len(NodeVectors(["a", "b"], np.ones((2, 1), dtype=np.float32)))
            2
        """
        return len(self._row) + len(self._set)

    @property
    def in_memory(self) -> Mapping[str, np.ndarray]:
        """The vectors set since the matrix was read (not its rows): what a change of the tree set.

        Examples:
            >>> v = NodeVectors(["a"], np.ones((1, 2), dtype=np.float32)); v["b"] = [0, 1]; list(v.in_memory)
            ['b']
        """
        return self._set

    def copy(self) -> NodeVectors:
        """A copy to change apart (the matrix shared: it is never written; the vectors set since shared too: they are
        replaced, never changed in place).

        Examples:
            >>> v = NodeVectors(["a"], np.ones((1, 2), dtype=np.float32)); w = v.copy(); del w["a"]
            >>> len(v), len(w)
            (1, 0)
        """
        twin = NodeVectors([], self._matrix[:0])
        twin._matrix, twin._row, twin._set = self._matrix, copy.copy(self._row), dict(self._set)
        return twin

    def __repr__(self) -> str:
        return f"NodeVectors(<{len(self)} vectors, {len(self._set)} in memory>)"


def write_node_vectors(
    folder: Path, ids: list[str], vectors: Mapping[str, np.ndarray], *, ids_file: bool = True
) -> None:
    """Write ``vectors[i]`` for each of ``ids`` into ``folder`` as ``vectors.npy`` (row by row: a whole matrix is
    never held) and, with ``ids_file``, ``vector_ids.json`` (a tree of format version 4 names its rows by node row
    instead), synced.

    Examples:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> write_node_vectors(folder, ["a", "b"], {"a": np.ones(2), "b": np.zeros(2)})
        >>> sorted(read_node_vectors(folder)), read_node_vectors(folder)["a"].tolist()
        (['a', 'b'], [1.0, 1.0])
    """
    first = np.asarray(vectors[ids[0]], dtype=np.float32).reshape(-1)
    out = np.lib.format.open_memmap(
        folder / f"{VECTORS}.npy", mode="w+", dtype=np.float32, shape=(len(ids), first.size)
    )
    for row, i in enumerate(ids):
        v = np.asarray(vectors[i], dtype=np.float32).reshape(-1)
        if v.size != first.size:
            raise InvalidInputError(f"node {i!r} has a vector of {v.size} numbers, others {first.size}: cannot save")
        out[row] = v
    out.flush()
    del out
    with open(folder / f"{VECTORS}.npy", "rb+") as f:
        os.fsync(f.fileno())
    if ids_file:
        (folder / VECTOR_IDS).write_text(json.dumps(ids), encoding="utf-8")


def read_node_vectors(path: Path) -> MutableMapping[str, np.ndarray]:
    """A tree folder's node vectors: ``vectors.npy`` mapped (version 2: a :class:`NodeVectors`), ``embeddings.npz``
    read (version 1: a dict); none (``{}``) when the folder has neither. Example: :func:`write_node_vectors`."""
    epath = path / EMBEDDINGS
    if epath.is_file():
        try:
            with np.load(epath, allow_pickle=False) as z:
                return {str(i): v for i, v in zip(z["ids"].tolist(), z["vectors"], strict=True)}
        except (OSError, ValueError, KeyError) as e:
            check_descriptors(f"reading {epath}", e, by_count=False)
            raise IndexFormatError(f"{epath} is corrupt: {e}") from e
    if not (path / VECTOR_IDS).is_file():
        return {}
    matrix = open_arrays(path, {VECTORS: np.float32}, ndim={VECTORS: 2}, mode="r")[VECTORS]
    try:
        ids = json.loads((path / VECTOR_IDS).read_text(encoding="utf-8"))
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError("not a list of ids")
        return NodeVectors(ids, matrix)
    except (OSError, ValueError, InvalidInputError) as e:
        raise IndexFormatError(f"{path / VECTOR_IDS} is corrupt: {e}") from e
