"""How far a tree changed in place has drifted from a fresh build, and whether a rebuild is advised.

Insertions and deletions keep a tree valid but not as a fresh build would make it: groups chosen for the corpus
of the build now hold other documents, a split adds a level, a merge joins groups that were apart. :func:`drift`
measures it with the tree's stored vectors (no model call):

* **node fill**: the children per internal node (the root left out: it takes what is left), against the builder's
  M (``max_children``) and half of it (:func:`~retrievekit.core.lattice.refresh.min_fill`);
* **group coherence**: the mean, over internal nodes, of the mean cosine of a node's children to their centroid
  (1.0: identical children), against the value when the tree was built; past :data:`COHERENCE_SAMPLE` internal
  nodes, over the root and a seeded sample of that many of the others;
* **changes**: documents inserted and deleted since the build, as a share of the documents built.

Nothing here builds every node of a tree opened from its folder: the children counts come from its arrays, and
only the sampled nodes are read. The build's values (documents, height, coherence) are recorded in
``meta["baseline"]`` by the first insertion or deletion (:func:`record_baseline`), before it changes anything, and
saved with the tree. A rebuild is advised when
more than :data:`REBUILD_CHANGED_SHARE` of the built documents changed, or the coherence fell more than
:data:`REBUILD_COHERENCE_DROP` below the build's, or the height grew more than :data:`REBUILD_EXTRA_LEVELS` levels.

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> d = drift(SemanticTree.flat([Passage(id="a", text="x")]))
    >>> d.changed_share, d.rebuild_advised, d.reasons
    (0.0, False, ())
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrievekit.core.lattice.refresh import min_fill, tree_config
from retrievekit.core.lattice.tree import ROOT, SemanticTree

__all__ = [
    "COHERENCE_SAMPLE",
    "REBUILD_CHANGED_SHARE",
    "REBUILD_COHERENCE_DROP",
    "REBUILD_EXTRA_LEVELS",
    "TreeDrift",
    "drift",
    "group_coherence",
    "record_baseline",
]

COHERENCE_SAMPLE = 1024
"""Group coherence reads at most this many internal nodes besides the root (a seeded sample of them, all in a smaller
tree): a 10M-document tree has about 1.3 million, and the sampled mean's error is far below
:data:`REBUILD_COHERENCE_DROP` (*ours*)."""

REBUILD_CHANGED_SHARE = 0.5
"""A rebuild is advised once more than this share of the built documents were inserted or deleted (*ours*)."""

REBUILD_COHERENCE_DROP = 0.1
"""... or once the group coherence fell more than this below the build's (*ours*: a tenth of the cosine scale)."""

REBUILD_EXTRA_LEVELS = 1
"""... or once splits made the tree more than this many levels taller than it was built (*ours*)."""


@dataclass(frozen=True)
class TreeDrift:
    """A tree's drift from a fresh build (:func:`drift`); ``reasons`` says why a rebuild is advised (empty: not).

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> drift(SemanticTree.flat([Passage(id="a", text="x")])).fill_max
        0
    """

    leaves: int
    built_leaves: int
    inserted: int
    deleted: int
    changed_share: float
    height: int
    built_height: int
    max_children: int
    min_fill: int
    fill_min: int
    fill_mean: float
    fill_max: int
    under_full: int
    over_full: int
    coherence: float | None
    built_coherence: float | None
    rebuild_advised: bool
    reasons: tuple[str, ...]


def _internal(tree: SemanticTree) -> tuple[Sequence[str], list[int]]:
    """The internal nodes but the root: their ids (read when asked for, from an opened tree's arrays) and their
    numbers of children."""
    internal = getattr(tree.nodes, "internal", None)
    if internal is not None:
        ids, widths = internal(skip=[ROOT])
        return ids, np.asarray(widths).tolist()
    seen = sorted((n, len(node.children)) for n, node in tree.nodes.items() if n != ROOT and not node.is_leaf)
    return [n for n, _ in seen], [w for _, w in seen]


def _sampled(ids: Sequence[str]) -> list[str]:
    if len(ids) <= COHERENCE_SAMPLE:
        return list(ids)
    picked = np.random.default_rng(0).choice(len(ids), COHERENCE_SAMPLE, replace=False)
    return [ids[i] for i in np.sort(picked).tolist()]


