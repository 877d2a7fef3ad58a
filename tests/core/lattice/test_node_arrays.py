"""A LATTICE tree saved in format version 4 keeps its nodes as memory-mapped arrays (issue #63): an opened tree
reads only the nodes a search asks for and answers as the tree it was saved from; ids of any text are found; a
folder whose arrays do not form a tree (resealed, so the checksums pass) is refused by name before a search walks
it; a vector of no node still round-trips.

Real components: the tree folder, the LATTICE search (``KeywordLLM``: scripted keyword-overlap replies, the point
being which nodes the search reads), insertion and deletion on an opened tree.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from _lattice import KeywordLLM, reseal_tree

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.fakes import OnesEmbedder
from retrievekit.core.lattice import Lattice, SemanticTree, TreeBuildConfig, TreeNode, delete_documents
from retrievekit.core.lattice.node_arrays import open_node_arrays
from retrievekit.core.lattice.node_overlay import NodeOverlay
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.types import Passage

GOLD = "volcano eruption magma lava"


def wide_tree(width: int = 8) -> SemanticTree:
    """root -> ``width`` topics -> ``width`` subtopics -> ``width`` leaves, one gold path (topic 3, subtopic 5,
    leaf 0); each node a vector."""
    nodes, objects = {ROOT: TreeNode(ROOT, "root")}, {}
    for t in range(width):
        subs = []
        for s in range(width):
            leaves = []
            for lf in range(width):
                lid = f"doc-{t}-{s}-{lf}"
                gold = (t, s, lf) == (3, 5, 0)
                objects[lid] = Passage(id=lid, text=GOLD if gold else f"filler {t} {s} {lf} weather report")
                nodes[lid] = TreeNode(lid, "", is_leaf=True)
                leaves.append(lid)
            sid = f"sub-{t}-{s}"
            nodes[sid] = TreeNode(sid, "volcano magma lava" if (t, s) == (3, 5) else f"weather {s}", children=leaves)
            subs.append(sid)
        nodes[f"topic-{t}"] = TreeNode(f"topic-{t}", "geology volcano" if t == 3 else f"sports {t}", children=subs)
    nodes[ROOT].children = [f"topic-{t}" for t in range(width)]
    rng = np.random.default_rng(0)
    return SemanticTree(nodes, objects, embeddings={n: rng.normal(size=4) for n in nodes})


class Dim4(OnesEmbedder):
    dim = 4


def test_an_opened_tree_reads_only_the_nodes_a_search_asks_for_and_answers_the_same(tmp_path):
    built = wide_tree()
    opened = SemanticTree.load(built.save(tmp_path / "t"))
    assert isinstance(opened.nodes, NodeOverlay) and not opened.nodes.is_draft
    assert opened.num_leaves == built.num_leaves == 512 and opened.height == built.height == 3
    assert not isinstance(opened._leaf_ids, list)  # read from the arrays, not listed
    lattice = Lattice(opened, KeywordLLM())
    assert not opened.nodes._own  # opening and wrapping read no node
    got = [(h.id, h.score) for h in lattice.search(GOLD, k=3)]
    assert got == [(h.id, h.score) for h in Lattice(built, KeywordLLM()).search(GOLD, k=3)]
    assert got[0][0] == "doc-3-5-0"
    shown = (
        {ROOT} | {p for p, *_ in lattice.last_state.slates} | {c for _, cs, *_ in lattice.last_state.slates for c in cs}
    )
    assert set(opened.nodes._own) == shown < set(built.nodes)  # the nodes its slates showed, and nothing else
    assert {n: opened.text(n) for n in built.nodes} == {n: built.text(n) for n in built.nodes}
    assert {n: opened.parent(n) for n in built.nodes} == {n: built.parent(n) for n in built.nodes}
    assert {n: opened.children(n) for n in built.nodes} == {n: built.children(n) for n in built.nodes}  # order kept
    assert all(np.array_equal(opened.embeddings[n], np.float32(built.embeddings[n])) for n in built.nodes)


def test_an_opened_tree_changed_in_place_saves_what_changed(tmp_path):
    built = wide_tree(4)
    opened = SemanticTree.load(built.save(tmp_path / "t"))
    delete_documents(opened, ["doc-0-0-0", "doc-3-1-2"], None, Dim4(), TreeBuildConfig(summaries="extractive"))
    opened.nodes["sub-2-2"].text = "a summary written again"
    again = SemanticTree.load(opened.save(tmp_path / "t2"))
    assert again.leaf_ids() == opened.leaf_ids() == sorted(set(built.leaf_ids()) - {"doc-0-0-0", "doc-3-1-2"})
    assert {n: (again.text(n), again.children(n)) for n in opened.nodes} == {
        n: (opened.text(n), opened.children(n)) for n in opened.nodes
    }
    assert sorted(again.embeddings) == sorted(opened.embeddings)


def test_an_opened_tree_counts_its_widest_node_from_its_arrays_also_after_a_change(tmp_path):
    built = wide_tree(4)
    built.nodes["sub-1-1"].children.append("doc-1-2-0")  # one node wider than the rest (5 children)
    built.nodes["sub-1-2"].children.remove("doc-1-2-0")
    built.reindex()
    opened = SemanticTree.load(built.save(tmp_path / "t"))
    assert opened.stats() == built.stats() and opened.max_branching == 5
    assert not opened.nodes._own  # no node built for it
    delete_documents(opened, ["doc-1-1-0", "doc-1-2-0"], None, Dim4(), TreeBuildConfig(summaries="extractive"))
    opened.nodes["topic-2"].children.extend(["x1", "x2", "x3", "x4", "x5", "x6", "x7"])  # read, changed: counts
    widths = {n: len(opened.children(n)) for n in opened.nodes}
    assert opened.max_branching == max(widths.values()) == widths["topic-2"] > 7
    del opened.nodes["topic-2"]  # removed: its width no longer counts
    del widths["topic-2"]
    assert opened.max_branching == max(widths.values()) < 7


@pytest.mark.parametrize(
    "ids",
    [
        ["naïve", "日本語", "a", "ab", "abc", "b"],
        [f"generated-document-{i:09d}" for i in range(300)],  # all share their first 8 bytes and more
        ["\U0001f600 emoji", "x\ty", 'quote"d', "back\\slash", "\x7f"],
    ],
    ids=["unicode", "shared-prefix", "odd"],
)
def test_ids_of_any_text_are_found_and_keep_their_objects(tmp_path, ids):
    objects = [Passage(id=i, text=f"text of {i}") for i in ids]
    tree = SemanticTree.flat(objects)
    opened = SemanticTree.load(tree.save(tmp_path / "t"))
    assert opened.leaf_ids() == sorted(ids) and opened.children(ROOT) == ids
    assert all(opened.text(i) == f"text of {i}" and opened.objects[i].id == i for i in ids)
    assert "not-an-id" not in opened.nodes and "generated-document-000000300" not in opened.nodes


def _damage(stored: dict, how: str) -> dict:
    a = {k: np.array(v) for k, v in stored.items()}
    root = int(np.flatnonzero(a["node_parents"] == -1)[0])
    child = int(a["children"][0])
    if how == "wrong parent":
        a["node_parents"][child] = child
    elif how == "two parents":
        a["children"][1] = a["children"][0]
    elif how == "wrong depth":
        a["node_depths"][child] += 1
    elif how == "leaf with children":
        a["node_leaves"][root] = True
    elif how == "no root":
        a["node_parents"][root] = 0
    elif how == "rows out of range":
        a["children"][0] = len(a["node_parents"]) + 3
    elif how == "an id index naming a node twice":
        a["node_id_hash_rows"][1] = a["node_id_hash_rows"][0]
    return a


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("wrong parent", "parent is not the node that holds it"),
        ("two parents", "no parent or two parents"),
        ("wrong depth", "depth is not one more"),
        ("leaf with children", "a leaf has children"),
        ("no root", "it has no root"),
        ("rows out of range", "out of range"),
        ("an id index naming a node twice", "does not name every node once"),
    ],
)
def test_arrays_that_are_not_a_tree_are_refused_on_opening(tmp_path, how, says):
    folder = wide_tree(3).save(tmp_path / "t")
    names = ["node_parents", "node_depths", "node_leaves", "children", "node_id_hash_rows"]
    stored = {n: np.load(folder / f"{n}.npy") for n in names}
    for name, array in _damage(stored, how).items():
        np.save(folder / f"{name}.npy", array)
    reseal_tree(folder, 4)  # the checksums pass: the structure check is what refuses it
    with pytest.raises(IndexFormatError, match=f"is not a tree: .*{says}"):
        SemanticTree.load(folder)


def test_a_vector_of_no_node_is_kept_by_name(tmp_path):
    tree = wide_tree(2)
    tree.embeddings["a-vector-of-no-node"] = np.ones(4)
    folder = tree.save(tmp_path / "t")
    assert (folder / "vector_ids.json").is_file() and not (folder / "vector_rows.npy").exists()
    opened = SemanticTree.load(folder)
    assert sorted(opened.embeddings) == sorted(tree.embeddings)
    assert opened.embeddings["a-vector-of-no-node"].tolist() == [1.0] * 4
    assert open_node_arrays(folder)["topic-1"].children == ["sub-1-0", "sub-1-1"]


@pytest.mark.parametrize(
    ("vectors", "says"),
    [(np.zeros(4, dtype=np.float32), "vectors.npy is corrupt"), (np.zeros((3, 4), dtype=np.float32), "does not name")],
    ids=["not a matrix", "fewer rows"],
)
def test_a_damaged_vector_file_is_refused_by_name(tmp_path, vectors, says):
    folder = wide_tree(2).save(tmp_path / "t")
    np.save(folder / "vectors.npy", vectors)
    reseal_tree(folder, 4)
    with pytest.raises(IndexFormatError, match=says):
        SemanticTree.load(folder)


def test_an_opened_tree_searched_from_many_threads_at_once_answers_as_one_thread(tmp_path):
    built = wide_tree()
    queries = [GOLD, "weather report filler", "sports", "geology volcano", "magma lava"] * 4
    alone = [[h.id for h in Lattice(built, KeywordLLM()).search(q, k=5)] for q in queries]
    opened = SemanticTree.load(built.save(tmp_path / "t"))  # every node first read by whichever thread gets there
    lattice = Lattice(opened, KeywordLLM())
    with ThreadPoolExecutor(max_workers=len(queries)) as pool:
        together = list(pool.map(lambda q: [h.id for h in lattice.search(q, k=5)], queries))
    assert together == alone


def _resident_kb(path: Path) -> int:
    """The resident kB of this process's mappings of the file at ``path`` (``/proc/self/smaps``)."""
    total, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            head = line.split()
            if re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", head[0]):  # a mapping's first line: its file last, if any
                inside = len(head) >= 6 and head[-1] == str(path)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


def test_opening_checks_the_structure_and_gives_its_pages_back(tmp_path):
    tree = wide_tree(16)  # 4,369 nodes: each structure array spans several pages
    folder = tree.save(tmp_path / "t")
    opened = SemanticTree.load(folder)  # reads every structure array to check it (a damaged one is refused, above)
    names = ["node_parents.npy", "node_depths.npy", "node_leaves.npy", "children.npy", "child_starts.npy"]
    names += ["node_id_hashes.npy", "node_id_hash_rows.npy", "node_id_starts.npy", "node_text_starts.npy"]
    assert [_resident_kb(folder / n) for n in names] == [0] * len(names)  # and keeps none of their pages resident
    hits = Lattice(opened, KeywordLLM()).search(GOLD, k=1)
    assert [h.id for h in hits] == ["doc-3-5-0"]
    names += ["node_ids.npy", "node_texts.npy", "vectors.npy", "vector_rows.npy"]
    assert [_resident_kb(folder / n) for n in names] == [0] * len(names)  # a search reads with pread: maps nothing
