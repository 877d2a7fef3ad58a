"""A saved LATTICE tree does not repeat its corpus in its nodes (issue #63): a leaf's stored text is empty when its
object already gives it (``index_text()``; format version 3 left it out of the leaf's ``nodes.jsonl`` line, version 4
stores an empty text in ``node_texts.npy``), an opened tree holds no leaf text and reads it from the object when a
search shows it, a leaf whose text is not its object's keeps it, and folders of format versions 2 (each leaf's text
in its line) and 3 still open, search the same and are saved as version 4.

Real components: the all-MiniLM-L6-v2 embedder, the bottom-up builder with extractive summaries, insertion and
deletion, the LATTICE search, the tree folder. ``PromptsLLM`` (scores from word overlap) keeps the prompts: what the
LLM is shown is the point.
"""

from __future__ import annotations

import json

import pytest
from _lattice import TREE_TOPICS, PromptsLLM, as_format_3, planted_tree, reseal_tree

from retrievekit.core.lattice import (
    Lattice,
    SemanticTree,
    TreeBuildConfig,
    build_bottom_up,
    delete_documents,
    insert_documents,
)
from retrievekit.core.lattice.node_arrays import open_node_arrays
from retrievekit.core.types import Passage

CFG = TreeBuildConfig(max_children=4, summaries="extractive")
DOCS = [
    Passage(id=f"d{i:02d}", text=f"{sentence}; note {i} on {word}.", title=f"{word} {i}")
    for i, (word, sentence) in enumerate(TREE_TOPICS * 4)
]
QUERIES = ["volcano magma lava", "heart blood arteries", "violin strings concertos"]


@pytest.fixture(scope="module")
def built(minilm):
    return build_bottom_up(DOCS, None, minilm, CFG)


def _lines(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "nodes.jsonl").read_text(encoding="utf-8").splitlines()]


def _stored_texts(folder) -> dict[str, str]:
    """Each node's text as a version-4 folder stores it."""
    return {i: n.text for i, n in open_node_arrays(folder).items()}


def _version(folder) -> int:
    return json.loads((folder / "manifest.json").read_text())["format_version"]


def _searched(tree: SemanticTree) -> tuple[list, list[str]]:
    """Each query's hits (ids and texts) and every prompt the searches sent."""
    llm = PromptsLLM()
    hits = [[(h.id, h.obj.text) for h in Lattice(tree, llm).search(q, k=3)] for q in QUERIES]
    return hits, llm.prompts


def _as_format_2(folder, tree: SemanticTree) -> None:
    """Rewrite the tree folder as retrievekit wrote it before version 3: each leaf's text in its line."""
    lines = [{**d, "text": tree.text(d["id"])} if d["leaf"] else d for d in _lines(folder)]
    (folder / "nodes.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    reseal_tree(folder, 2)


def test_a_saved_tree_writes_no_leaf_text_and_opens_with_the_built_trees_texts(built, tmp_path):
    assert {i: built.nodes[i].text for i in built.leaf_ids()} == {d.id: d.index_text() for d in DOCS}  # in memory
    folder = built.save(tmp_path / "t")
    texts, leaves = _stored_texts(folder), set(built.leaf_ids())
    assert _version(folder) == 4 and len(leaves) == len(DOCS) and set(texts) == set(built.nodes)
    assert not [i for i in leaves if texts[i]]  # no leaf repeats its object
    assert {i: t for i, t in texts.items() if i not in leaves} == {
        i: n.text for i, n in built.nodes.items() if not n.is_leaf
    }  # the summaries are saved
    opened = SemanticTree.load(folder)
    assert not [i for i in opened.leaf_ids() if opened.nodes[i].text]  # the opened tree holds no leaf text
    assert {n: opened.text(n) for n in opened.nodes} == {n: built.text(n) for n in built.nodes}
    g, h = opened.to_networkx(), built.to_networkx()
    assert {n: g.nodes[n]["text"] for n in g} == {n: h.nodes[n]["text"] for n in h}
    assert _searched(opened) == _searched(built)  # the same prompts, the same hits


def test_a_leaf_whose_text_is_not_its_objects_keeps_it(tmp_path):
    tree = planted_tree()
    tree.nodes["t1s2l0"].text = "volcano eruption magma lava, as annotated by hand"
    folder = tree.save(tmp_path / "t")
    leaves = set(tree.leaf_ids())
    assert [(i, t) for i, t in _stored_texts(folder).items() if i in leaves and t] == [
        ("t1s2l0", "volcano eruption magma lava, as annotated by hand")
    ]
    opened = SemanticTree.load(folder)
    assert opened.text("t1s2l0") == tree.text("t1s2l0") != opened.objects["t1s2l0"].index_text()
    assert _searched(opened) == _searched(tree)


@pytest.mark.parametrize("version", [2, 3])
def test_a_folder_of_an_older_format_opens_with_its_leaf_texts_searches_the_same_and_saves_as_format_4(
    built, tmp_path, version
):
    folder = built.save(tmp_path / "t")
    as_format_3(folder, built)
    if version == 2:
        _as_format_2(folder, built)
    old = SemanticTree.load(folder)
    assert _version(folder) == version and isinstance(old.nodes, dict)
    held = {i: old.nodes[i].text for i in old.leaf_ids()}
    assert held == ({d.id: d.index_text() for d in DOCS} if version == 2 else dict.fromkeys(held, ""))
    assert _searched(old) == _searched(built)
    again = old.save(tmp_path / "t4")
    assert _version(again) == 4 and not [i for i in old.leaf_ids() if _stored_texts(again)[i]]
    assert _searched(SemanticTree.load(again)) == _searched(built)


def test_an_opened_tree_changed_and_saved_again_reads_each_leafs_text_from_its_object(built, minilm, tmp_path):
    opened = SemanticTree.load(built.save(tmp_path / "t"))
    late = Passage(id="late", text="Volcanoes erupt ash over the town; a late note.", title="volcano late")
    insert_documents(opened, [late], None, minilm, CFG)
    delete_documents(opened, ["d03", "d11"], None, minilm, CFG)
    expected = {d.id: d.index_text() for d in [*DOCS, late] if d.id not in {"d03", "d11"}}
    assert {i: opened.text(i) for i in opened.leaf_ids()} == expected
    back = SemanticTree.load(opened.save(tmp_path / "t2"))
    assert not [i for i in back.leaf_ids() if _stored_texts(tmp_path / "t2")[i]]
    assert {i: back.text(i) for i in back.leaf_ids()} == expected
    assert {n: back.text(n) for n in back.nodes} == {n: opened.text(n) for n in opened.nodes}
    assert _searched(back) == _searched(opened)
