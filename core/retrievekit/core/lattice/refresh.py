"""What a change to a built tree shares: the build's settings, node vectors, halving a group, and the refresh of the
summaries of the internal nodes a change touched.

:func:`refresh_summaries` rewrites every touched internal node's text, deepest first, the way the tree was built
(``meta.config.summaries``): with ``"llm"`` one ``"lattice.summary"`` call per node, the nodes of one depth one
batch of a step (:mod:`retrievekit.core.llm.calls`) the sync driver sends at ``max_concurrency``; with
``"extractive"`` the children's short texts nearest their centroid, no call. Touched nodes are re-embedded. What
an insertion or a deletion touches is at most the tree's height per changed document (see
:mod:`~retrievekit.core.lattice.insert` and :mod:`~retrievekit.core.lattice.delete`), so the summary calls are at
most ``height x changed documents``; both are counted in the trace (``lattice.update.summary_calls``,
``lattice.update.summary_bound``).

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> t = SemanticTree.flat([Passage(id="a", text="x")], meta={"config": {"max_children": 4}})
    >>> tree_config(t).max_children, min_fill(4), min_fill(10)
    (4, 2, 5)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.build import LEAF_EMBED_CHARS, embed_texts
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import (
    CHARS_PER_TOKEN,
    centroid_summary,
    extractive_label,
    object_short_text,
    read_summary,
    short_text,
    summary_call,
)
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.llm.calls import Step
from retrievekit.core.llm.drivers import drive
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace

__all__ = [
    "centroid_vector",
    "halves",
    "min_fill",
    "node_vector",
    "refresh_summaries",
    "require_embedder",
    "tree_config",
]


def require_embedder(embedder: Any) -> Embedder:
    """``embedder``, or an :class:`InvalidInputError` when it has no ``embed_documents`` (a change re-embeds the
    documents and summaries it writes, before the tree is touched).

    Examples:
        >>> require_embedder(None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: embedder: a tree change needs the embedder the tree was built with, got NoneType
    """
    if not callable(getattr(embedder, "embed_documents", None)):
        raise InvalidInputError(
            f"embedder: a tree change needs the embedder the tree was built with, got {type(embedder).__name__}"
        )
    return embedder


def tree_config(tree: SemanticTree) -> TreeBuildConfig:
    """The settings the tree was built with (``meta.config``; the defaults for what it does not record).

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> tree_config(SemanticTree.flat([Passage(id="a", text="x")])).summaries
        'llm'
    """
    saved = tree.meta.get("config") or {}
    known = {f.name for f in fields(TreeBuildConfig)}
    kw: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in saved.items() if k in known}
    try:
        return TreeBuildConfig(**kw)
    except (InvalidInputError, TypeError, ValueError):  # a tree of an older retrievekit: keep what is readable
        return TreeBuildConfig(max_children=int(saved.get("max_children", 10)))


def min_fill(max_children: int) -> int:
    """The fewest children a (non-root) internal node should keep: half of M (a split leaves two halves of at least
    that), and at least 2. A deletion merges a node below it into a sibling.

    Examples:
        >>> min_fill(2), min_fill(3), min_fill(11)
        (2, 2, 5)
    """
    return max(2, int(max_children) // 2)


def node_vector(tree: SemanticTree, nid: str, embedder: Embedder | None) -> np.ndarray:
    """The stored vector of ``nid`` (embedded from its text and stored when missing).

    Examples:
        >>> from retrievekit.core.fakes import LengthEmbedder
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="xyz")])
        >>> node_vector(t, "a", LengthEmbedder()).shape, "a" in t.embeddings
        ((2,), True)
    """
    v = tree.embeddings.get(nid)
    if v is None:
        if embedder is None:
            raise InvalidInputError(f"node {nid!r} has no stored vector: pass the embedder the tree was built with")
        v = embed_texts(embedder, [tree.text(nid)[:LEAF_EMBED_CHARS]])[0]
        tree.embeddings[nid] = v
    return v


def centroid_vector(tree: SemanticTree, kids: Sequence[str], embedder: Embedder | None) -> np.ndarray:
    """The unit-length mean of the children's vectors (a new node's vector until its summary is embedded).

    Examples:
        >>> import numpy as np
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
        >>> t.embeddings = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
        >>> [round(float(v), 3) for v in centroid_vector(t, ["a", "b"], None)]
        [0.707, 0.707]
    """
    x = np.stack([node_vector(tree, c, embedder) for c in kids]).astype(np.float32)
    c = x.mean(0)
    return c / max(float(np.linalg.norm(c)), 1e-12)


def halves(tree: SemanticTree, kids: Sequence[str], embedder: Embedder | None) -> tuple[list[str], list[str]]:
    """``kids`` cut in two halves (the first has the extra one) along the first principal direction of their
    vectors (ties by id); each half keeps the children's stored order.

    Examples:
        >>> import numpy as np
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id=i, text=i) for i in "abcd"])
        >>> t.embeddings = {i: np.array([v, 1.0]) for i, v in zip("abcd", [0.0, 5.0, 0.1, 5.1])}
        >>> sorted(map(sorted, halves(t, list("abcd"), None)))
        [['a', 'c'], ['b', 'd']]
    """
    x = np.stack([node_vector(tree, c, embedder) for c in kids]).astype(np.float64)
    x = x - x.mean(0)
    proj = np.zeros(len(kids))
    if np.abs(x).sum() > 1e-9:
        _, _, vt = np.linalg.svd(x, full_matrices=False)
        axis = vt[0] * (1.0 if vt[0][int(np.argmax(np.abs(vt[0])))] >= 0 else -1.0)  # a fixed sign
        proj = np.round(x @ axis, 9)
    order = sorted(range(len(kids)), key=lambda i: (proj[i], kids[i]))
    first = set(order[: (len(kids) + 1) // 2])
    return [c for i, c in enumerate(kids) if i in first], [c for i, c in enumerate(kids) if i not in first]


def _short(tree: SemanticTree, nid: str, chars: int) -> str:
    if tree.is_leaf(nid):
        return object_short_text(tree.objects[nid], chars)
    return short_text(tree.text(nid), chars)


def _with_titles(text: str, kids: Sequence[str], cfg: TreeBuildConfig) -> str:
    return f"{text} [{extractive_label(kids, 160)}]" if cfg.append_child_titles else text


def _by_depth(tree: SemanticTree, touched: Iterable[str]) -> list[list[str]]:
    """The live internal non-root nodes of ``touched``, grouped by depth, deepest first (ids sorted)."""
    nodes = {n for n in touched if n in tree.nodes and n != ROOT and not tree.is_leaf(n)}
    return [
        sorted(n for n in nodes if tree.depth(n) == d) for d in sorted({tree.depth(n) for n in nodes}, reverse=True)
    ]


def _llm_step(
    tree: SemanticTree, levels: list[list[str]], cfg: TreeBuildConfig, trace: Trace, stats: dict[str, int]
) -> Step[None]:
    """One batch of ``"lattice.summary"`` calls per depth, deepest first (a node reads its children's new texts)."""
    for batch in levels:
        texts = [[_short(tree, c, cfg.child_chars) for c in tree.children(n)] for n in batch]
        replies = yield [summary_call(t, max_tokens=cfg.summary_max_tokens) for t in texts]
        for nid, kids, reply in zip(batch, texts, replies, strict=True):
            tree.nodes[nid].text = _with_titles(read_summary(reply, kids, trace=trace, stats=stats), kids, cfg)


def _embed(tree: SemanticTree, batch: Sequence[str], embedder: Embedder) -> None:
    for nid, v in zip(batch, embed_texts(embedder, [tree.nodes[n].text for n in batch]), strict=True):
        tree.embeddings[nid] = v


def refresh_summaries(
    tree: SemanticTree,
    touched: Iterable[str],
    llm: ChatLLM | None,
    embedder: Embedder,
    cfg: TreeBuildConfig,
    trace: Trace,
    *,
    changed: int,
    height: int,
) -> dict[str, Any]:
    """Rewrite and re-embed the summaries of the ``touched`` internal nodes (see the module docstring); the root's
    vector becomes its children's centroid. ``changed`` documents in a tree of at most ``height`` give the bound
    ``height x changed`` on the calls. A model that is down (``LLMUnavailableError``) stops the refresh: the nodes
    not refreshed keep their text (a new node an extractive label). Returns ``refreshed_summaries``, ``summary_calls``, ``summary_bound`` and the
    summary stats (``extractive_summaries``: replies that fell back).

    Examples:
        >>> from retrievekit.core.fakes import LengthEmbedder
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x")])
        >>> refresh_summaries(t, [], None, LengthEmbedder(), TreeBuildConfig(), Trace(), changed=1, height=1)
        {'refreshed_summaries': 0, 'summary_calls': 0, 'summary_bound': 1}
    """
    levels = _by_depth(tree, touched)
    stats: dict[str, int] = {}
    refreshed = sum(len(b) for b in levels)
    calls = 0
    if cfg.summaries == "extractive":
        limit = cfg.summary_max_tokens * CHARS_PER_TOKEN
        for batch in levels:  # children first: a node's centroid reads its children's new vectors
            for nid in batch:
                kids = tree.children(nid)
                texts = [_short(tree, c, cfg.child_chars) for c in kids]
                vecs = np.stack([node_vector(tree, c, embedder) for c in kids])
                tree.nodes[nid].text = _with_titles(centroid_summary(texts, vecs, limit), texts, cfg)
            _embed(tree, batch, embedder)
    elif levels:
        for batch in levels:  # until its summary comes, a new node holds a label: a failure leaves a searchable tree
            for nid in batch:
                if not tree.nodes[nid].text:
                    tree.nodes[nid].text = extractive_label(
                        [_short(tree, c, cfg.child_chars) for c in tree.children(nid)]
                    )
        calls = refreshed  # one "lattice.summary" call per node (a served model's retries are the trace's)
        drive(_llm_step(tree, levels, cfg, trace, stats), llm, trace=trace, max_concurrency=cfg.max_concurrency)
        _embed(tree, [n for batch in levels for n in batch], embedder)
    if tree.nodes[ROOT].children:
        tree.embeddings[ROOT] = centroid_vector(tree, tree.nodes[ROOT].children, embedder)
    bound = int(height) * int(changed)
    trace.count("lattice.update.summary_calls", calls)
    trace.count("lattice.update.summary_bound", bound)
    return {"refreshed_summaries": refreshed, "summary_calls": calls, "summary_bound": bound, **stats}
