"""Index lifetime over a real Chroma: in-memory indexes side by side, closing releases file descriptors, killed
builds leave no temp folders behind, and bad metadata or fusion settings are typed errors."""

from __future__ import annotations

import datetime
import gc
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _paths import REPO

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex, remove_index
from retrievekit.core.index.hybrid import FusionConfig, HybridRetriever, fuse
from retrievekit.core.index.store import sweep_stale_temp_folders
from retrievekit.core.types import Passage

DOCS = [
    Passage(id="cat", text="a cat purrs"),
    Passage(id="stock", text="stock markets fell"),
    Passage(id="dog", text="a dog"),
]


class Words:
    """A three-word count embedder: the index and Chroma are real, only the vectors are simple."""

    name, dim = "words", 3

    def embed_query(self, text: str) -> np.ndarray:
        return np.array([text.count(w) for w in ("cat", "stock", "dog")], dtype=np.float32) + 0.1

    def embed_documents(self, texts, **kw) -> np.ndarray:
        return np.array([self.embed_query(t) for t in texts])


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# ------------------------------------------------------------------------------------------- item 1: in memory


def test_two_in_memory_indexes_do_not_destroy_each_other():
    first = DenseIndex.build(DOCS, embedder=Words())
    second = DenseIndex.build(DOCS[:1], embedder=Words())
    third = DenseIndex.build(DOCS[1:], embedder=Words(), collection_name="retrievekit")
    assert first.search("cat", k=1)[0].id == "cat" and len(first) == 3
    assert len(second) == 1 and len(third) == 2 and third.search("dog", k=1)[0].id == "dog"
    second.close()  # closing one frees its own collection only
    assert first.search("stock", k=1)[0].id == "stock" and len(third) == 2


def test_an_in_memory_index_frees_its_collection_when_closed_or_collected():
    first = DenseIndex.build(DOCS, embedder=Words())
    client, names = first.client, lambda: {c.name for c in first.client.list_collections()}
    second = DenseIndex.build(DOCS, embedder=Words())
    third = DenseIndex.build(DOCS, embedder=Words())
    mine = {second.collection.name, third.collection.name}
    assert mine <= names()
    second.close()
    del third
    gc.collect()
    assert not mine & {c.name for c in client.list_collections()} and len(first) == 3


# ------------------------------------------------------------------------------------------- item 10: closing


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_fifty_open_close_cycles_do_not_grow_open_files(tmp_path):
    src = tmp_path / "src"
    DenseIndex.build(DOCS, src, embedder=Words()).close()
    folders = []
    for i in range(50):  # 50 folders: an unclosed client per folder stays open for the life of the process
        shutil.copytree(src, tmp_path / f"idx{i}")
        folders.append(tmp_path / f"idx{i}")
    with DenseIndex.open(folders[0], embedder=Words()) as idx:  # warm up lazily opened files (e.g. libraries)
        idx.search("cat", k=1)
    before = _open_fds()
    for folder in folders:
        with DenseIndex.open(folder, embedder=Words()) as idx:
            assert idx.search("cat", k=1)[0].id == "cat"
    assert _open_fds() - before <= 5, f"{_open_fds() - before} more open files after 50 open/close cycles"
    with pytest.raises(InvalidInputError, match="closed"):
        idx.search("cat")


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_builds_and_hybrid_close_release_their_files(tmp_path):
    DenseIndex.build(DOCS, tmp_path / "warm", embedder=Words()).close()
    before = _open_fds()
    for i in range(10):
        dense = DenseIndex.build(DOCS, tmp_path / f"d{i}", embedder=Words())
        with HybridRetriever([dense, BM25Index.build(DOCS)]) as hybrid:
            assert hybrid.search("dog", k=1)[0].id == "dog"
    assert _open_fds() - before <= 5


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_remove_index_stops_only_its_own_folder(tmp_path):
    DenseIndex.build(DOCS, tmp_path / "warm", embedder=Words()).close()
    before = _open_fds()
    a = DenseIndex.build(DOCS, tmp_path / "a", embedder=Words())
    b = DenseIndex.build(DOCS, tmp_path / "b", embedder=Words())
    remove_index(tmp_path / "a")
    assert not (tmp_path / "a").exists() and b.search("dog", k=1)[0].id == "dog"
    a.close()
    b.close()  # still closes its own client: remove_index forgot only a's
    assert _open_fds() - before <= 5


# ------------------------------------------------------------------------------------------- item 12: leftovers

