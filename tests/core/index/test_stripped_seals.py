"""A seal cannot be removed (issue #62 item 7): a manifest whose ``checksums`` (and ``manifest_check``) were
deleted while it still names a retrievekit version that records them is damage, for every sealed folder kind
(BM25, LATTICE tree, dense index, trained model), with the folder's files edited behind it. Before, each loaded and
served the edited files with one ``UnverifiedIndexWarning``. A folder of a version before checksums still loads with
that warning (``test_folder_checksums``, ``test_dense_integrity``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _chroma_edit import edit_chroma_text
from _corpora import FRUIT

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.training.manifest import read_model_manifest

SHIPPED_JUDGE = Path(__file__).resolve().parents[3] / "judges" / "smollm2-scifact"
_SEAL = ("checksums", "manifest_check", "sqlite_digest")


def _strip(mpath: Path) -> None:
    data = json.loads(mpath.read_text())
    assert data["retrievekit_version"] == "0.1.0" and "checksums" in data
    for key in _SEAL:
        data.pop(key, None)
    mpath.write_text(json.dumps(data, indent=2))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("kind", "edited", "old"),
    [(BM25Index, "objects.jsonl", "yellow"), (SemanticTree, "objects.jsonl", "yellow")],
    ids=["bm25", "tree"],
)
def test_a_stripped_manifest_over_an_edited_file_is_refused(tmp_path, kind, edited, old):
    folder = tmp_path / "folder"
    bm25s = BM25Config(engine="bm25s")  # a folder with objects.jsonl (tantivy keeps them in its own store)
    (BM25Index.build(list(FRUIT), bm25s) if kind is BM25Index else SemanticTree.flat(list(FRUIT))).save(folder)
    _edit(folder / edited, old, "INJECTED")
    _strip(folder / "manifest.json")
    with pytest.raises(IndexFormatError, match="names retrievekit 0.1.0, which records checksums, but carries none"):
        kind.load(folder)


def test_a_stripped_model_manifest_is_refused(tmp_path):
    judge = tmp_path / "judge"
    shutil.copytree(SHIPPED_JUDGE, judge)
    _strip(judge / "retrievekit_model.json")
    with pytest.raises(IndexFormatError, match="but carries none"):
        read_model_manifest(judge)


def test_a_stripped_dense_manifest_over_edited_sqlite_text_is_refused(tmp_path, minilm):
    folder = tmp_path / "dense"
    DenseIndex.build(list(FRUIT), path=folder, embedder=minilm).close()
    edit_chroma_text(folder, "yellow", "INJECTED")
    _strip(folder / "manifest.json")
    with pytest.raises(IndexFormatError, match="but carries none"):
        DenseIndex.open(folder, embedder=minilm)


@pytest.mark.parametrize("version", [None, "", "garbage", "0.1", "0.1.0", "0.2.0rc1", "1.0.0", "9.9.9"])
def test_only_a_version_before_checksums_may_lack_them(version):
    from retrievekit.core.index.checksums import CHECKSUMS_SINCE, refuse_stripped_seal

    with pytest.raises(IndexFormatError, match="carries none"):
        refuse_stripped_seal("/idx", {} if version is None else {"retrievekit_version": version})
    before = ".".join(map(str, (*CHECKSUMS_SINCE[:2], CHECKSUMS_SINCE[2] - 1))) if CHECKSUMS_SINCE[2] else "0.0.9"
    assert refuse_stripped_seal("/idx", {"retrievekit_version": before}) == before
