"""The LATTICE semantic tree: nodes, on-disk format, and a networkx view.

Leaves are the corpus objects and keep their ids; internal nodes hold a summary and get a stable id derived from
their level and their leaves (:func:`internal_id`). The root is ``"root"`` (its text is never shown to the LLM).

On disk (a folder written atomically with :func:`~retrievekit.core.index.store.atomic_folder`):

* ``manifest.json`` -- format ``retrievekit.lattice_tree``, :data:`FORMAT_VERSION`, root, counts, builder, build
  config; a folder of another format or a newer version raises :class:`~retrievekit.core.errors.IndexFormatError`;
* the nodes as arrays (format version 4, :mod:`~retrievekit.core.lattice.node_arrays`): ids, parents, depths,
  children and texts in memory-mapped ``.npy`` files, the structure checked by array operations on opening and a
  node read when asked for (a leaf's text is empty when it is its object's ``index_text()``: :meth:`SemanticTree.text`
  reads it from the object). Versions 1 to 3 kept them in ``nodes.jsonl``, one node per line, read whole on opening
  (version 3: a leaf's line without that text; versions 1 and 2 keep their leaves' texts in memory until the next
  save), and still open;
* ``objects.jsonl`` and ``object_offsets.npy`` -- the leaves' objects, sorted by id, and each line's byte offset:
  an object is read when asked for (:class:`~retrievekit.core.lattice.stored_objects.StoredObjects`; a folder
  saved before the offsets were written is read whole);
* ``vectors.npy`` and ``vector_rows.npy`` (each row's node; ``vector_ids.json`` by name before version 4, or when a
  vector names no node) -- the node embeddings, one ``float32`` row a node, memory-mapped
  (:class:`~retrievekit.core.lattice.node_vectors.NodeVectors`: a search pages in the rows it reads); version 1
  kept them in ``embeddings.npz`` (read into memory; the next save writes the current version).

No pickle anywhere.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
    >>> t.children("root"), t.is_leaf("a"), t.depth("a")
    (['a', 'b'], True, 1)
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "tree"
    >>> _ = t.save(d); SemanticTree.load(d).children("root")
    ['a', 'b']
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import DegradedTreeWarning, IndexFormatError, InvalidInputError
from retrievekit.core.index.corpus_record import RECORD_KEY, corpus_record
from retrievekit.core.index.mapped import save_arrays
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.index.store import atomic_folder, read_manifest, read_objects, write_manifest
from retrievekit.core.lattice.node_arrays import VECTOR_ROWS, VectorRows, open_node_arrays, write_node_arrays
from retrievekit.core.lattice.node_overlay import NodeOverlay
from retrievekit.core.lattice.node_vectors import VECTORS, NodeVectors, read_node_vectors, write_node_vectors
from retrievekit.core.lattice.sorted_id_overlay import SortedIdOverlay
from retrievekit.core.lattice.stored_objects import OFFSETS, StoredObjects, write_sorted_objects
from retrievekit.core.lattice.subtree_leaves import SubtreeLeaves
from retrievekit.core.lattice.tree_node import TreeNode
from retrievekit.core.types import DataObject

__all__ = ["FORMAT", "FORMAT_VERSION", "ROOT", "SemanticTree", "TreeNode", "check_object_ids", "internal_id"]

FORMAT = "lattice_tree"
FORMAT_VERSION = 4  # 4: nodes as arrays; 3: leaf lines without their text; 2: vectors.npy; 1: embeddings.npz
ROOT = "root"
NODES = "nodes.jsonl"


def internal_id(level: int, leaf_ids: Iterable[str]) -> str:
    """Stable id of an internal node: ``n{level}-`` plus a hash of its sorted leaf ids.

    Examples:
        >>> internal_id(1, ["b", "a"]) == internal_id(1, ["a", "b"])
        True
        >>> internal_id(1, ["a"]).startswith("n1-")
        True
    """
    h = hashlib.sha1("\x1f".join(sorted(leaf_ids)).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"n{int(level)}-{h}"


_INTERNAL_RE = re.compile(r"^n[0-9]+-[0-9a-f]{12}$")


def check_object_ids(ids: Iterable[str]) -> None:
    """Raise :class:`InvalidInputError` for object ids reserved by the tree (``"root"``, internal-node ids).

    Examples:
        >>> check_object_ids(["a", "b"])
        >>> check_object_ids(["root"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: object id 'root' is reserved by the LATTICE tree; rename the object
    """
    for oid in ids:
        if oid == ROOT or _INTERNAL_RE.match(oid):
            raise InvalidInputError(f"object id {oid!r} is reserved by the LATTICE tree; rename the object")


class SemanticTree:
    """A rooted tree over a corpus: leaves are objects, internal nodes are summaries.

    Args:
        nodes: every node, the root included (parents and depths are recomputed from ``children``).
        objects: the leaves' objects by id.
        embeddings: optional node embeddings by id.
        meta: free build information (builder, config, counts), stored in the manifest.

    Raises:
        IndexFormatError: an inconsistent structure (a cycle, a node with two parents, a leaf without an object,
            an unreachable node).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> SemanticTree.flat([Passage(id="a", text="x")]).num_leaves
        1
    """

    def __init__(
        self,
        nodes: Mapping[str, TreeNode],
        objects: Mapping[str, DataObject],
        *,
        embeddings: Mapping[str, np.ndarray] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.nodes: dict[str, TreeNode] = dict(nodes)
        self.objects: MutableMapping[str, DataObject] = objects if isinstance(objects, StoredObjects) else dict(objects)
        self.embeddings: MutableMapping[str, np.ndarray] = (
            embeddings
            if isinstance(embeddings, NodeVectors)
            else {k: np.asarray(v, dtype=np.float32) for k, v in (embeddings or {}).items()}
        )
        self.meta: dict[str, Any] = dict(meta or {})
        self.reindex()

    # ------------------------------------------------------------------ structure
    def reindex(self) -> None:
        """Recompute parents and depths from ``children`` and check the structure.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x")]); t.reindex(); t.parent("a")
            'root'
        """
        if ROOT not in self.nodes:
            raise IndexFormatError("the tree has no root node")
        for node in self.nodes.values():
            node.parent = None
        seen = {ROOT}
        self.nodes[ROOT].depth = 0
        stack = [ROOT]
        while stack:
            nid = stack.pop()
            node = self.nodes[nid]
            for c in node.children:
                child = self.nodes.get(c)
                if child is None:
                    raise IndexFormatError(f"node {nid!r} has an unknown child {c!r}")
                if c in seen:
                    raise IndexFormatError(f"node {c!r} has two parents or the tree has a cycle")
                seen.add(c)
                child.parent = nid
                child.depth = node.depth + 1
                stack.append(c)
        unreachable = set(self.nodes) - seen
        if unreachable:
            raise IndexFormatError(
                f"{len(unreachable)} node(s) are not reachable from the root, e.g. {min(unreachable)!r}"
            )
        leaf_ids = sorted(n for n, node in self.nodes.items() if node.is_leaf)
        exact = isinstance(self.objects, StoredObjects) and self.objects.holds_exactly(leaf_ids)
        self._leaf_ids = SortedIdOverlay(leaf_ids)
        for nid in leaf_ids:
            if self.nodes[nid].children:
                raise IndexFormatError(f"leaf {nid!r} has children")
            if not exact and nid not in self.objects:
                raise IndexFormatError(f"leaf {nid!r} has no object")
        self._leaf_sets: dict[str, frozenset[str]] = {}
        self._height = max((self.nodes[n].depth for n in self._leaf_ids), default=0)  # read by every search

    def reindex_under(self, node_id: str) -> None:
        """Recompute parents and depths below ``node_id`` from its own (right already), after a change inside its
        subtree (an insertion: a leaf attached, a node split); the leaves found there join :meth:`leaf_ids` and the
        height, and the cached leaf sets of ``node_id`` and its ancestors are dropped. Steps: the subtree's size and
        the tree's height, not the tree's size (:meth:`reindex` walks, and checks, every node).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x")])
            >>> t.nodes["b"] = TreeNode(id="b", text="y", is_leaf=True); t.objects["b"] = Passage(id="b", text="y")
            >>> t.nodes["root"].children.append("b"); t.reindex_under("root")
            >>> t.leaf_ids(), t.parent("b"), t.depth("b")
            (['a', 'b'], 'root', 1)
        """
        stack = [node_id]
        while stack:
            node = self.nodes[stack.pop()]
            for c in node.children:
                child = self.nodes[c]
                child.parent, child.depth = node.id, node.depth + 1
                if child.is_leaf:
                    self._leaf_ids.add(c)
                    self._height = max(self._height, child.depth)
                else:
                    stack.append(c)
        up: str | None = node_id
        while up is not None:
            self._leaf_sets.pop(up, None)
            up = self.nodes[up].parent

    def drop_leaves(self, ids: Iterable[str]) -> None:
        """After a deletion made in place (parents and depths kept right by it): ``ids`` leave the leaves, the
        cached leaf sets go (as in :meth:`reindex`) and the height is found again if no leaf is left at it. Steps:
        ``ids`` times a search of the leaves, and the leaves only when the deepest ones went.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
            >>> t.nodes["root"].children.remove("b"); del t.nodes["b"], t.objects["b"]; t.drop_leaves(["b"])
            >>> t.leaf_ids(), t.height
            (['a'], 1)
        """
        for lid in ids:
            self._leaf_ids.discard(lid)
        self._leaf_sets = {}
        if not any(self.nodes[n].depth == self._height for n in self._leaf_ids):  # stops at the first one there
            self._height = max((self.nodes[n].depth for n in self._leaf_ids), default=0)

    def copy(self, *, nodes: MutableMapping[str, TreeNode] | None = None) -> SemanticTree:
        """A copy to change while this tree is searched: its own nodes (``nodes`` when given: a draft's, see
        :mod:`~retrievekit.core.lattice.tree_draft`), node-vector map and object map; the objects (frozen) and the
        vectors (replaced, never changed in place) shared. Linear in the nodes with a small constant.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x")]); c = t.copy(); c.nodes["root"].children.clear()
            >>> t.children("root"), c.children("root")
            (['a'], [])
        """
        twin = SemanticTree.__new__(SemanticTree)
        twin.nodes = {k: n.clone() for k, n in self.nodes.items()} if nodes is None else nodes  # type: ignore[assignment]
        objects, vectors = self.objects, self.embeddings
        twin.objects = objects.copy() if isinstance(objects, StoredObjects) else dict(objects)
        twin.embeddings = vectors.copy() if isinstance(vectors, NodeVectors) else dict(vectors)
        twin.meta = copy.deepcopy(self.meta)
        twin._leaf_ids, twin._leaf_sets, twin._height = self._leaf_ids.copy(), dict(self._leaf_sets), self._height
        return twin

    @classmethod
    def flat(cls, objects: Sequence[DataObject], *, meta: Mapping[str, Any] | None = None) -> SemanticTree:
        """A one-level tree: every object is a child of the root (used when the corpus has at most M objects).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).height
            1
        """
        nodes = {ROOT: TreeNode(id=ROOT, text="root", children=[o.id for o in objects])}
        for o in objects:
            nodes[o.id] = TreeNode(id=o.id, text=o.index_text(), is_leaf=True)
        return cls(nodes, {o.id: o for o in objects}, meta=meta)

    def children(self, node_id: str) -> list[str]:
        """Child ids of ``node_id`` (in stored order).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).children("a")
            []
        """
        return list(self.nodes[node_id].children)

    def parent(self, node_id: str) -> str | None:
        """Parent id (None for the root).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).parent("root") is None
            True
        """
        return self.nodes[node_id].parent

    def is_leaf(self, node_id: str) -> bool:
        """Whether ``node_id`` is a leaf (a corpus object).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).is_leaf("root")
            False
        """
        return self.nodes[node_id].is_leaf

    def depth(self, node_id: str) -> int:
        """Depth of ``node_id`` (root: 0).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).depth("root")
            0
        """
        return self.nodes[node_id].depth

    def text(self, node_id: str) -> str:
        """Text of a node (summary, or the object's index text for a leaf: read from the object when the leaf does
        not hold it, as in a tree opened from its folder).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x", title="T")])
            >>> t.text("a")
            'T\\nx'
            >>> t.nodes["a"].text = ""; t.text("a")  # not held: its object's
            'T\\nx'
        """
        node = self.nodes[node_id]
        if node.is_leaf and not node.text:
            return self.objects[node_id].index_text()
        return node.text

    def leaf_ids(self) -> list[str]:
        """Sorted ids of all leaves.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="b", text="x"), Passage(id="a", text="y")]).leaf_ids()
            ['a', 'b']
        """
        return list(self._leaf_ids)

    def leaves_under(self, node_id: str) -> list[str]:
        """Ids of the leaves below ``node_id`` (itself when it is a leaf), sorted.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).leaves_under("root")
            ['a']
        """
        out: list[str] = []
        stack = [node_id]
        while stack:
            nid = stack.pop()
            node = self.nodes[nid]
            if node.is_leaf:
                out.append(nid)
            stack.extend(node.children)
        return sorted(out)

    def leaf_set(self, node_id: str) -> frozenset[str]:
        """The leaves below ``node_id`` as a frozenset, computed once per node (until :meth:`reindex`).

        What a node stands for when a relevance judge scores it (``judge_relevance(refs=)``).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
            >>> sorted(t.leaf_set("root")), t.leaf_set("a")
            (['a', 'b'], frozenset({'a'}))
        """
        got = self._leaf_sets.get(node_id)
        if got is None:
            got = frozenset(self.leaves_under(node_id))
            self._leaf_sets[node_id] = got
        return got

    def leaf_ref(self, node_id: str) -> AbstractSet[str]:
        """The leaves below ``node_id`` as a set that is listed only when iterated: membership walks up from the
        object (the tree's height in steps), so a search can say what a node stands for without listing a million
        leaves it will never read.

        What LATTICE passes as ``judge_relevance(refs=)``; :meth:`leaf_set` is the listed set.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
            >>> "a" in t.leaf_ref("root"), "root" in t.leaf_ref("root"), sorted(t.leaf_ref("root")), len(t.leaf_ref("a"))
            (True, False, ['a', 'b'], 1)
        """
        node = self.nodes[node_id]
        if node.is_leaf:
            return frozenset((node_id,))
        return SubtreeLeaves(self, node_id)

    def iter_nodes(self) -> Iterator[TreeNode]:
        """Nodes in breadth-first order from the root.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> [n.id for n in SemanticTree.flat([Passage(id="a", text="x")]).iter_nodes()]
            ['root', 'a']
        """
        queue = collections.deque([ROOT])  # popped from the left in O(1): a list's pop(0) is O(n) a node
        while queue:
            nid = queue.popleft()
            yield self.nodes[nid]
            queue.extend(self.nodes[nid].children)

    @property
    def num_leaves(self) -> int:
        """Number of leaves."""
        return len(self._leaf_ids)

    @property
    def height(self) -> int:
        """Largest leaf depth (computed by :meth:`reindex`, so a search does not walk a million leaves for it)."""
        return self._height

    @property
    def max_branching(self) -> int:
        """Largest number of children of any node (a tree opened from its folder reads it from its arrays)."""
        widest = getattr(self.nodes, "widest", None)
        if widest is not None:
            return int(widest())
        return max((len(n.children) for n in self.nodes.values()), default=0)

    def stats(self) -> dict[str, int]:
        """Counts: nodes, leaves, internal nodes, height, max branching.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).stats()["leaves"]
            1
        """
        return {
            "nodes": len(self.nodes),
            "leaves": self.num_leaves,
            "internal": len(self.nodes) - self.num_leaves,
            "height": self.height,
            "max_branching": self.max_branching,
        }

    def to_networkx(self) -> Any:
        """A ``networkx.DiGraph`` (parent -> child) with node attributes ``text``, ``depth``, ``leaf``.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> g = SemanticTree.flat([Passage(id="a", text="x")]).to_networkx()
            >>> sorted(g.nodes), g.nodes["a"]["leaf"]
            (['a', 'root'], True)
        """
        import networkx as nx

        g = nx.DiGraph()
        for node in self.iter_nodes():
            g.add_node(node.id, text=self.text(node.id), depth=node.depth, leaf=node.is_leaf)
            for c in node.children:
                g.add_edge(node.id, c)
        return g

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the tree to ``path`` atomically (replacing an existing tree only on success).

        Examples:
            >>> import tempfile, pathlib
            >>> from retrievekit.core.types import Passage
            >>> p = SemanticTree.flat([Passage(id="a", text="x")]).save(pathlib.Path(tempfile.mkdtemp()) / "t")
            >>> (p / "manifest.json").is_file()
            True
        """
        path = Path(path)
        with atomic_folder(path) as tmp:
            rows = write_node_arrays(tmp, self.nodes, self._stored_text)
            write_sorted_objects(tmp, (self.objects[i] for i in self._leaf_ids))
            ids = sorted(self.embeddings)
            if ids:
                stray = any(i not in rows for i in ids)  # a vector of no node: named by id, as version 3 did
                write_node_vectors(tmp, ids, self.embeddings, ids_file=stray)
                if not stray:
                    save_arrays(tmp, {VECTOR_ROWS: np.array([rows[i] for i in ids], dtype=np.int32)})
            fields = {"root": ROOT, **self.stats(), "meta": self.meta}
            fields[RECORD_KEY] = corpus_record(self.objects[i] for i in self._leaf_ids)
            write_manifest(tmp, FORMAT, FORMAT_VERSION, fields)
        return path

    def _stored_text(self, node: TreeNode) -> str:
        """The text saved for ``node``: none for a leaf whose text is its object's index text."""
        if node.is_leaf and (not node.text or node.text == self.objects[node.id].index_text()):
            return ""
        return node.text

    def node_line(self, node: TreeNode) -> dict[str, Any]:
        """``node``'s line in ``nodes.jsonl``: a leaf's text only when it is not its object's index text."""
        line = node.to_dict()
        if node.is_leaf and not self._stored_text(node):
            del line["text"]
        return line

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SemanticTree:
        """Read a tree folder; raise :class:`IndexFormatError` for a missing, foreign, corrupt or newer one.

        Examples:
            >>> import pathlib, tempfile
            >>> from retrievekit.core.types import Passage
            >>> folder = SemanticTree.flat([Passage(id="a", text="sun")]).save(pathlib.Path(tempfile.mkdtemp()) / "t")
            >>> SemanticTree.load(folder).num_leaves
            1
            >>> SemanticTree.load(folder.parent).__class__  # not a tree folder
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
        """
        path = Path(path)
        manifest = read_manifest(path, FORMAT, FORMAT_VERSION)
        if manifest.get("format_version") == FORMAT_VERSION:
            return cls._open(path, manifest)
        if manifest.get("format_version") not in (1, 2, 3):
            raise IndexFormatError(
                f"{path} holds a lattice tree of format version {manifest.get('format_version')}; this retrievekit "
                f"reads version {FORMAT_VERSION}: rebuild the tree"
            )
        npath = path / NODES
        if not npath.is_file():
            raise IndexFormatError(f"tree folder {path} has no {NODES}")
        nodes: dict[str, TreeNode] = {}
        try:
            with open(npath, encoding="utf-8") as f:
                for line in f:
                    node = TreeNode.from_line(json.loads(line))
                    nodes[node.id] = node
        except (OSError, ValueError, KeyError, TypeError) as e:
            check_descriptors(f"reading {npath}", e, by_count=False)  # out of file descriptors: not a corrupt tree
            raise IndexFormatError(f"{npath} is corrupt: {e}") from e
        if manifest.get("leaves") is not None and int(manifest["leaves"]) != sum(n.is_leaf for n in nodes.values()):
            raise IndexFormatError(f"{path} is truncated: the manifest counts {manifest['leaves']} leaves")
        objects: Mapping[str, DataObject] = (
            StoredObjects.open(path, sorted(n for n, node in nodes.items() if node.is_leaf))
            if (path / OFFSETS).is_file()
            else {o.id: o for o in read_objects(path)}  # saved before the offsets were written: read whole
        )
        return cls(nodes, objects, embeddings=read_node_vectors(path), meta=_meta(path, manifest, stacklevel=3))

    @classmethod
    def _open(cls, path: Path, manifest: Mapping[str, Any]) -> SemanticTree:
        """A version-4 folder: nodes, objects and vectors left in their files, each read when asked for
        (:mod:`~retrievekit.core.lattice.node_arrays`); the structure checked by array operations, not walked."""
        stored = open_node_arrays(path)
        leaf_ids = stored.leaf_ids()
        if int(manifest.get("leaves", len(leaf_ids))) != len(leaf_ids):
            raise IndexFormatError(f"{path} is truncated: the manifest counts {manifest['leaves']} leaves")
        vectors: MutableMapping[str, np.ndarray]
        if (path / f"{VECTOR_ROWS}.npy").is_file():
            rows = PreadArray.open(path / f"{VECTOR_ROWS}.npy", np.int32)
            matrix = PreadArray.open(path / f"{VECTORS}.npy", np.float32, ndim=2)  # rows read per search, unmapped
            if len(rows) != len(matrix):
                raise IndexFormatError(f"{path / VECTOR_ROWS}.npy does not name the rows of {VECTORS}.npy")
            vectors = NodeVectors.over_rows(VectorRows(stored.ids, rows), matrix)
        else:  # no vectors, or one naming no node: by id (vector_ids.json)
            vectors = read_node_vectors(path)
        tree = cls.__new__(cls)
        tree.nodes = NodeOverlay(stored, is_draft=False)  # type: ignore[assignment]
        tree.objects = StoredObjects.open(path, leaf_ids)
        tree.embeddings, tree.meta = vectors, _meta(path, manifest, stacklevel=4)
        tree._leaf_ids, tree._leaf_sets, tree._height = SortedIdOverlay(leaf_ids), {}, stored.height
        return tree

    def check_ids(self) -> None:
        """Raise :class:`InvalidInputError` when an object id clashes with an internal node id.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SemanticTree.flat([Passage(id="a", text="x")]).check_ids()
        """
        for nid, node in self.nodes.items():
            if not node.is_leaf and nid in self.objects:
                raise InvalidInputError(f"object id {nid!r} clashes with an internal node id; rename the object")

    def __repr__(self) -> str:  # counts only: no walk of the nodes (an opened tree reads a node when asked for)
        internal = len(self.nodes) - self.num_leaves
        return f"SemanticTree(<{self.num_leaves} leaves, {internal} internal, height {self.height}>)"


def _meta(path: Path, manifest: Mapping[str, Any], *, stacklevel: int) -> dict[str, Any]:
    """A tree folder's build information, with a warning when it says the tree is degraded."""
    meta = dict(manifest.get("meta") or {})
    if meta.get("degraded"):
        warnings.warn(
            DegradedTreeWarning(f"the LATTICE tree at {path} is degraded: {meta['degraded']}"), stacklevel=stacklevel
        )
    return meta