_KILLED_BUILD = """
    import os, signal, sys
    import numpy as np
    from retrievekit.core.index.dense import DenseIndex
    from retrievekit.core.types import Passage

    class Dies:
        name, dim = "words", 3
        def embed_query(self, text):
            return np.ones(3, dtype=np.float32)
        def embed_documents(self, texts, **kw):
            os.kill(os.getpid(), signal.SIGKILL)  # killed mid-build, inside the temp folder

    DenseIndex.build([Passage(id="a", text="x")], sys.argv[1], embedder=Dies())
"""


def _temp_folders(parent: Path, name: str) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".tmp"))


def test_a_killed_build_leaves_a_temp_folder_that_the_next_build_sweeps(tmp_path):
    target = tmp_path / "dense"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_BUILD), str(target)], env=env, timeout=300, capture_output=True
    )
    assert proc.returncode == -9, proc.stderr
    orphans = _temp_folders(tmp_path, "dense")
    assert len(orphans) == 1 and (orphans[0] / "chroma").is_dir() and not target.exists()
    live = tmp_path / f".dense.p{os.getpid()}-{_host()}.keepme12.tmp"  # a build of a running process: kept
    live.mkdir()
    with DenseIndex.build(DOCS, target, embedder=Words()) as idx:
        assert len(idx) == 3
    assert _temp_folders(tmp_path, "dense") == [live]


def test_sweep_keeps_other_names_and_recent_untagged_folders(tmp_path):
    (tmp_path / ".dense.abcd1234.tmp").mkdir()  # no pid in the name, and new: could be a running older version
    (tmp_path / ".dense2.p999999999-000000.x.tmp").mkdir()  # another index's temp folder
    (tmp_path / "dense").mkdir()
    assert sweep_stale_temp_folders(tmp_path / "dense") == []
    old = tmp_path / ".dense.abcd1234.tmp"
    os.utime(old, (0, 0))
    assert sweep_stale_temp_folders(tmp_path / "dense") == [old]


def _host() -> str:
    from retrievekit.core.index import store

    return store._host_id()


# ------------------------------------------------------------------------------------------- item 13: typed errors


def test_metadata_none_is_empty_and_datetime_metadata_is_a_typed_error_at_save(tmp_path):
    none = Passage(id="a", text="x", metadata=None)  # type: ignore[arg-type]
    assert none.metadata == {}
    BM25Index.build([none]).save(tmp_path / "ok")
    dated = Passage(id="d", text="y", metadata={"published": datetime.datetime(2024, 5, 1, 12)})
    with pytest.raises(InvalidInputError, match=r"object 'd' cannot be saved: metadata\['published'\] is a datetime"):
        BM25Index.build([dated]).save(tmp_path / "bm25")
    assert not (tmp_path / "bm25").exists() and not _temp_folders(tmp_path, "bm25")
    with pytest.raises(InvalidInputError, match="metadata\\['published'\\] is a datetime"):
        DenseIndex.build([dated], tmp_path / "dense", embedder=Words())
    with pytest.raises(InvalidInputError, match="metadata of b must be a mapping"):
        Passage(id="b", text="x", metadata=["not", "a", "mapping"])  # type: ignore[arg-type]


@pytest.mark.parametrize("weights", [[float("nan"), 1.0], [float("inf"), 1.0], [1.0, -1.0]])
def test_non_finite_or_negative_weights_are_refused(weights):
    bm = BM25Index.build(DOCS)
    with pytest.raises(InvalidInputError, match="weights must be finite numbers >= 0"):
        HybridRetriever([bm, bm], weights)
    with pytest.raises(InvalidInputError, match="weights must be finite numbers >= 0"):
        fuse([[], []], weights, k=1)


def test_negative_rrf_k_and_bad_fusion_settings_are_refused():
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidInputError, match="rrf_k must be an int >= 0"):
            FusionConfig(rrf_k=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="candidate_k must be a positive int"):
        FusionConfig(candidate_k=0)
    assert fuse([[]], [1.0], k=1, config=FusionConfig(rrf_k=0)) == []


def test_hybrid_bench_options_are_checked_before_any_index_is_built():
    from retrievekit.core.index.baselines import build_hybrid
    from retrievekit.core.registry import MethodContext

    for options, message in [
        ({"rrf_k": -1}, "rrf_k must be an int >= 0"),
        ({"rrf_k": "abc"}, "option rrf_k must be an int"),
        ({"dense_weight": "nan"}, "option dense_weight must be a finite number >= 0"),
        ({"bm25_weight": "inf"}, "option bm25_weight must be a finite number >= 0"),
        ({"rrf": 60}, r"unknown hybrid option\(s\): rrf \(did you mean rrf_k\?\); known: fusion, "),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            build_hybrid(MethodContext(corpus=DOCS, options=options))
