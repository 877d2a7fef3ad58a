"""A full disk or a denied write during an index save is a typed error that says so and names the folder, and the
old index stays intact (issue #52 item 5): BM25 and LATTICE tree saves, a dense overwrite, and Chroma's "attempt to
write a readonly database". ENOSPC is simulated at the OS call that hits it (the rename, the temp folder's
creation): the tests run as root, for whom a read-only folder is writable."""

from __future__ import annotations

import errno
import os

import pytest

from retrievekit.core.errors import StorageWriteError
from retrievekit.core.index import store
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.types import Passage

OLD = [Passage(id="old1", text="apples are red"), Passage(id="old2", text="bananas are yellow")]
NEW = [Passage(id="new1", text="cherries are dark"), Passage(id="new2", text="plums are purple")]


def _fail_on_replace_into(monkeypatch, target, code):
    """``os.replace`` fails with ``code`` when it moves the new temp folder to ``target`` (the swap's second rename)."""
    real = os.replace

    def replace(src, dst, *a, **kw):
        if os.fspath(dst) == os.fspath(target) and os.fspath(src).endswith(".tmp"):
            raise OSError(code, os.strerror(code), os.fspath(dst))
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", replace)


def _old_dense(tmp_path, embedder):
    """A closed dense index of ``OLD`` at ``tmp_path / "dense"``: the index a failed write must leave as it was."""
    folder = tmp_path / "dense"
    DenseIndex.build(OLD, path=folder, embedder=embedder).close()
    return folder


def _held_ids(folder, embedder):
    """The ids of the objects the dense index at ``folder`` holds, read back from a fresh open."""
    with DenseIndex.open(folder, embedder=embedder) as idx:
        return sorted(h.id for h in idx.search("fruit", k=5))


def _leftovers(folder):
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}."))


@pytest.mark.parametrize(("code", "words"), [(errno.ENOSPC, "disk full"), (errno.EACCES, "permission denied")])
def test_bm25_save_on_a_full_or_denied_disk_is_typed_and_keeps_the_old_index(tmp_path, monkeypatch, code, words):
    folder = tmp_path / "bm25"
    BM25Index.build(OLD).save(folder)
    _fail_on_replace_into(monkeypatch, folder, code)
    with pytest.raises(StorageWriteError, match=words) as got:
        BM25Index.build(NEW).save(folder)
    assert str(folder) in str(got.value) and got.value.errno == code
    monkeypatch.undo()
    assert [h.id for h in BM25Index.load(folder).search("apples")] == ["old1"]
    assert _leftovers(folder) == []


def test_a_read_only_parent_is_permission_denied_naming_the_folder(tmp_path, monkeypatch):
    folder = tmp_path / "tree"
    SemanticTree.flat(OLD).save(folder)

    def denied(*a, **kw):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path))

    os.chmod(tmp_path, 0o555)  # what a non-root user meets; root writes anyway, hence the EACCES below
    monkeypatch.setattr(store.tempfile, "mkdtemp", denied)
    try:
        with pytest.raises(StorageWriteError, match="permission denied: .*tree"):
            SemanticTree.flat(NEW).save(folder)
    finally:
        os.chmod(tmp_path, 0o755)
    monkeypatch.undo()
    assert SemanticTree.load(folder).leaf_ids() == ["old1", "old2"]


def test_dense_overwrite_on_a_full_disk_is_typed_and_keeps_the_old_index(tmp_path, monkeypatch, minilm):
    folder = _old_dense(tmp_path, minilm)
    _fail_on_replace_into(monkeypatch, folder, errno.ENOSPC)
    with pytest.raises(StorageWriteError, match="disk full") as got:
        DenseIndex.build(NEW, path=folder, embedder=minilm, overwrite=True)
    assert str(folder) in str(got.value)
    monkeypatch.undo()
    assert _held_ids(folder, minilm) == ["old1", "old2"]


def test_chroma_failing_on_a_full_disk_says_disk_full(tmp_path, monkeypatch, minilm):
    """Chroma's own words for a full disk ("Error in compaction") on a disk with no space left: "disk full"."""
    folder = _old_dense(tmp_path, minilm)

    def compaction(*a, **kw):
        raise RuntimeError("Error in compaction: Failed to apply logs to the hnsw segment writer")

    monkeypatch.setattr(DenseIndex, "_add", compaction)
    monkeypatch.setattr(store.shutil, "disk_usage", lambda p: _Usage(0))
    with pytest.raises(StorageWriteError, match="disk full: .*dense.*Error in compaction"):
        DenseIndex.build(NEW, path=folder, embedder=minilm, overwrite=True)
    monkeypatch.undo()
    assert _held_ids(folder, minilm) == ["old1", "old2"]


def test_chroma_on_a_read_only_database_says_permission_denied(tmp_path, monkeypatch, minilm):
    folder = _old_dense(tmp_path, minilm)
    import chromadb

    def readonly(*a, **kw):
        raise chromadb.errors.InternalError("attempt to write a readonly database")

    monkeypatch.setattr(chromadb, "PersistentClient", readonly)
    with pytest.raises(StorageWriteError, match="permission denied: .*dense"):
        DenseIndex.open(folder, embedder=minilm)


class _Usage:
    def __init__(self, free: int) -> None:
        self.total, self.used, self.free = 1 << 30, 1 << 30, free
