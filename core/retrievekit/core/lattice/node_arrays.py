"""A LATTICE tree's nodes as arrays in its folder (tree format version 4), each node read when a search asks for it.

A tree of ten million documents has about eleven million nodes; held as Python objects they take several GB, and
reading them all is most of what opening the tree cost (``nodes.jsonl`` of versions 1 to 3). Version 4 writes the
structure and the summaries as flat arrays, memory-mapped on opening, so a process holds only the nodes it reads:

1. **Ids, sorted.** ``node_ids.npy`` (every id's UTF-8 bytes, one after the other, in byte order: the order of
   Python's ``str`` comparison) and ``node_id_starts.npy`` (where each id starts); a node's row is its id's place in
   that order. ``node_id_hashes.npy`` (each id's 8-byte BLAKE2b hash, sorted) and ``node_id_hash_rows.npy`` (the row
   of each) find an id with one binary search of numbers (:class:`SortedIds`).
2. **Structure.** ``node_parents.npy`` (the parent's row, -1 for the root), ``node_depths.npy``, ``node_leaves.npy``,
   ``child_starts.npy`` and ``children.npy`` (each node's children's rows, in their stored order).
3. **Texts.** ``node_texts.npy`` and ``node_text_starts.npy``: a summary, or a leaf's text when it is not its
   object's ``index_text()`` (empty otherwise: the tree reads it from the object, as version 3 did).
4. **Vector rows.** ``vector_rows.npy``: the node row of each row of ``vectors.npy`` (:class:`VectorRows`), in place
   of ``vector_ids.json``.

Opening checks the structure with array operations (every node but the root is the child of exactly one node, its
parent is that node, its depth one more, and a leaf has no children), so a damaged folder is an
:class:`~retrievekit.core.errors.IndexFormatError` before a search walks it; the folder's checksums were checked
before that. :class:`NodeArrays` is the read-only ``{id: TreeNode}`` view; the tree puts a
:class:`~retrievekit.core.lattice.node_overlay.NodeOverlay` on top, which keeps each node read (a change made in place
stays) and the nodes set or removed since.

Examples:
    >>> import pathlib, tempfile
    >>> root = TreeNode(id="root", text="root", children=["n1-a", "c"])
    >>> nodes = {"root": root, "n1-a": TreeNode(id="n1-a", text="Fruit", children=["b"]),
    ...          "b": TreeNode(id="b", text="", is_leaf=True), "c": TreeNode(id="c", text="", is_leaf=True)}
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rows = write_node_arrays(folder, nodes, lambda n: n.text)
    >>> stored = open_node_arrays(folder)
    >>> stored["n1-a"].children, stored["b"].parent, stored["b"].depth, list(stored.leaf_ids())
    (['b'], 'n1-a', 2, ['b', 'c'])
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.insertion_point import insertion_point
from retrievekit.core.index.mapped import open_arrays, release_pages, save_arrays
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.lattice.tree_node import TreeNode

__all__ = [
    "NodeArrays",
    "SortedIds",
    "VectorRows",
    "open_node_arrays",
    "parents_and_depths",
    "write_node_arrays",
    "write_node_rows",
]

IDS, ID_STARTS, ID_HASHES, ID_HASH_ROWS = "node_ids", "node_id_starts", "node_id_hashes", "node_id_hash_rows"
PARENTS, DEPTHS, LEAVES = "node_parents", "node_depths", "node_leaves"
CHILD_STARTS, CHILDREN = "child_starts", "children"
TEXTS, TEXT_STARTS = "node_texts", "node_text_starts"
VECTOR_ROWS = "vector_rows"
_DTYPES = {
    IDS: np.uint8,
    ID_STARTS: np.int64,
    ID_HASHES: np.uint64,
    ID_HASH_ROWS: np.int32,
    PARENTS: np.int32,
    DEPTHS: np.int32,
    LEAVES: np.bool_,
    CHILD_STARTS: np.int64,
    CHILDREN: np.int32,
    TEXTS: np.uint8,
    TEXT_STARTS: np.int64,
}


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _hash(raw: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


def _hash_index(raw: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Each id's 8-byte hash, sorted, and the row of each (ties by row)."""
    hashes = np.fromiter((_hash(r) for r in raw), dtype=np.uint64, count=len(raw))
    order = np.argsort(hashes, kind="stable").astype(np.int32)
    return hashes[order], order


def _pack(texts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=starts[1:])
    return np.frombuffer(b"".join(texts), dtype=np.uint8), starts


