"""Incremental insertion: add documents to a built tree without a rebuild.

Each new document is embedded and routed from the root down to the child with the highest cosine similarity to
the document (node embeddings are stored in the tree), until a node whose children are leaves (or a flat root).
It is attached there. A node that now has more than M children is split in place: its children are clustered
into groups of at most M that become new internal nodes under it. Finally the summaries of every touched internal
node are refreshed bottom-up from their children (one ``"lattice.summary"`` call each; the nodes of one depth are
independent, so they are one batch, sent side by side by the sync driver at ``max_concurrency``) and re-embedded. Existing node ids never
change; new internal nodes get ids from their level and leaves.

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.fakes import FixedReplyLLM
    >>> from retrievekit.core.fakes import LengthEmbedder as Emb
    >>> tree = SemanticTree.flat([Passage(id="a", text="x")])
    >>> report = insert_documents(tree, [Passage(id="b", text="yy")], FixedReplyLLM("A topic"), Emb(), TreeBuildConfig(max_children=2))
    >>> sorted(tree.leaf_ids()), report["inserted"]
    (['a', 'b'], 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.build import embed_texts
from retrievekit.core.lattice.clustering import balanced_groups
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import object_short_text, read_summary, short_text, summary_call
from retrievekit.core.lattice.tree import ROOT, SemanticTree, TreeNode, check_object_ids, internal_id
from retrievekit.core.llm.calls import Step
from retrievekit.core.llm.drivers import drive
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["insert_documents"]


def _child_text(tree: SemanticTree, nid: str, chars: int) -> str:
    if tree.is_leaf(nid):
        return object_short_text(tree.objects[nid], chars)
    return short_text(tree.text(nid), chars)


def _vector(tree: SemanticTree, nid: str, embedder: Embedder) -> np.ndarray:
    v = tree.embeddings.get(nid)
    if v is None:
        v = embed_texts(embedder, [tree.text(nid)[:2000]])[0]
        tree.embeddings[nid] = v
    return v


def _new_documents(tree: SemanticTree, documents: Sequence[DataObject]) -> list[DataObject]:
    """The documents, checked: a valid corpus of unique, unreserved ids not yet in ``tree``."""
    docs = check_corpus(documents)
    check_object_ids(d.id for d in docs)
    for d in docs:
        if d.id in tree.nodes:
            raise InvalidInputError(f"document id {d.id!r} is already in the tree")
    return docs


def _descend(tree: SemanticTree, v: np.ndarray, embedder: Embedder) -> tuple[str, list[str]]:
    """From the root, follow the most similar internal child down to a node with leaf children.

    Returns that node and the path to it (root first).
    """
    node = ROOT
    path = [ROOT]
    while True:
        kids = tree.nodes[node].children
        internal = [c for c in kids if not tree.is_leaf(c)]
        if not internal or len(internal) < len(kids):
            break
        node = max(internal, key=lambda c: (float(_vector(tree, c, embedder) @ v), c))
        path.append(node)
    return node, path


def _attach(tree: SemanticTree, doc: DataObject, v: np.ndarray, node: str) -> None:
    """Add ``doc`` as a leaf (with vector ``v``) under ``node``."""
    tree.nodes[doc.id] = TreeNode(id=doc.id, text=doc.index_text(), is_leaf=True)
    tree.objects[doc.id] = doc
    tree.embeddings[doc.id] = v
    tree.nodes[node].children.append(doc.id)


def _split_node(tree: SemanticTree, node: str, cfg: TreeBuildConfig, embedder: Embedder, pending: str) -> list[str]:
    """Regroup an overfull node's children under new internal nodes (singletons stay); returns the new ids."""
    kids = list(tree.nodes[node].children)
    x = np.stack([_vector(tree, c, embedder) for c in kids])
    groups = balanced_groups(x, cfg.max_children, seed=cfg.seed)
    depth = tree.depth(node) + 1
    new_children = []
    created: list[str] = []
    for g in groups:
        members = [kids[i] for i in g]
        if len(members) == 1:
            new_children.append(members[0])
            continue
        leaves = sorted(lid for c in members for lid in _leaves(tree, c, docs_pending=pending))
        nid = internal_id(depth, leaves)
        while nid in tree.nodes:
            nid = nid + "x"
        tree.nodes[nid] = TreeNode(id=nid, text="", children=members)
        new_children.append(nid)
        created.append(nid)
    tree.nodes[node].children = new_children
    return created


