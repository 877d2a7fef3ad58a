"""A damaged dense index folder is refused before Chroma reads it (#15 item 3).

Before checksums, a removed HNSW segment opened silently and lost objects, and bit flips in ``data_level0.bin`` or
``chroma.sqlite3`` crashed the interpreter (SIGSEGV / SIGABRT). The crash cases run in a subprocess, so a crash
fails the test instead of killing the suite.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from retrievekit.core.errors import IndexFormatError, UnverifiedIndexWarning
from retrievekit.core.index.checksums import manifest_check
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage

_OPEN_IN_CHILD = textwrap.dedent(
    """
    import sys
    from retrievekit.core.errors import IndexFormatError
    from retrievekit.core.index.dense import DenseIndex
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    try:
        idx = DenseIndex.open(sys.argv[1], embedder=MiniLMEmbedder.default())
        print("OPENED", [h.id for h in idx.search("tallest mountain", k=3)])
    except IndexFormatError as e:
        print("REFUSED", e)
    """
)


def _open_in_child(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _OPEN_IN_CHILD, str(path)], capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture
def built(tmp_path, minilm, small_corpus) -> Path:
    path = tmp_path / "dense"
    DenseIndex.build(small_corpus, path=path, embedder=minilm).close()
    return path


def _hnsw_file(path: Path, name: str) -> Path:
    (found,) = [p for p in (path / "chroma").glob(f"*/{name}")]
    return found


def _flip(file: Path, offset: int) -> None:
    data = bytearray(file.read_bytes())
    data[offset] ^= 0xFF
    file.write_bytes(bytes(data))


def test_manifest_records_checksums_and_reopening_keeps_them_valid(built, minilm):
    manifest = json.loads((built / "manifest.json").read_text())
    assert any(k.endswith("data_level0.bin") for k in manifest["checksums"])
    assert "chroma/chroma.sqlite3" not in manifest["checksums"]  # its bytes change on every open: hashed by content
    assert len(manifest["sqlite_digest"]) == 64
    for _ in range(3):  # Chroma writes bookkeeping rows on each open; the content digest must not move
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnverifiedIndexWarning)
            with DenseIndex.open(built, embedder=minilm) as idx:
                assert idx.search("tallest peak", k=1)[0].id == "everest"


def test_removed_hnsw_segment_is_refused(built, minilm):
    shutil.rmtree(_hnsw_file(built, "data_level0.bin").parent)
    with pytest.raises(IndexFormatError, match="data_level0.bin is missing"):
        DenseIndex.open(built, embedder=minilm)


def test_bit_flip_in_hnsw_data_is_refused_not_a_segfault(built):
    data = _hnsw_file(built, "data_level0.bin")
    _flip(data, data.stat().st_size // 2)
    run = _open_in_child(built)
    assert run.returncode == 0, f"the process died (rc {run.returncode}): {run.stderr[-2000:]}"
    assert "REFUSED" in run.stdout and "data_level0.bin does not match" in run.stdout


def test_bit_flip_in_stored_object_text_is_refused(built):
    db = built / "chroma" / "chroma.sqlite3"
    offset = db.read_bytes().find(b"Mount Everest")
    assert offset > 0
    _flip(db, offset + 2)
    run = _open_in_child(built)
    assert run.returncode == 0, f"the process died (rc {run.returncode}): {run.stderr[-2000:]}"
    assert "REFUSED" in run.stdout and "chroma.sqlite3" in run.stdout


def test_damaged_sqlite_structure_is_refused_not_an_abort(built):
    db = built / "chroma" / "chroma.sqlite3"
    page = 4096
    for p in range(1, db.stat().st_size // page):  # the first byte of every page header (its b-tree page type)
        _flip(db, p * page)
    run = _open_in_child(built)
    assert run.returncode == 0, f"the process died (rc {run.returncode}): {run.stderr[-2000:]}"
    assert "REFUSED" in run.stdout


def test_count_is_checked_against_the_manifest(built, minilm):
    mpath = built / "manifest.json"
    manifest = json.loads(mpath.read_text())
    manifest["n_objects"] += 1
    manifest["manifest_check"] = manifest_check(manifest)  # a consistent manifest with a wrong count (a writer's bug)
    mpath.write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="objects but its manifest says"):
        DenseIndex.open(built, embedder=minilm)


def test_add_unseals_until_close_then_seals_again(built, minilm):
    idx = DenseIndex.open(built, embedder=minilm)
    idx.add([Passage(id="k2", text="K2 is the second highest mountain on Earth.")])
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["modified"] is True and "checksums" not in manifest
    with pytest.warns(UnverifiedIndexWarning, match="add"):  # opened while the change is unsealed
        DenseIndex.open(built, embedder=minilm).close()
    idx.close()
    manifest = json.loads((built / "manifest.json").read_text())
    assert "modified" not in manifest and manifest["n_objects"] == 7 and "checksums" in manifest
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnverifiedIndexWarning)
            with DenseIndex.open(built, embedder=minilm) as again:
                assert len(again) == 7 and again.search("second highest", k=1)[0].id == "k2"


def test_folder_without_checksums_opens_with_a_warning(built, minilm):
    mpath = built / "manifest.json"
    manifest = json.loads(mpath.read_text())
    del manifest["checksums"], manifest["sqlite_digest"], manifest["manifest_check"]  # as written before checksums
    manifest["retrievekit_version"] = "0.0.9"
    mpath.write_text(json.dumps(manifest))
    with pytest.warns(UnverifiedIndexWarning, match="before checksums"):
        DenseIndex.open(built, embedder=minilm).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedIndexWarning)
        DenseIndex.open(built, embedder=minilm, verify=False).close()


@pytest.mark.parametrize("index_name", ["sqlite_autoindex_embeddings_1", "embedding_metadata_string_value"])
def test_a_damaged_index_page_that_quick_check_misses_is_refused_on_open(built, minilm, index_name):
    import sqlite3

    db = built / "chroma" / "chroma.sqlite3"
    con = sqlite3.connect(db)
    page = con.execute("PRAGMA page_size").fetchone()[0]
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (index_name,)).fetchone()
    con.close()
    _flip(db, root * page - 1)  # the last byte of the index's root page: one key no longer matches its row
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    assert con.execute("PRAGMA quick_check").fetchall() == [("ok",)]  # what open() checked before: it passed
    con.close()
    with pytest.raises(IndexFormatError, match="integrity_check reports .*missing from index"):
        DenseIndex.open(built, embedder=minilm)


_MANY_IN_CHILD = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from retrievekit.core.errors import IndexFormatError, ResourceLimitError
    from retrievekit.core.index.dense import DenseIndex
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    emb = MiniLMEmbedder.default()
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    opened = []
    try:
        for folder in sys.argv[1:]:
            opened.append(DenseIndex.open(folder, embedder=emb))
            opened[-1].search("mountain", k=1)
        print("ALL OPENED")
    except ResourceLimitError as e:
        print("LIMIT", e)
    except IndexFormatError as e:
        print("DAMAGED", e)
    """
)


def test_running_out_of_file_descriptors_is_not_called_a_damaged_index(tmp_path, minilm, small_corpus):
    folders = []
    for i in range(12):
        folders.append(tmp_path / f"d{i}")
        DenseIndex.build(small_corpus, path=folders[-1], embedder=minilm).close()
    run = subprocess.run(
        [sys.executable, "-c", _MANY_IN_CHILD, *map(str, folders)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("LIMIT") and "out of file descriptors" in run.stdout and "limit 64" in run.stdout, (
        run.stdout
    )