class Strings(Sequence[str]):
    """Texts read from a blob of their UTF-8 bytes, one after the other: ``strings[row]``.

    Examples:
        >>> blob, starts = _pack([b"ab", b"", b"c"])
        >>> Strings(blob, starts)[0], list(Strings(blob, starts))
        ('ab', ['ab', '', 'c'])
    """

    def __init__(self, blob: np.ndarray, starts: np.ndarray) -> None:
        self._blob, self._starts = blob, starts

    def raw(self, row: int) -> bytes:
        """The UTF-8 bytes at ``row``."""
        start, stop = self._starts[row : row + 2].tolist()  # one read where the offsets are left in their file
        return self._blob[start:stop].tobytes()

    def __len__(self) -> int:
        return len(self._starts) - 1

    @overload
    def __getitem__(self, row: int) -> str: ...

    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        n = len(self)
        at = int(row) + n if row < 0 else int(row)
        if not 0 <= at < n:
            raise IndexError(row)
        return self.raw(at).decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        for row in range(len(self)):
            yield self.raw(row).decode("utf-8", "surrogatepass")


class SortedIds(Strings):
    """Ids in byte order (Python's ``str`` order) with a hash index: ``ids[row]`` and :meth:`find`.

    Examples:
        >>> raw = [b"a", b"b", b"ba"]
        >>> ids = SortedIds(*_pack(raw), *_hash_index(raw))
        >>> ids[2], ids.find("b"), ids.find("c"), list(ids)
        ('ba', 1, None, ['a', 'b', 'ba'])
    """

    def __init__(self, blob: np.ndarray, starts: np.ndarray, hashes: np.ndarray, hash_rows: np.ndarray) -> None:
        super().__init__(blob, starts)
        self._hashes, self._hash_rows = hashes, hash_rows

    def find(self, key: str) -> int | None:
        """The row of ``key``, or None: a binary search of its hash, then the rows with that hash compared."""
        raw = _utf8(key)
        h = _hash(raw)
        at = insertion_point(self._hashes, h)
        while at < len(self._hashes) and int(self._hashes[at]) == h:
            row = int(self._hash_rows[at])
            if self.raw(row) == raw:
                return row
            at += 1
        return None


class RowIds(Strings):
    """The sorted ids of some rows of :class:`SortedIds`: the leaves' (what the tree's objects are stored by), the
    internal nodes'."""

    def __init__(self, ids: SortedIds, rows: np.ndarray) -> None:  # reads through ``ids``: no blob of its own
        self._ids, self._rows = ids, rows

    def raw(self, row: int) -> bytes:
        """The UTF-8 bytes of the ``row``-th id."""
        return self._ids.raw(int(self._rows[row]))

    def __len__(self) -> int:
        return len(self._rows)

    def find(self, key: str) -> int | None:
        """The place of ``key`` among these ids, or None (its node row found by hash, then among the rows)."""
        row = self._ids.find(key)
        if row is None:
            return None
        at = insertion_point(self._rows, row)
        return at if at < len(self._rows) and int(self._rows[at]) == row else None


class VectorRows(MutableMapping[str, int]):
    """``{node id: row of vectors.npy}`` read from ``vector_rows.npy`` (each vector row's node row, ascending); a row
    removed is remembered in memory, none is ever set (the tree holds a new vector in memory).

    Examples:
        >>> import pathlib, tempfile
        >>> nodes = {"root": TreeNode(id="root", text="", children=["a"]), "a": TreeNode(id="a", text="", is_leaf=True)}
        >>> folder = pathlib.Path(tempfile.mkdtemp()); _ = write_node_arrays(folder, nodes, lambda n: n.text)
        >>> rows = VectorRows(open_node_arrays(folder).ids, np.array([1], dtype=np.int32))
        >>> rows["root"], "a" in rows, list(rows)
        (0, False, ['root'])
    """

    def __init__(self, ids: SortedIds, node_rows: np.ndarray | PreadArray) -> None:
        self._ids, self._rows = ids, node_rows
        self._gone: set[str] = set()

    def __getitem__(self, key: str) -> int:
        node = self._ids.find(key) if isinstance(key, str) and key not in self._gone else None
        if node is not None:
            i = insertion_point(self._rows, node)
            if i < len(self._rows) and int(self._rows[i]) == node:
                return i
        raise KeyError(key)

    def __setitem__(self, key: str, row: int) -> None:
        raise TypeError("a tree's stored vector rows are read-only; a vector set later is held in memory")

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018 -- KeyError when it has no row
        self._gone.add(key)

    def __iter__(self) -> Iterator[str]:
        gone = self._gone
        return (k for k in (self._ids[int(r)] for r in self._rows) if k not in gone)

    def __len__(self) -> int:
        return len(self._rows) - len(self._gone)

    def __copy__(self) -> VectorRows:
        twin = VectorRows(self._ids, self._rows)
        twin._gone = set(self._gone)
        return twin


