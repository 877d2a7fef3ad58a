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

from collections.abc import Iterator, MutableMapping, Sequence

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["NodeVectors"]


class NodeVectors(MutableMapping[str, np.ndarray]):
    """Node vectors by id: rows of ``matrix`` (named by ``ids``, in order), then the ones set since.

    Args:
        ids: the id of each row of ``matrix`` (distinct).
        matrix: a 2-d ``float32`` array (a memory-mapped one is read, never written).

    Raises:
        InvalidInputError: ``ids`` and ``matrix`` disagree, or an id repeats.

    Examples:
        >>> v = NodeVectors(["a"], np.zeros((1, 3), dtype=np.float32))
        >>> v.get("a").shape, v.get("z")
        ((3,), None)
    """

    def __init__(self, ids: Sequence[str], matrix: np.ndarray) -> None:
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise InvalidInputError(f"NodeVectors: {len(ids)} ids for a matrix of shape {matrix.shape}")
        self._row = {k: i for i, k in enumerate(ids)}
        if len(self._row) != len(ids):
            raise InvalidInputError("NodeVectors: an id names two rows")
        self._matrix = matrix
        self._set: dict[str, np.ndarray] = {}

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

    def __repr__(self) -> str:
        return f"NodeVectors(<{len(self)} vectors, {len(self._set)} in memory>)"