def _refresh_step(
    tree: SemanticTree, touched: set[str], cfg: TreeBuildConfig, trace: Trace, stats: dict[str, int]
) -> Step[list[str]]:
    """Re-summarise every touched internal node as a step, deepest first: one batch of ``"lattice.summary"`` calls
    per depth (a node's summary reads its children's, refreshed in the batch before); returns the refreshed ids."""
    nodes = [n for n in touched if n != ROOT and not tree.is_leaf(n)]
    refreshed: list[str] = []
    for depth in sorted({tree.depth(n) for n in nodes}, reverse=True):
        batch = sorted(n for n in nodes if tree.depth(n) == depth)
        texts = [[_child_text(tree, c, cfg.child_chars) for c in tree.children(n)] for n in batch]
        replies = yield [summary_call(t, max_tokens=cfg.summary_max_tokens) for t in texts]
        for nid, kids, reply in zip(batch, texts, replies, strict=True):
            tree.nodes[nid].text = read_summary(reply, kids, trace=trace, stats=stats)
        refreshed.extend(batch)
    return refreshed


def _refresh_summaries(
    tree: SemanticTree, touched: set[str], llm: ChatLLM, embedder: Embedder, cfg: TreeBuildConfig, trace: Trace
) -> tuple[int, dict[str, int]]:
    """Re-summarise (:func:`_refresh_step`, driven at ``cfg.max_concurrency``) and re-embed every touched internal
    node; ``(refreshed, summary stats)``."""
    stats: dict[str, int] = {}
    refreshed = drive(
        _refresh_step(tree, touched, cfg, trace, stats), llm, trace=trace, max_concurrency=cfg.max_concurrency
    )
    for nid, v in zip(refreshed, embed_texts(embedder, [tree.nodes[n].text for n in refreshed]), strict=True):
        tree.embeddings[nid] = v
    return len(refreshed), stats


def insert_documents(
    tree: SemanticTree,
    documents: Sequence[DataObject],
    llm: ChatLLM,
    embedder: Embedder,
    config: TreeBuildConfig | None = None,
    *,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """Insert ``documents`` into ``tree`` in place; returns a report (inserted, split nodes, refreshed summaries).

    Raises:
        InvalidInputError: an id already in the tree (or repeated in ``documents``), or a reserved id.

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun")])
        >>> insert_documents(tree, [Passage(id="a", text="sun again")], llm=None, embedder=None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: document id 'a' is already in the tree
    """
    docs = _new_documents(tree, documents)
    cfg = config or TreeBuildConfig(max_children=int(tree.meta.get("config", {}).get("max_children", 10)))
    trace = trace if trace is not None else Trace()
    vecs = embed_texts(embedder, [d.index_text()[:2000] for d in docs])
    touched: set[str] = set()
    splits = 0
    for d, v in zip(docs, vecs, strict=True):
        node, path = _descend(tree, v, embedder)
        _attach(tree, d, v, node)
        touched.update(path)
        if len(tree.nodes[node].children) > cfg.max_children:
            splits += 1
            touched.update(_split_node(tree, node, cfg, embedder, pending=d.id))
        tree.reindex()
    refreshed, stats = _refresh_summaries(tree, touched, llm, embedder, cfg, trace)
    tree.reindex()
    tree.meta["inserted"] = int(tree.meta.get("inserted", 0)) + len(docs)
    return {"inserted": len(docs), "split_nodes": splits, "refreshed_summaries": refreshed, **stats}


def _leaves(tree: SemanticTree, nid: str, docs_pending: str) -> list[str]:
    node = tree.nodes[nid]
    if node.is_leaf:
        return [nid]
    out: list[str] = []
    for c in node.children:
        out.extend(_leaves(tree, c, docs_pending))
    return out