class NodeArrays(Mapping[str, TreeNode]):
    """The nodes of a version-4 tree folder, read-only: ``nodes[id]`` builds that node (its children's and parent's
    ids read from the arrays) each time it is asked; iterating gives the ids in byte order. Open one with
    :func:`open_node_arrays`.

    Examples:
        >>> import pathlib, tempfile
        >>> nodes = {"root": TreeNode(id="root", text="", children=["a"]), "a": TreeNode(id="a", text="", is_leaf=True)}
        >>> folder = pathlib.Path(tempfile.mkdtemp()); _ = write_node_arrays(folder, nodes, lambda n: n.text)
        >>> stored = open_node_arrays(folder)
        >>> list(stored), stored["a"].parent, "b" in stored, stored.height
        (['a', 'root'], 'root', False, 1)
    """

    def __init__(self, arrays: Mapping[str, np.ndarray], reads: Mapping[str, Any] | None = None) -> None:
        self._a = dict(arrays)  # whole-array work (opening checks, leaves, height, widest)
        self._r = dict(reads) if reads is not None else self._a  # a node's reads
        r = self._r
        self.ids = SortedIds(r[IDS], r[ID_STARTS], r[ID_HASHES], r[ID_HASH_ROWS])
        self._texts = Strings(r[TEXTS], r[TEXT_STARTS])

    def node_at(self, row: int) -> TreeNode:
        """The node at ``row``."""
        a, ids = self._r, self.ids
        first, stop = a[CHILD_STARTS][row : row + 2].tolist()
        children = [ids.raw(c).decode("utf-8", "surrogatepass") for c in a[CHILDREN][first:stop].tolist()]
        parent = int(a[PARENTS][row])
        node = TreeNode(ids[row], self._texts[row], children, int(a[DEPTHS][row]), bool(a[LEAVES][row]))
        node.parent = ids[parent] if parent >= 0 else None
        return node

    def __getitem__(self, key: str) -> TreeNode:
        row = self.ids.find(key) if isinstance(key, str) else None
        if row is None:
            raise KeyError(key)
        return self.node_at(row)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.ids.find(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def leaf_ids(self) -> RowIds:
        """The leaves' ids, sorted (a sequence read from the arrays: 4 bytes a leaf in memory)."""
        rows = np.flatnonzero(self._a[LEAVES]).astype(np.int32)
        release_pages(self._a[LEAVES])
        return RowIds(self.ids, rows)

    @property
    def height(self) -> int:
        """The largest depth of a leaf."""
        depths = self._a[DEPTHS][self._a[LEAVES]]
        release_pages(self._a[DEPTHS], self._a[LEAVES])
        return int(depths.max()) if depths.size else 0

    def widest(self, skip: Iterable[str] = ()) -> int:
        """The most children of any node but those ids in ``skip``, from the children's offsets (no node built)."""
        widths = self.internal(skip)[1]  # a leaf has no children
        return int(widths.max()) if widths.size else 0

    def internal(self, skip: Iterable[str] = ()) -> tuple[RowIds, np.ndarray]:
        """The ids of the internal nodes but those in ``skip`` (sorted; read when asked for) and their numbers of
        children, from the leaf flags and the children's offsets (no node built).

        Examples:
            >>> import pathlib, tempfile
            >>> nodes = {"root": TreeNode(id="root", text="", children=["n"]),
            ...          "n": TreeNode(id="n", text="", children=["a", "b"]),
            ...          "a": TreeNode(id="a", text="", is_leaf=True), "b": TreeNode(id="b", text="", is_leaf=True)}
            >>> folder = pathlib.Path(tempfile.mkdtemp()); _ = write_node_arrays(folder, nodes, lambda n: n.text)
            >>> ids, widths = open_node_arrays(folder).internal(skip=["root"]); list(ids), widths.tolist()
            (['n'], [2])
        """
        rows = np.flatnonzero(~np.asarray(self._a[LEAVES])).astype(np.int32)
        widths = np.diff(self._a[CHILD_STARTS])[rows]
        release_pages(self._a[LEAVES], self._a[CHILD_STARTS])
        keep = ~np.isin(rows, [r for r in map(self.ids.find, skip) if r is not None])
        return RowIds(self.ids, rows[keep]), widths[keep]

    def __deepcopy__(self, memo: dict[int, Any]) -> NodeArrays:
        return self  # read-only: a copy of the tree shares it

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the plain dict of its nodes (another process cannot share the mapping)."""
        return (dict, (dict(self.items()),))


def write_node_arrays(
    folder: Path, nodes: Mapping[str, TreeNode], stored_text: Callable[[TreeNode], str]
) -> dict[str, int]:
    """Write ``nodes`` (a whole tree, root ``"root"``) into ``folder`` as the arrays of the module docstring, synced;
    ``stored_text(node)`` is the text a node keeps (a leaf's is empty when it is its object's). Parents and depths
    are read from the children, not from the nodes' own fields. Returns each id's row. Example: the module
    docstring."""
    raw = sorted(_utf8(k) for k in nodes)
    ids = [r.decode("utf-8", "surrogatepass") for r in raw]
    row = {k: i for i, k in enumerate(ids)}
    child_rows: list[list[int]] = [[row[c] for c in nodes[k].children] for k in ids]
    child_starts = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in child_rows], out=child_starts[1:])
    children = np.fromiter((c for cs in child_rows for c in cs), dtype=np.int32, count=int(child_starts[-1]))
    leaves = np.array([nodes[k].is_leaf for k in ids], dtype=np.bool_)
    texts = [_utf8(stored_text(nodes[k])) for k in ids]
    write_node_rows(folder, raw, leaves, (child_starts, children), texts)
    return row


def parents_and_depths(children: tuple[np.ndarray, np.ndarray], root: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's parent row (-1 for ``root`` and any row not under it) and depth, read from the children
    (``(starts, rows)`` in CSR form) one level at a time from ``root``.

    Examples:
        >>> parents, depths = parents_and_depths((np.array([0, 0, 1, 2]), np.array([0, 1])), root=2)
        >>> parents.tolist(), depths.tolist()
        ([1, 2, -1], [2, 1, 0])
    """
    starts, rows = children
    n = len(starts) - 1
    sizes = np.diff(starts)
    parents, depths = np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=np.int32)
    level, depth = np.array([root], dtype=np.int64), 0
    while level.size and depth <= n:  # a cycle would never end the walk: at most n levels
        counts = sizes[level]
        firsts = np.cumsum(counts) - counts
        kids = np.asarray(
            rows[np.repeat(starts[level] - firsts, counts) + np.arange(int(counts.sum()))], dtype=np.int64
        )
        depth += 1
        parents[kids], depths[kids] = np.repeat(level, counts), depth
        level = kids
    return parents, depths