def group_coherence(tree: SemanticTree) -> float | None:
    """Mean over internal nodes (the root included; past :data:`COHERENCE_SAMPLE` others, a seeded sample of them) of
    the mean cosine of their children's stored vectors to the children's centroid; None when no node has two children
    with vectors.

    Examples:
        >>> import numpy as np
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
        >>> t.embeddings = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.0])}
        >>> group_coherence(t)
        1.0
    """
    per_node = []
    for nid in [ROOT, *_sampled(_internal(tree)[0])]:
        vecs = [v for v in map(tree.embeddings.get, tree.nodes[nid].children) if v is not None]  # one lookup each
        if len(vecs) < 2:
            continue
        x = np.stack(vecs).astype(np.float64)
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        centre = x.mean(0)
        centre = centre / max(float(np.linalg.norm(centre)), 1e-12)
        per_node.append(float((x @ centre).mean()))
    return round(math.fsum(per_node) / len(per_node), 6) if per_node else None  # fsum: the same in any order


def record_baseline(tree: SemanticTree) -> None:
    """Record the build's documents, height and coherence in ``tree.meta["baseline"]`` unless already there (called
    by an insertion or deletion before it changes the tree; a tree changed by an older retrievekit counts its
    recorded insertions back out).

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x")]); record_baseline(t); t.meta["baseline"]
        {'leaves': 1, 'height': 1, 'coherence': None}
    """
    if "baseline" in tree.meta:
        return
    built = tree.num_leaves - int(tree.meta.get("inserted", 0)) + int(tree.meta.get("deleted", 0))
    tree.meta["baseline"] = {"leaves": built, "height": tree.height, "coherence": group_coherence(tree)}


def _reasons(d: dict[str, Any]) -> tuple[str, ...]:
    out = []
    if d["changed_share"] > REBUILD_CHANGED_SHARE:
        out.append(f"{d['changed_share']:.0%} of the built documents changed (above {REBUILD_CHANGED_SHARE:.0%})")
    if d["coherence"] is not None and d["built_coherence"] is not None:
        if d["coherence"] < d["built_coherence"] - REBUILD_COHERENCE_DROP:
            out.append(f"group coherence fell from {d['built_coherence']:.3f} to {d['coherence']:.3f}")
    if d["height"] > d["built_height"] + REBUILD_EXTRA_LEVELS:
        out.append(f"the height grew from {d['built_height']} to {d['height']}")
    return tuple(out)


def drift(tree: SemanticTree) -> TreeDrift:
    """The drift report of ``tree`` (see the module docstring); a tree never changed is its own build.

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id=i, text=i) for i in "abc"])
        >>> record_baseline(t); t.meta["deleted"] = 2
        >>> d = drift(t); d.changed_share, d.rebuild_advised, d.reasons[0][:26]
        (0.6667, True, '67% of the built documents')
    """
    cfg = tree_config(tree)
    base = tree.meta.get("baseline") or {}
    inserted, deleted = int(tree.meta.get("inserted", 0)), int(tree.meta.get("deleted", 0))
    built = int(base.get("leaves", tree.num_leaves - inserted + deleted))
    fill = _internal(tree)[1]
    coherence = group_coherence(tree)
    low = min_fill(cfg.max_children)
    d: dict[str, Any] = {
        "leaves": tree.num_leaves,
        "built_leaves": built,
        "inserted": inserted,
        "deleted": deleted,
        "changed_share": round((inserted + deleted) / max(1, built), 4),
        "height": tree.height,
        "built_height": int(base.get("height", tree.height)),
        "max_children": cfg.max_children,
        "min_fill": low,
        "fill_min": min(fill, default=0),
        "fill_mean": round(float(np.mean(fill)), 3) if fill else 0.0,
        "fill_max": max(fill, default=0),
        "under_full": sum(f < low for f in fill),
        "over_full": sum(f > cfg.max_children for f in fill),
        "coherence": coherence,
        "built_coherence": base.get("coherence", coherence) if base else coherence,
    }
    reasons = _reasons(d)
    return TreeDrift(**d, rebuild_advised=bool(reasons), reasons=reasons)
