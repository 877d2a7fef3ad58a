"""What a change did to a LATTICE tree, as JSON: :func:`tree_delta` between the tree before and after it, and
:func:`apply_tree_delta` to make it again on the tree before.

A living LATTICE index (:class:`~retrievekit.core.lattice.index.LiveLattice`) writes a change to its folder as one
line of its change log (:mod:`~retrievekit.core.index.live_log`); this is the tree's part of that line: the nodes the
change added or changed (by id, as ``nodes.jsonl`` holds them: a leaf without its text when its text is its
object's), the ids of the nodes it removed, the node vectors it set (``float32``, base64) and removed, and the tree's
build information (``meta``). What it writes is what the change touched (about the tree's height in nodes per changed
document), not the tree. Finding the changed nodes compares the nodes a draft read
(:mod:`~retrievekit.core.lattice.tree_draft`), or every node of a copy; the vectors are compared by identity (a
draft or copy shares the unchanged ones).

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree, TreeNode
    >>> from retrievekit.core.types import Passage
    >>> old = SemanticTree.flat([Passage(id="a", text="x")], meta={"builder": "flat"})
    >>> new = old.copy()
    >>> new.nodes["b"] = TreeNode(id="b", text="y", is_leaf=True); new.objects["b"] = Passage(id="b", text="y")
    >>> new.nodes["root"].children.append("b"); new.embeddings["b"] = [1.0, 0.0]; new.reindex_under("root")
    >>> delta = tree_delta(old, new); [n["id"] for n in delta["nodes"]], delta["gone"]
    (['b', 'root'], [])
    >>> again = old.copy(); apply_tree_delta(again, delta, removed=[], added=["b"], objects=new.objects)
    >>> again.reindex(); again.leaf_ids(), again.embeddings["b"].tolist()
    (['a', 'b'], [1.0, 0.0])
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.lattice.node_vectors import NodeVectors
from retrievekit.core.lattice.tree import SemanticTree, TreeNode
from retrievekit.core.types import DataObject

__all__ = ["apply_tree_delta", "tree_delta"]


def tree_delta(
    old: SemanticTree,
    new: SemanticTree,
    touched: Mapping[str, TreeNode] | None = None,
    gone: Sequence[str] | None = None,
) -> dict[str, Any]:
    """What turned ``old`` into ``new`` (``new`` a changed :meth:`~SemanticTree.copy` of ``old``), as JSON: see the
    module docstring. ``touched`` and ``gone`` (what :func:`~retrievekit.core.lattice.tree_draft.settle` returns for
    a draft) limit the nodes compared to those the change read or added and the ones it removed.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x")])
        >>> tree_delta(t, t.copy())
        {'nodes': [], 'gone': [], 'vectors': {}, 'unvectored': [], 'meta': {}}
    """
    nodes = new.nodes if touched is None else touched
    changed = sorted((n for nid, n in nodes.items() if _differs(old.nodes.get(nid), n)), key=lambda n: n.id)
    return {
        "nodes": [new.node_line(n) for n in changed],
        "gone": sorted(set(old.nodes) - set(new.nodes)) if gone is None else sorted(gone),
        "vectors": {k: _encode(v) for k, v in _set_vectors(old.embeddings, new.embeddings).items()},
        "unvectored": sorted(set(old.embeddings) - set(new.embeddings)),
        "meta": new.meta,
    }


def apply_tree_delta(
    tree: SemanticTree,
    delta: Mapping[str, Any],
    *,
    removed: Sequence[str],
    added: Sequence[str],
    objects: Mapping[str, DataObject],
) -> None:
    """Make the change ``delta`` records on ``tree`` in place: its nodes, vectors and meta, and the objects the same
    change ``removed`` (ids) and ``added`` (ids, read from ``objects``: the index's held objects; an id it no longer
    holds was removed by a later change). Call :meth:`~SemanticTree.reindex` after the last one.

    Raises:
        IndexFormatError: a delta that is not one (a log line damaged in a way its checksum did not catch).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x")])
        >>> apply_tree_delta(t, {"nodes": 1}, removed=[], added=[], objects={})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: a LATTICE tree change in the change log is malformed (...)
    """
    try:
        for nid in delta["gone"]:
            tree.nodes.pop(str(nid), None)
        for line in delta["nodes"]:
            node = TreeNode.from_line(line)
            tree.nodes[node.id] = node
        for nid in delta["unvectored"]:
            tree.embeddings.pop(str(nid), None)
        for nid, data in delta["vectors"].items():
            tree.embeddings[str(nid)] = np.frombuffer(base64.b64decode(data), dtype="<f4").astype(np.float32)
        tree.meta = dict(delta["meta"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise IndexFormatError(f"a LATTICE tree change in the change log is malformed ({e!r})") from e
    for oid in removed:
        tree.objects.pop(oid, None)
    for oid in added:
        if oid in objects:
            tree.objects[oid] = objects[oid]


def _differs(before: TreeNode | None, after: TreeNode) -> bool:
    if before is None:
        return True
    return (before.text, before.children, before.is_leaf) != (after.text, after.children, after.is_leaf)


def _set_vectors(old: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The vectors ``new`` holds that ``old`` does not hold as the same array: set (or set again) by the change.
    A copy's memory-mapped rows are ``old``'s own, so only the ones held in memory are compared."""
    if isinstance(new, NodeVectors):
        held = old.in_memory if isinstance(old, NodeVectors) else {}
        return {k: v for k, v in new.in_memory.items() if held.get(k) is not v}
    return {k: v for k, v in new.items() if old.get(k) is not v}


def _encode(vector: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")