def write_node_rows(
    folder: Path,
    raw_ids: Sequence[bytes],
    leaves: np.ndarray,
    children: tuple[np.ndarray, np.ndarray],
    texts: Sequence[bytes],
) -> np.ndarray:
    """Write a tree's nodes given row by row into ``folder`` as the arrays of the module docstring, synced: the ids'
    UTF-8 bytes in byte order (a node's row is its place there; the root's id is ``"root"``), each row's leaf flag,
    children (``(starts, rows)`` in CSR form) and stored text's UTF-8 bytes; parents and depths are read from the
    children (:func:`parents_and_depths`); returns the depths. What a build that never holds its nodes as objects
    writes (:func:`write_node_arrays` does the same from ``{id: TreeNode}``).

    Examples:
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> kids = (np.array([0, 0, 1]), np.array([0], dtype=np.int32))
        >>> write_node_rows(folder, [b"a", b"root"], np.array([True, False]), kids, [b"", b"root"]).tolist()
        [1, 0]
        >>> open_node_arrays(folder)["a"].parent, open_node_arrays(folder)["a"].depth
        ('root', 1)
    """
    id_blob, id_starts = _pack(raw_ids)
    text_blob, text_starts = _pack(texts)
    child_starts, child_rows = children
    parents, depths = parents_and_depths(children, root=bisect_left(raw_ids, b"root"))  # the ids are sorted
    save_arrays(
        folder,
        {
            IDS: id_blob,
            ID_STARTS: id_starts,
            **dict(zip((ID_HASHES, ID_HASH_ROWS), _hash_index(raw_ids), strict=True)),
            PARENTS: np.asarray(parents, dtype=np.int32),
            DEPTHS: np.asarray(depths, dtype=np.int32),
            LEAVES: np.asarray(leaves, dtype=np.bool_),
            CHILD_STARTS: np.asarray(child_starts, dtype=np.int64),
            CHILDREN: np.asarray(child_rows, dtype=np.int32),
            TEXTS: text_blob,
            TEXT_STARTS: text_starts,
        },
    )
    return depths


