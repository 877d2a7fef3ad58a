"""LATTICE never returns nothing, or a fallback-only ranking, without a word (issue #52 item 8): a ``num_iters``
below the tree's height still reaches the leaves (the budget is extended and the trace says so), and a tree over
another pool is refused with how the two differ."""

from __future__ import annotations

import pytest
from _lattice import KeywordLLM, planted_tree

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.lattice import Lattice, LatticeConfig, create_lattice
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.lattice.tree_node import TreeNode
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


@pytest.mark.parametrize("num_iters", [1, 2])
def test_num_iters_below_the_height_still_reaches_the_leaves(num_iters):
    tree = planted_tree()
    assert tree.height == 3
    lat = Lattice(tree, KeywordLLM(), LatticeConfig(num_iters=num_iters, beam_size=1), embedder=None)
    trace = Trace()
    hits = lat.search("volcano magma lava eruption", k=3, trace=trace)
    assert hits and hits[0].id == "t1s2l0"
    assert trace.counters["lattice.leaves_predicted"] > 0
    notes = [e.message for e in trace.events if e.kind == "lattice.iters_extended"]
    assert len(notes) == 1 and "height 3" in notes[0] and f"num_iters={num_iters}" in notes[0]


def test_enough_iterations_add_no_note():
    lat = Lattice(planted_tree(), KeywordLLM(), LatticeConfig(num_iters=5), embedder=None)
    trace = Trace()
    assert lat.search("volcano magma", k=2, trace=trace)
    assert not [e for e in trace.events if e.kind == "lattice.iters_extended"]


def test_a_tree_over_another_pool_says_how_the_two_differ(tmp_path):
    docs = [Passage(id=f"d{i}", text=f"text {i}") for i in range(4)]
    create_lattice(docs, llm=KeywordLLM(), embedder=_Ones(), tree_dir=tmp_path / "t", max_children=2)
    other = [*docs[:3], Passage(id="z9", text="text z")]
    with pytest.raises(IndexFormatError) as got:
        create_lattice(other, llm=KeywordLLM(), embedder=_Ones(), tree_dir=tmp_path / "t", max_children=2)
    msg = str(got.value)
    assert "1 of the corpus's objects are not in the tree (e.g. 'z9')" in msg
    assert "1 of the tree's are not in the corpus (e.g. 'd3')" in msg
    assert "--corpus-size" in msg and "--limit" in msg


class _Ones:
    name, dim = "ones-test", 2

    def embed_documents(self, texts, **kw):
        import numpy as np

        return np.array([[1.0, float(len(t))] for t in texts], dtype=np.float32)

    def embed_query(self, text):
        import numpy as np

        return np.array([1.0, float(len(text))], dtype=np.float32)


def _wide_deep_tree(chains: int = 40, height: int = 6) -> SemanticTree:
    """root -> ``chains`` chains of internal nodes, each ending in one leaf ``height`` levels down. The chains' heads
    match the query better than anything below them, so best-first takes every head before any node deeper."""
    nodes, objects = {ROOT: TreeNode(ROOT, "root", children=[f"c{i:02d}d1" for i in range(chains)])}, {}
    for i in range(chains):
        for d in range(1, height):
            below = f"c{i:02d}d{d + 1}" if d + 1 < height else f"c{i:02d}leaf"
            text = ("lava magma" + (" ash" if i % 2 else "")) if d == 1 else "lava"
            nodes[f"c{i:02d}d{d}"] = TreeNode(f"c{i:02d}d{d}", text, children=[below])
        nodes[f"c{i:02d}leaf"] = TreeNode(f"c{i:02d}leaf", "lava", is_leaf=True)
        objects[f"c{i:02d}leaf"] = Passage(id=f"c{i:02d}leaf", text="lava")
    return SemanticTree(nodes, objects)


def test_past_its_budget_the_search_descends_to_a_leaf_within_the_height():
    # a judge that cannot tell the branches apart: best-first would widen the frontier level by level (40 chains)
    tree = _wide_deep_tree()
    lat = Lattice(tree, KeywordLLM(), LatticeConfig(num_iters=1, beam_size=2), embedder=None)
    trace = Trace()
    assert lat.search("lava magma ash", k=3, trace=trace)
    assert trace.counters["lattice.leaves_predicted"] > 0
    assert trace.counters["lattice.iters_extended"] <= 2 * tree.height  # the height, then at most the height again
