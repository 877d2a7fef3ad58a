"""BM25 and LATTICE tree folders carry checksums of every file and are verified on load (#15 item 4).

Before, a bit flip in a BM25 ``.npy`` file gave wrong scores on every query and an edited ``objects.jsonl`` returned
wrong ids, with no error.
"""

from __future__ import annotations

import json

import pytest
from _lattice import planted_tree

from retrievekit.core.errors import IndexFormatError, UnverifiedIndexWarning
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.lattice import SemanticTree


@pytest.fixture
def bm25_folder(tmp_path, small_corpus):
    path = tmp_path / "bm25"
    BM25Index.build(small_corpus, BM25Config(engine="bm25s")).save(path)  # a folder of files it checksums
    return path


def test_bm25_round_trip_is_verified(bm25_folder):
    manifest = json.loads((bm25_folder / "manifest.json").read_text())
    assert set(manifest["checksums"]) >= {"objects.jsonl", "bm25s/data.csc.index.npy", "bm25s/vocab.index.json"}
    assert BM25Index.load(bm25_folder).search("highest mountain", k=1)[0].id == "everest"


def test_bit_flip_in_bm25_scores_is_refused(bm25_folder):
    npy = bm25_folder / "bm25s" / "data.csc.index.npy"
    data = bytearray(npy.read_bytes())
    data[-3] ^= 0x40  # a float in the score matrix: loads fine, scores wrong
    npy.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=r"bm25s/data.csc.index.npy does not match its recorded checksum"):
        BM25Index.load(bm25_folder)


def test_edited_objects_are_refused(bm25_folder):
    objects = bm25_folder / "objects.jsonl"
    objects.write_text(objects.read_text().replace('"id": "everest"', '"id": "evrest!"'))
    with pytest.raises(IndexFormatError, match="objects.jsonl does not match"):
        BM25Index.load(bm25_folder)


def test_missing_file_is_refused(bm25_folder):
    (bm25_folder / "bm25s" / "vocab.index.json").unlink()
    with pytest.raises(IndexFormatError, match="vocab.index.json is missing"):
        BM25Index.load(bm25_folder)


def test_tree_folder_is_verified(tmp_path):
    path = planted_tree().save(tmp_path / "tree")
    assert SemanticTree.load(path).stats() == planted_tree().stats()
    texts = path / "node_texts.npy"
    data = bytearray(texts.read_bytes())
    data[-1] ^= 1  # one bit of the last summary's last character
    texts.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="node_texts.npy does not match"):
        SemanticTree.load(path)


def test_folder_from_before_checksums_loads_with_a_warning(bm25_folder):
    mpath = bm25_folder / "manifest.json"
    manifest = json.loads(mpath.read_text())
    del manifest["checksums"], manifest["manifest_check"]  # as retrievekit wrote it before checksums
    manifest["retrievekit_version"] = "0.0.9"
    mpath.write_text(json.dumps(manifest))
    with pytest.warns(UnverifiedIndexWarning, match="without checksums"):
        assert len(BM25Index.load(bm25_folder)) == 6