def open_node_arrays(folder: Path) -> NodeArrays:
    """The nodes of the version-4 tree in ``folder``, memory-mapped, after :func:`check_structure`;
    :class:`IndexFormatError` naming the folder when a file is missing or the structure is not a tree.

    Examples:
        >>> import pathlib, tempfile
        >>> open_node_arrays(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...node_ids.npy is missing (the index folder was written with it); rebuild it
    """
    arrays = open_arrays(folder, _DTYPES, mode="r")
    check_structure(folder, arrays)
    reads = {name: PreadArray.open(folder / f"{name}.npy", dtype) for name, dtype in _DTYPES.items()}
    return NodeArrays(arrays, reads)


def check_structure(folder: Path, a: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`IndexFormatError` unless the arrays hold one tree: lengths that agree, an id index in order, one
    root, every other node the child of exactly one node that is its parent, one deeper than it, and leaves without
    children (with the root at depth 0, that also rules out a cycle: depths only grow along children).

    Examples:
        >>> import pathlib, tempfile
        >>> nodes = {"root": TreeNode(id="root", text="", children=["a"]), "a": TreeNode(id="a", text="", is_leaf=True)}
        >>> folder = pathlib.Path(tempfile.mkdtemp()); _ = write_node_arrays(folder, nodes, lambda n: n.text)
        >>> arrays = open_arrays(folder, _DTYPES); arrays[DEPTHS][0] = 5
        >>> check_structure(folder, arrays)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is not a tree: a node's depth is not one more than its parent's; ...
    """
    n = len(a[PARENTS])

    def bad(why: str) -> IndexFormatError:
        return IndexFormatError(f"the LATTICE tree in {folder} is not a tree: {why}; rebuild it")

    for name in (DEPTHS, LEAVES, ID_HASHES, ID_HASH_ROWS):
        if len(a[name]) != n:
            raise bad(f"{name}.npy holds {len(a[name])} rows for {n} nodes")
    try:  # each step's arrays leave the resident set once read (release_pages): the page cache keeps them
        for blob, starts in ((IDS, ID_STARTS), (TEXTS, TEXT_STARTS), (CHILDREN, CHILD_STARTS)):
            s = a[starts]
            if len(s) != n + 1 or (n and (s[0] != 0 or s[-1] != len(a[blob]) or bool(np.any(np.diff(s) < 0)))):
                raise bad(f"{starts}.npy does not index {blob}.npy")
            release_pages(s)
        _check_links(a, n, bad)
    finally:
        release_pages(*a.values())


def _check_links(a: Mapping[str, np.ndarray], n: int, bad: Callable[[str], IndexFormatError]) -> None:
    """:func:`check_structure`'s checks of the id index, the root, and each node's parent, depth and children."""
    rows, hashes = a[ID_HASH_ROWS], a[ID_HASHES]
    if n and (rows.min() < 0 or rows.max() >= n or bool(np.any(hashes[1:] < hashes[:-1]))):
        raise bad("its id index is not one")
    if n and bool(np.any(np.bincount(rows, minlength=n) != 1)):
        raise bad("its id index does not name every node once")
    release_pages(rows, hashes)
    root = SortedIds(a[IDS], a[ID_STARTS], hashes, rows).find("root")
    if root is None or a[PARENTS][root] != -1 or a[DEPTHS][root] != 0:
        raise bad("it has no root")
    children = a[CHILDREN]
    if children.size and (children.min() < 0 or children.max() >= n):
        raise bad("a child row is out of range")
    counts = np.bincount(children, minlength=n)
    counts[root] += 1
    if bool(np.any(counts != 1)):
        raise bad("a node has no parent or two parents")
    del counts
    sizes = np.diff(a[CHILD_STARTS])
    owner = np.repeat(np.arange(n, dtype=np.int32), sizes)
    if bool(np.any(a[PARENTS][children] != owner)):
        raise bad("a node's parent is not the node that holds it")
    if bool(np.any(a[DEPTHS][children] != a[DEPTHS][owner] + 1)):
        raise bad("a node's depth is not one more than its parent's")
    if bool(np.any(sizes[a[LEAVES]] != 0)):
        raise bad("a leaf has children")
