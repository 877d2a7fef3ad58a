"""Incremental deletion: remove documents from a built tree without a rebuild.

Each deleted document's leaf is removed from its parent; then, walking up from that parent:

* an internal node left with no children is pruned from its parent;
* a node left with fewer than :func:`~retrievekit.core.lattice.refresh.min_fill` children (half of M) is merged
  into its nearest internal sibling (cosine of their stored vectors, ties by id) when the two fit in M children,
  and the walk goes on at the parent, which lost a child; when they do not fit, their children are shared out in
  two halves between them (the parent keeps its count, the walk stops); a node of one child with no sibling to
  join gives its child to its parent;
* a root left with one internal child takes that child's children (the tree loses a level).

Each step keeps the parents right; then only the depths below a node given to its parent are walked again, and the
leaves and the height updated (:meth:`~retrievekit.core.lattice.tree.SemanticTree.drop_leaves`), so a deletion reads
the nodes near its path, not the tree (the whole tree is re-indexed only when the root lost a level).

The summaries of the touched internal nodes are then refreshed the way the tree was built
(:func:`~retrievekit.core.lattice.refresh.refresh_summaries`: one ``"lattice.summary"`` call each, none with
``summaries="extractive"``). A deleted document touches the internal nodes on its path (at most its depth minus
one); a merge swaps a removed node for the sibling it joins and a share-out adds one sibling while the path loses
none, so the calls are at most the tree's height per deleted document (``summary_bound`` in the report, both counted
in the trace).

Examples:
    >>> from retrievekit.core.fakes import LengthEmbedder
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> tree = SemanticTree.flat([Passage(id=i, text=i) for i in "abc"])
    >>> report = delete_documents(tree, ["b"], None, LengthEmbedder())
    >>> tree.leaf_ids(), report["deleted"], report["summary_calls"]
    (['a', 'c'], 1, 0)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.drift import record_baseline
from retrievekit.core.lattice.refresh import (
    centroid_vector,
    halves,
    min_fill,
    node_vector,
    refresh_summaries,
    require_embedder,
    tree_config,
)
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace

__all__ = ["delete_documents"]


def _checked_ids(tree: SemanticTree, ids: Iterable[str]) -> list[str]:
    """``ids`` deduplicated and sorted; each must be a leaf of ``tree``, and one must stay."""
    if isinstance(ids, str):
        raise InvalidInputError("ids must be a list of document ids, not one string")
    wanted = sorted({str(i) for i in ids})
    unknown = [i for i in wanted if i not in tree.nodes or not tree.is_leaf(i)]
    if unknown:
        raise InvalidInputError(f"ids: {len(unknown)} not a document of the tree, e.g. {unknown[:5]}")
    if wanted and len(wanted) >= tree.num_leaves:
        raise InvalidInputError("ids: deleting every document of the tree leaves nothing to search; build a new tree")
    return wanted


def _set_children(tree: SemanticTree, nid: str, kids: list[str]) -> None:
    tree.nodes[nid].children = kids
    for c in kids:
        tree.nodes[c].parent = nid


def _remove(tree: SemanticTree, nid: str, touched: set[str]) -> str:
    """Take ``nid`` out of its parent and the tree (its children are the caller's); returns the parent."""
    parent = tree.nodes[nid].parent
    assert parent is not None  # the root is never removed
    tree.nodes[parent].children.remove(nid)
    del tree.nodes[nid]
    tree.embeddings.pop(nid, None)
    touched.discard(nid)
    return parent


def _nearest_sibling(tree: SemanticTree, nid: str, embedder: Embedder | None) -> str | None:
    parent = tree.nodes[nid].parent
    assert parent is not None
    sibs = [s for s in tree.nodes[parent].children if s != nid and not tree.is_leaf(s)]
    if not sibs:
        return None
    v = node_vector(tree, nid, embedder)
    return max(sibs, key=lambda s: (round(float(node_vector(tree, s, embedder) @ v), 9), s))


def _rebalance(
    tree: SemanticTree,
    nid: str,
    cfg: TreeBuildConfig,
    embedder: Embedder | None,
    touched: set[str],
    moved: list[str],
) -> str | None:
    """Fix the node ``nid`` that just lost a child; returns the node to look at next (None: done). A node moved one
    level up (and the root, when it lost a level) is added to ``moved``: the depths below it changed."""
    node = tree.nodes[nid]
    if nid == ROOT:
        while len(node.children) == 1 and not tree.is_leaf(node.children[0]):
            moved.append(ROOT)
            only = node.children[0]
            _set_children(tree, ROOT, list(tree.nodes[only].children))
            del tree.nodes[only]
            tree.embeddings.pop(only, None)
            touched.discard(only)
        return None
    if not node.children:
        return _remove(tree, nid, touched)
    if len(node.children) >= min_fill(cfg.max_children):
        return None
    sib = _nearest_sibling(tree, nid, embedder)
    if sib is None:
        if len(node.children) > 1:
            return None  # under-full with no sibling to join: left as it is (drift() counts it)
        parent = tree.nodes[nid].parent
        assert parent is not None
        at = tree.nodes[parent].children.index(nid)
        (child,) = node.children
        _remove(tree, nid, touched)
        tree.nodes[parent].children.insert(at, child)
        tree.nodes[child].parent = parent
        moved.append(child)
        return None
    kids = tree.nodes[sib].children + node.children
    touched.add(sib)
    if len(kids) <= cfg.max_children:
        _set_children(tree, sib, kids)
        tree.embeddings[sib] = centroid_vector(tree, kids, embedder)
        return _remove(tree, nid, touched)
    first, second = halves(tree, kids, embedder)
    for owner, part in ((nid, first), (sib, second)):
        _set_children(tree, owner, part)
        tree.embeddings[owner] = centroid_vector(tree, part, embedder)
    return None


def _reindex(tree: SemanticTree, deleted: list[str], moved: list[str]) -> None:
    """Depths below the nodes ``moved`` up a level and the leaves after ``deleted`` went: the subtrees that moved,
    not the tree (the whole tree when the root lost a level). Parents were kept right by each step."""
    if ROOT in moved:
        tree.reindex()
        return
    for nid in moved:
        node = tree.nodes.get(nid)
        if node is not None and node.parent is not None:
            node.depth = tree.nodes[node.parent].depth + 1
            tree.reindex_under(nid)
    tree.drop_leaves(deleted)


def delete_documents(
    tree: SemanticTree,
    ids: Iterable[str],
    llm: ChatLLM | None,
    embedder: Embedder,
    config: TreeBuildConfig | None = None,
    *,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """Delete the documents ``ids`` from ``tree`` in place (see the module docstring); returns a report (deleted,
    pruned and merged nodes, refreshed summaries, summary calls and their bound). ``config`` defaults to the one the
    tree was built with; ``llm`` may be None with ``summaries="extractive"``.

    Raises:
        InvalidInputError: an id that is not a document of the tree, or every document.

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> delete_documents(SemanticTree.flat([Passage(id="a", text="x")]), ["root"], None, None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: ids: 1 not a document of the tree, e.g. ['root']
    """
    wanted = _checked_ids(tree, ids)
    embedder = require_embedder(embedder)
    cfg = config or tree_config(tree)
    trace = trace if trace is not None else Trace()
    record_baseline(tree)
    height = tree.height
    nodes_before = len(tree.nodes)
    touched: set[str] = set()
    moved: list[str] = []
    for lid in wanted:
        parent = tree.nodes[lid].parent
        assert parent is not None
        cur: str | None = parent
        while cur is not None:  # the path up from the leaf: every internal node on it is touched
            touched.add(cur)
            cur = tree.nodes[cur].parent
        tree.nodes[parent].children.remove(lid)
        del tree.nodes[lid], tree.objects[lid]
        tree.embeddings.pop(lid, None)
        nxt: str | None = parent
        while nxt is not None:
            nxt = _rebalance(tree, nxt, cfg, embedder, touched, moved)
    _reindex(tree, wanted, moved)
    tree.meta["deleted"] = int(tree.meta.get("deleted", 0)) + len(wanted)
    report = refresh_summaries(tree, touched, llm, embedder, cfg, trace, changed=len(wanted), height=height)
    removed = nodes_before - len(tree.nodes) - len(wanted)
    return {"deleted": len(wanted), "removed_nodes": removed, **report}
