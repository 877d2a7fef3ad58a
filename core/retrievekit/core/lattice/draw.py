"""Draw the explored part of a tree after a search (matplotlib + networkx, PNG).

Nodes the search scored are drawn, coloured by path relevance (leaves by their final score); expanded nodes get
a thick outline, the returned top hits a star-shaped marker, and gold ids (optional) a green ring. Unexplored
subtrees are summarised as a single grey "+n" node under their parent so the picture stays small.

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.lattice.search import SearchState
    >>> from retrievekit.core.types import Passage
    >>> import tempfile, pathlib
    >>> tree = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
    >>> st = SearchState(expanded=["root"], path_relevance={"root": 1.0, "a": 0.9, "b": 0.2}, predicted=["a", "b"])
    >>> out = draw_search(tree, st, pathlib.Path(tempfile.mkdtemp()) / "s.png")
    >>> out.stat().st_size > 1000
    True
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from retrievekit.core.lattice.search import SearchState
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.paths import ensure_folder

__all__ = ["draw_search", "explored_subgraph"]


def explored_subgraph(tree: SemanticTree, state: SearchState) -> Any:
    """The ``networkx.DiGraph`` of scored nodes (plus one ``+n`` node per partly explored parent).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
        >>> sorted(explored_subgraph(t, SearchState(path_relevance={"root": 1.0, "a": 0.5})).nodes)
        ['+1@root', 'a', 'root']
    """
    import networkx as nx

    g = nx.DiGraph()
    seen = set(state.path_relevance) | {ROOT}
    for nid in sorted(seen, key=lambda n: (tree.depth(n), n)):
        if nid not in tree.nodes:
            continue
        g.add_node(nid, depth=tree.depth(nid), leaf=tree.is_leaf(nid), rest=False)
        parent = tree.parent(nid)
        if parent is not None and parent in seen:
            g.add_edge(parent, nid)
    for nid in list(g.nodes):
        rest = [c for c in tree.children(nid) if c not in seen]
        if rest and any(c in seen for c in tree.children(nid)) or (rest and nid == ROOT):
            rid = f"+{len(rest)}@{nid}"
            g.add_node(rid, depth=tree.depth(nid) + 1, leaf=False, rest=True)
            g.add_edge(nid, rid)
    return g


def _layout(g: Any) -> dict[str, tuple[float, float]]:
    order: list[str] = []

    def walk(n: str) -> None:
        kids = sorted(g.successors(n), key=lambda c: (g.nodes[c]["rest"], c))
        if not kids:
            order.append(n)
        for c in kids:
            walk(c)

    walk(ROOT)
    x_of: dict[str, float] = {n: float(i) for i, n in enumerate(order)}

    def place(n: str) -> float:
        kids = list(g.successors(n))
        if n not in x_of:
            x_of[n] = sum(place(c) for c in kids) / len(kids) if kids else 0.0
        return x_of[n]

    place(ROOT)
    return {n: (x_of[n], -float(g.nodes[n]["depth"])) for n in g.nodes}


def draw_search(
    tree: SemanticTree,
    state: SearchState,
    path: str | os.PathLike[str],
    *,
    top: Collection[str] = (),
    gold: Collection[str] = (),
    title: str = "",
    label_chars: int = 18,
) -> Path:
    """Write a PNG of the explored subtree of ``state`` (a :class:`SearchState`) to ``path``; returns the path.

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun"), Passage(id="b", text="rain")])
        >>> st = SearchState(expanded=["root"], path_relevance={"root": 1.0, "a": 0.8, "b": 0.1}, predicted=["a", "b"])
        >>> draw_search(tree, st, pathlib.Path(tempfile.mkdtemp()) / "search.png", top={"a"}, gold={"b"}).name
        'search.png'
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import networkx as nx

    g = explored_subgraph(tree, state)
    pos = _layout(g)
    n_cols = max(1.0, max((x for x, _ in pos.values()), default=1.0) + 1)
    height = max(1, max((-y for _, y in pos.values()), default=1))
    fig, ax = plt.subplots(figsize=(min(24.0, 2.0 + 0.9 * n_cols), 2.0 + 1.4 * height))
    cmap = plt.get_cmap("viridis")
    final = state.final_scores or {}
    colors: list[Any] = []
    sizes: list[int] = []
    edges: list[str] = []
    widths: list[float] = []
    for n in g.nodes:
        d = g.nodes[n]
        if d["rest"]:
            colors.append("#dddddd")
        else:
            value = final.get(n, state.path_relevance.get(n, 0.0)) if d["leaf"] else state.path_relevance.get(n, 0.0)
            colors.append(cmap(max(0.0, min(1.0, float(value)))))
        sizes.append(260 if d["leaf"] else 520)
        edges.append("#2ca02c" if n in gold else ("#d62728" if n in top else "#333333"))
        widths.append(3.0 if (n in gold or n in top or n in state.expanded) else 0.8)
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=False, edge_color="#999999")
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=sizes, edgecolors=edges, linewidths=widths)
    labels = {}
    for n in g.nodes:
        if g.nodes[n]["rest"]:
            labels[n] = n.split("@")[0]
        else:
            text = n if g.nodes[n]["leaf"] or n == ROOT else tree.text(n)
            labels[n] = text if len(text) <= label_chars else text[: label_chars - 1] + "…"
    nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7, verticalalignment="top")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    fig.colorbar(sm, ax=ax, fraction=0.025, label="path relevance / leaf score")
    ax.set_title(title or f"LATTICE search: {len(state.expanded)} expanded, {len(state.predicted)} leaves reached")
    ax.axis("off")
    out = Path(path)
    ensure_folder(out.parent)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
