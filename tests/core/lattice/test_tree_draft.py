"""A change made on a draft of a LATTICE tree (``tree_draft``: a node cloned when first read) gives the tree a full
copy gives, node for node and in the same order, the same change-log delta from the nodes it touched alone, and
leaves the tree it came from as it was; an addition to a living index clones only the nodes it reads.

Real components: the all-MiniLM-L6-v2 embedder, the bottom-up builder, insertion and deletion, the living index's
folder (its change log replayed on reopening).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from _lattice import TREE_TOPICS as TOPICS

import retrievekit.core.lattice.index  # noqa: F401  (registers LiveIndex.create("lattice"))
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.lattice import TreeBuildConfig, build_bottom_up, delete_documents, insert_documents
from retrievekit.core.lattice.drift import record_baseline
from retrievekit.core.lattice.node_overlay import NodeOverlay
from retrievekit.core.lattice.tree import ROOT, SemanticTree, TreeNode
from retrievekit.core.lattice.tree_delta import tree_delta
from retrievekit.core.lattice.tree_draft import draft, settle
from retrievekit.core.types import Passage


def _doc(i: int) -> Passage:
    word, sentence = TOPICS[i % len(TOPICS)]
    return Passage(id=f"d{i:03d}", text=f"{sentence}; note {i} on {word} number {i * 7 % 13}.", title=f"{word} {i}")


def _lines(tree: SemanticTree, *, ordered: bool = True) -> list:
    """Everything a tree is: each node's line with its parent (in the tree's order, or by id), the vectors, the
    leaves, the height, the objects' ids."""
    nodes = [{**tree.node_line(n), "parent": n.parent} for n in tree.nodes.values()]
    nodes = nodes if ordered else sorted(nodes, key=lambda line: line["id"])
    vectors = sorted((k, v.tolist()) for k, v in tree.embeddings.items())
    return [nodes, vectors, tree.leaf_ids(), tree.height, sorted(tree.objects)]


def test_an_overlay_reads_base_clones_what_it_reads_and_keeps_order():
    base = {k: TreeNode(id=k, text=k.upper(), children=[]) for k in "abc"}
    o = NodeOverlay(base)
    assert list(o) == ["a", "b", "c"] and len(o) == 3 and "b" in o and "z" not in o
    o["b"].children.append("x")
    assert base["b"].children == [] and o["b"].children == ["x"] and o["b"] is o["b"]
    del o["a"]
    o["z"] = TreeNode(id="z", text="Z")
    assert list(o) == ["b", "c", "z"] and len(o) == 3 and "a" not in o
    with pytest.raises(KeyError):
        o["a"]
    with pytest.raises(KeyError):
        del o["a"]
    o["a"] = TreeNode(id="a", text="again")  # a removed id set again: back at its place
    assert list(o) == ["a", "b", "c", "z"] and len(o) == 4
    nodes, touched, gone = o.settled()
    assert list(nodes) == ["a", "b", "c", "z"] and sorted(touched) == ["a", "b", "z"] and gone == []
    assert nodes["c"] is base["c"] and list(base) == ["a", "b", "c"] and base["a"].text == "A"


@pytest.mark.parametrize("change", ["insert", "delete", "insert then delete"])
def test_a_change_on_a_draft_is_the_change_on_a_copy(minilm, change):
    docs = [_doc(i) for i in range(90)]
    tree = build_bottom_up(docs[:60], None, minilm, TreeBuildConfig(max_children=3, summaries="extractive"))
    record_baseline(tree)  # as a living index does before it drafts (the first change's full read)
    before = _lines(tree)
    for step, batch in enumerate((docs[60:75], docs[75:90])):
        full, drafted = tree.copy(), draft(tree)
        for t in (full, drafted):
            if "insert" in change:
                insert_documents(t, batch, None, minilm)
            if "delete" in change:
                delete_documents(t, [f"d{3 * step + i:03d}" for i in (0, 1, 2, 10)], None, minilm)
        touched, gone = settle(drafted)
        assert isinstance(drafted.nodes, dict)
        assert _lines(drafted) == _lines(full)
        assert tree_delta(tree, drafted, touched, gone) == tree_delta(tree, full)
        assert _lines(tree) == before  # the tree a search may still be reading did not change
        tree, before = drafted, _lines(drafted)
    assert tree.height > 3  # splits added levels
    one = draft(tree)  # one document reads its path and the children it routes among (M + 1 a level), not the tree
    insert_documents(one, [_doc(90)], None, minilm)
    touched, _ = settle(one)
    assert len(touched) <= (one.height + 1) * (3 + 2) < len(tree.nodes)


def test_a_living_index_adds_on_a_draft_and_its_log_replays_it(minilm, tmp_path):
    docs = [_doc(i) for i in range(80)]
    opts = {"summaries": "extractive", "max_children": 4}
    with LiveIndex.create("lattice", path=tmp_path / "idx", options=opts, embedder=minilm) as idx:
        idx.upsert(docs[:60])  # a build: it records the build's values for drift() (a read of every node)
        assert "baseline" in idx.tree.meta
        built = idx.tree
        idx.upsert(docs[62:63])  # one addition: a draft
        shared = sum(built.nodes[k] is n for k, n in idx.tree.nodes.items() if k in built.nodes)
        assert shared > len(built.nodes) / 2  # the untouched nodes are the old tree's own objects
        idx.upsert(docs[63:70])
        idx.upsert([Passage(id="d001", text="an edited first note on volcanoes")])  # an edit: a copy
        idx.delete(["d002"])
        idx.upsert(docs[70:80])
        expected = _lines(idx.tree, ordered=False)
    with LiveIndex.open(tmp_path / "idx", embedder=minilm) as again:
        assert _lines(again.tree, ordered=False) == expected  # a folder's node order is its own
        assert again.tree.nodes[ROOT].children


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deletions_reindex_what_moved_as_a_full_reindex_would(minilm, seed, monkeypatch):
    """Random batches of deletions down to a few documents (under-full nodes merged, single children lifted, the root
    losing levels): after each, the tree is what a full re-index of it makes, and a draft's the copy's."""
    delete = importlib.import_module("retrievekit.core.lattice.delete")  # the module, not the package's name
    seen: list[list[str]] = []
    real = delete._reindex
    monkeypatch.setattr(delete, "_reindex", lambda t, d, m: (seen.append(list(m)), real(t, d, m)))
    docs = [_doc(i) for i in range(70)]
    tree = build_bottom_up(docs, None, minilm, TreeBuildConfig(max_children=3, summaries="extractive"))
    record_baseline(tree)
    rng = np.random.default_rng(seed)
    while tree.num_leaves > 3:
        leaves = tree.leaf_ids()
        batch = [leaves[int(i)] for i in rng.choice(len(leaves), size=min(len(leaves) - 2, 7), replace=False)]
        full, drafted = tree.copy(), draft(tree)
        for t in (full, drafted):
            delete_documents(t, batch, None, minilm)
        touched, gone = settle(drafted)
        walked = drafted.copy()
        walked.reindex()  # parents, depths, leaves and height from the children alone
        assert _lines(walked) == _lines(drafted) == _lines(full)
        assert tree_delta(tree, drafted, touched, gone) == tree_delta(tree, full)
        tree = drafted
    assert any(m and ROOT not in m for m in seen) and any(ROOT in m for m in seen)  # lifts and a lost level
