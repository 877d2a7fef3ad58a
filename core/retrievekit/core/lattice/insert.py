"""Incremental insertion: add documents to a built tree without a rebuild.

Each new document is embedded and routed from the root down to the child with the highest cosine similarity to
the document (node embeddings are stored in the tree), until a node whose children are leaves (or a flat root).
It is attached there. A node that now has more than M children is cut in two halves along its children's first
principal direction: the second half becomes a new sibling when the parent has room (the tree keeps its depth),
else both halves become new nodes under it (the root's split adds a level). Finally the summaries of every touched
internal node are refreshed bottom-up, the way the tree was built (:mod:`~retrievekit.core.lattice.refresh`: one
``"lattice.summary"`` call each, a depth's nodes one batch; none with ``summaries="extractive"``) and re-embedded.
A document touches the internal nodes on its path (at most its depth minus one, the root is never summarised) and
those its split adds (one sibling, or two nodes a level deeper), so the calls are at most the tree's height per
inserted document (``summary_bound`` in the report, both counted in the trace). Existing node ids never change; new
internal nodes get ids from their level and leaves.

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
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.drift import record_baseline
from retrievekit.core.lattice.refresh import (
    centroid_vector,
    halves,
    node_vector,
    refresh_summaries,
    require_embedder,
    tree_config,
)
from retrievekit.core.lattice.tree import ROOT, SemanticTree, TreeNode, check_object_ids, internal_id
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["insert_documents"]


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
        node = max(internal, key=lambda c: (float(node_vector(tree, c, embedder) @ v), c))
        path.append(node)
    return node, path


def _attach(tree: SemanticTree, doc: DataObject, v: np.ndarray, node: str) -> None:
    """Add ``doc`` as a leaf (with vector ``v``) under ``node``."""
    tree.nodes[doc.id] = TreeNode(id=doc.id, text=doc.index_text(), is_leaf=True)
    tree.objects[doc.id] = doc
    tree.embeddings[doc.id] = v
    tree.nodes[node].children.append(doc.id)


def _new_node(tree: SemanticTree, parent: str, members: list[str], embedder: Embedder) -> str:
    """Add an internal node over ``members`` that ``parent`` is to hold (its vector: their centroid, until its
    summary is embedded)."""
    level = tree.depth(parent) + 1
    nid = internal_id(level, sorted(lid for c in members for lid in tree.leaves_under(c)))
    while nid in tree.nodes:
        nid = nid + "x"
    tree.nodes[nid] = TreeNode(id=nid, text="", children=list(members), depth=level, parent=parent)
    tree.embeddings[nid] = centroid_vector(tree, members, embedder)
    return nid


def _split_node(tree: SemanticTree, path: list[str], cfg: TreeBuildConfig, embedder: Embedder) -> list[str]:
    """Cut the overfull last node of ``path`` in two halves (:func:`~retrievekit.core.lattice.refresh.halves`);
    returns the new ids. When its parent has room, the second half becomes a new sibling (the depth stays); else
    (the root, or a full parent) both halves become new nodes under it (one level deeper; a half of one child stays).
    """
    node = path[-1]
    first, second = halves(tree, tree.nodes[node].children, embedder)
    parent = path[-2] if len(path) > 1 else None
    if parent is not None and len(tree.nodes[parent].children) < cfg.max_children:
        tree.nodes[node].children = first
        tree.embeddings[node] = centroid_vector(tree, first, embedder)
        nid = _new_node(tree, parent, second, embedder)
        siblings = tree.nodes[parent].children
        siblings.insert(siblings.index(node) + 1, nid)
        return [nid]
    kids: list[str] = []
    created: list[str] = []
    for members in (first, second):
        if len(members) == 1:
            kids.extend(members)
            continue
        created.append(_new_node(tree, node, members, embedder))
        kids.append(created[-1])
    tree.nodes[node].children = kids
    return created


def insert_documents(
    tree: SemanticTree,
    documents: Sequence[DataObject],
    llm: ChatLLM | None,
    embedder: Embedder,
    config: TreeBuildConfig | None = None,
    *,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """Insert ``documents`` into ``tree`` in place; returns a report (inserted, split nodes, refreshed summaries,
    summary calls and their bound). ``config`` defaults to the one the tree was built with (``meta.config``); ``llm``
    may be None with ``summaries="extractive"``.

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
    embedder = require_embedder(embedder)
    cfg = config or tree_config(tree)
    trace = trace if trace is not None else Trace()
    record_baseline(tree)
    vecs = embed_texts(embedder, [d.index_text()[:2000] for d in docs])
    touched: set[str] = set()
    splits = 0
    for d, v in zip(docs, vecs, strict=True):
        node, path = _descend(tree, v, embedder)
        _attach(tree, d, v, node)
        touched.update(path)
        created: list[str] = []
        if len(tree.nodes[node].children) > cfg.max_children:
            splits += 1
            created = _split_node(tree, path, cfg, embedder)
            touched.update(created)
        for top in (node, *created):  # the subtrees changed: the tree's height in steps, not its size
            tree.reindex_under(top)
    tree.meta["inserted"] = int(tree.meta.get("inserted", 0)) + len(docs)
    report = refresh_summaries(tree, touched, llm, embedder, cfg, trace, changed=len(docs), height=tree.height)
    return {"inserted": len(docs), "split_nodes": splits, **report}
