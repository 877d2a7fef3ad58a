"""Seals that cannot be emptied or bypassed (issue #52 item 3): an empty or partial checksum list is damage, the
manifest covers itself (a judge's ``platt_a``), and a dense folder whose manifest names another chromadb and whose
SQLite text was edited is refused on open, and is never sealed again by ``close()``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _chroma_edit import edit_chroma_text
from _corpora import FRUIT

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.checksums import manifest_check
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.training.manifest import ModelManifest, read_model_manifest, write_model_manifest

SHIPPED_JUDGE = Path(__file__).resolve().parents[3] / "judges" / "smollm2-scifact"


def _rewrite(mpath: Path, change, *, recheck: bool) -> None:
    """Change a manifest; ``recheck``: recompute its own check (a careful editor), else drop it (an older writer)."""
    data = json.loads(mpath.read_text())
    change(data)
    data.pop("manifest_check", None)
    if recheck:
        data["manifest_check"] = manifest_check(data)
    mpath.write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize("recheck", [True, False])
def test_an_empty_checksum_list_is_damage(tmp_path, recheck):
    BM25Index.build(list(FRUIT), BM25Config(engine="bm25s")).save(tmp_path / "bm25")  # a sealed folder
    _rewrite(tmp_path / "bm25" / "manifest.json", lambda d: d.update(checksums={}), recheck=recheck)
    with pytest.raises(IndexFormatError, match="checksum list is empty"):
        BM25Index.load(tmp_path / "bm25")


def test_a_partial_checksum_list_is_damage(tmp_path):
    SemanticTree.flat(list(FRUIT)).save(tmp_path / "tree")
    _rewrite(tmp_path / "tree" / "manifest.json", lambda d: d["checksums"].pop("node_texts.npy"), recheck=True)
    with pytest.raises(IndexFormatError, match="node_texts.npy is not covered by its manifest's checksums"):
        SemanticTree.load(tmp_path / "tree")


def test_one_changed_byte_of_an_index_manifest_is_damage(tmp_path):
    BM25Index.build(list(FRUIT), BM25Config(engine="bm25s")).save(tmp_path / "bm25")  # a sealed folder
    mpath = tmp_path / "bm25" / "manifest.json"
    text = mpath.read_text()
    assert '"k1": 1.2' in text
    mpath.write_text(text.replace('"k1": 1.2', '"k1": 7.2'))
    with pytest.raises(IndexFormatError, match="manifest_check"):
        BM25Index.load(tmp_path / "bm25")


def test_one_changed_byte_before_platt_a_in_the_shipped_judge_is_damage(tmp_path):
    judge = tmp_path / "judge"
    shutil.copytree(SHIPPED_JUDGE, judge)
    assert read_model_manifest(judge).settings["platt_a"] > 0  # the shipped judge reads as it is
    mpath = judge / "retrievekit_model.json"
    text = mpath.read_text()
    assert '"platt_a": 1.05' in text
    mpath.write_text(text.replace('"platt_a": 1.05', '"platt_a": -1.05'))
    with pytest.raises(IndexFormatError, match="manifest_check"):
        read_model_manifest(judge)


def test_a_model_folder_written_now_covers_its_manifest_and_every_file(tmp_path):
    (tmp_path / "adapter.safetensors").write_bytes(b"weights")
    write_model_manifest(tmp_path, ModelManifest.new(kind="judge", base_model="smollm2", settings={"platt_a": 1.0}))
    assert read_model_manifest(tmp_path).settings["platt_a"] == 1.0
    (tmp_path / "config.json").write_text("{}")  # a file a loader might read, planted beside the seal
    with pytest.raises(IndexFormatError, match="config.json is not covered"):
        read_model_manifest(tmp_path)


def test_another_chromadb_named_and_sqlite_text_edited_is_refused_and_never_resealed(tmp_path, minilm):
    folder = tmp_path / "dense"
    DenseIndex.build(list(FRUIT), path=folder, embedder=minilm).close()
    _rewrite(folder / "manifest.json", lambda d: d.update(chromadb_version="0.0.1"), recheck=True)
    edit_chroma_text(folder, "yellow", "INJECTED")
    before = (folder / "manifest.json").read_bytes()
    with pytest.raises(IndexFormatError, match="chroma.sqlite3 does not match its recorded digest"):
        DenseIndex.open(folder, embedder=minilm)
    assert (folder / "manifest.json").read_bytes() == before  # nothing re-sealed the edited folder
