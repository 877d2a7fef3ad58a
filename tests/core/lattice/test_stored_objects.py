"""A saved LATTICE tree opens without reading its objects: each is read from ``objects.jsonl`` when a search shows
its text to the LLM or returns it (``StoredObjects``), changes go on top and are saved merged, and a folder saved
before the offsets were written is still read whole."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from _lattice import KeywordLLM, PromptsLLM, planted_tree

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.lattice import stored_objects
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.lattice.stored_objects import OFFSETS, StoredObjects
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.types import Passage

QUERIES = ["volcano magma", "ocean tide", "forest pine"]


def _reads(monkeypatch) -> list[str]:
    """The ids of the objects parsed from the file from now on."""
    seen: list[str] = []
    parse = stored_objects.object_from_dict

    def counted(d):
        seen.append(d["id"])
        return parse(d)

    monkeypatch.setattr(stored_objects, "object_from_dict", counted)
    return seen


def test_an_opened_tree_reads_only_the_objects_a_search_shows_or_returns_and_answers_as_the_tree_in_memory(
    tmp_path, monkeypatch
):
    tree = planted_tree()
    expected = {q: [(h.id, h.obj.text) for h in Lattice(tree, KeywordLLM()).search(q, k=3)] for q in QUERIES}
    tree.save(tmp_path / "t")
    reads = _reads(monkeypatch)
    opened = SemanticTree.load(tmp_path / "t")
    assert isinstance(opened.objects, StoredObjects) and reads == []
    llm = PromptsLLM()
    for q in QUERIES:
        got = [(h.id, h.obj.text) for h in Lattice(opened, llm).search(q, k=3)]
        assert got == expected[q]
    shown = {i for i in tree.leaf_ids() if any(tree.text(i) in p for p in llm.prompts)}  # a leaf's text: its object's
    assert reads and set(reads) <= shown | {h for q in QUERIES for h, _ in expected[q]}
    assert {i: opened.objects[i] for i in opened.leaf_ids()} == {i: tree.objects[i] for i in tree.leaf_ids()}
    unpickled = pickle.loads(pickle.dumps(opened))  # another process's copy: the objects as a plain dict
    assert unpickled.objects == dict(tree.objects) and unpickled.leaf_ids() == opened.leaf_ids()


def test_changes_on_an_opened_tree_go_on_top_are_saved_merged_and_a_copy_shares_the_file(tmp_path):
    tree = planted_tree()
    tree.save(tmp_path / "t")
    opened = SemanticTree.load(tmp_path / "t")
    objs = opened.objects
    first = sorted(objs)[0]
    twin = copy.deepcopy(objs)
    twin["zz-new"] = Passage(id="zz-new", text="new text")
    del twin[first]
    twin[sorted(objs)[1]] = Passage(id=sorted(objs)[1], text="replaced")
    assert first in objs and "zz-new" not in objs  # the original is untouched
    assert len(twin) == len(objs) and first not in twin and twin[sorted(objs)[1]].text == "replaced"
    with pytest.raises(KeyError):
        twin[first]

    opened.save(tmp_path / "t")  # over its own folder: the opened tree keeps reading the file it opened
    assert opened.objects[first].id == first
    again = SemanticTree.load(tmp_path / "t")
    assert {i: again.objects[i].text for i in again.leaf_ids()} == {i: tree.objects[i].text for i in tree.leaf_ids()}


def test_a_folder_without_offsets_is_read_whole_and_bad_offsets_are_a_typed_error(tmp_path):
    tree = planted_tree()
    folder = tree.save(tmp_path / "t")
    leaves = sorted(tree.leaf_ids())
    (folder / OFFSETS).unlink()  # as saved before the offsets were written
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.get("files", {}).pop(OFFSETS, None)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    try:
        old = SemanticTree.load(folder)
    except IndexFormatError as e:  # a manifest that lists its files' digests refuses a folder missing one
        assert OFFSETS in str(e)
    else:
        assert isinstance(old.objects, dict) and sorted(old.objects) == leaves
    with pytest.raises(IndexFormatError, match="does not match"):
        StoredObjects.open(tree.save(tmp_path / "u"), leaves[:-1])
