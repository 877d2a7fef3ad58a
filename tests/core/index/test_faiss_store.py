"""The in-process HNSW store (faiss, #63 item 4) with the real library: the same answers as exact search on a small
corpus, a folder that survives a reopen and a crash at any point of a save, deletes and replaces, filters with the
same meaning as Chroma's, typed errors for bad input, and the store as the dense side of a method by one setting."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _corpora import FRUIT

from retrievekit.core.errors import IndexFormatError, IndexLockedError, InvalidInputError
from retrievekit.core.fakes import WordCountEmbedder
from retrievekit.core.index import faiss_store
from retrievekit.core.index.chroma_store import ChromaStore
from retrievekit.core.index.faiss_store import FaissStore, UnsavedWritesWarning
from retrievekit.core.index.store_kinds import open_store
from retrievekit.core.index.store_retriever import StoreRetriever
from retrievekit.core.index.vector_store import VectorStore
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.types import Passage

REC = {"retrievekit_embedder": "toy", "retrievekit_dim": 16}
FRUIT_WORDS = ("apple", "banana", "yellow", "fruit", "python", "programming", "river", "mountain", "red", "language")


def corpus(n: int = 400, dim: int = 16, seed: int = 0) -> tuple[list[Passage], np.ndarray]:
    """Clustered vectors with metadata to filter on (a tenant of three, a year, a flag)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(8, dim))
    vecs = centers[rng.integers(0, 8, n)] + 0.6 * rng.normal(size=(n, dim))
    objs = [
        Passage(
            id=f"d{i:04d}",
            text=f"doc {i}",
            metadata={"tenant": "abc"[i % 3], "year": 2020 + i % 5, "flag": i % 2 == 0, "score": i / 10},
        )
        for i in range(n)
    ]
    return objs, vecs


def exact(vecs: np.ndarray, ids: list[str], q: np.ndarray, k: int, keep=None) -> list[str]:
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    scores = unit @ (q / np.linalg.norm(q))
    rows = [(-s, i) for s, i, obj_ok in zip(scores, ids, keep or [True] * len(ids), strict=True) if obj_ok]
    return [i for _, i in sorted(rows)[:k]]


def test_the_store_answers_as_exact_search_does_with_cosine_scores():
    objs, vecs = corpus()
    store = FaissStore.in_memory()
    assert isinstance(store, VectorStore)
    store.add(objs, vecs, record=REC)
    queries = np.random.default_rng(1).normal(size=(25, 16))
    for q in queries:
        hits = store.search(q, k=10)
        assert [h.id for h in hits] == exact(vecs, [o.id for o in objs], q, 10)
        best = vecs[int(hits[0].id[1:])]
        assert hits[0].score == pytest.approx(float(best @ q / np.linalg.norm(best) / np.linalg.norm(q)), abs=1e-5)
        assert [h.rank for h in hits] == list(range(10))
    assert hits[0].obj == objs[int(hits[0].id[1:])]  # the object as it was added
    assert store.recorded_embedder() == REC


def test_a_folder_survives_close_and_reopen_with_deletes_and_its_settings(tmp_path):
    objs, vecs = corpus()
    ids = [o.id for o in objs]
    with FaissStore.open(tmp_path / "v", create=True, m=12, ef_construction=80) as store:
        store.add(objs[:300], vecs[:300], record=REC)
        store.save()
        store.add(objs[300:], vecs[300:], record=REC)
        store.delete(["d0001", "d0002", "nope"])
    q = np.random.default_rng(2).normal(size=16)
    keep = [i not in ("d0001", "d0002") for i in ids]
    with open_store("faiss", path=tmp_path / "v", ef_search=200) as again:
        assert again.count() == 398 and again.settings == {
            "m": 12,
            "ef_construction": 80,
            "ef_search": 200,
            "dtype": "float32",
        }
        assert again.recorded_embedder() == REC
        assert [h.id for h in again.search(q, k=10)] == exact(vecs, ids, q, 10, keep)
    assert sorted(p.name for p in (tmp_path / "v").glob("vectors.*")) == ["vectors.2.faiss"]  # the old one removed


def test_a_crash_before_a_save_ends_leaves_the_last_save_whole(tmp_path):
    """A process killed (os._exit) after writing the next graph but before the commit, and another killed with
    unsaved adds: the reopened store is the last save, rows and graph together, and saves again."""
    objs, vecs = corpus(60)
    with FaissStore.open(tmp_path / "v", create=True) as store:
        store.add(objs[:40], vecs[:40], record=REC)
    script = textwrap.dedent(
        f"""
        import os, numpy as np
        from retrievekit.core.index import faiss_files
        from retrievekit.core.index.faiss_store import FaissStore, UnsavedWritesWarning
        from retrievekit.core.types import Passage
        real = faiss_files._write_graph
        def write_then_die(faiss, index, path):
            real(faiss, index, path)
            os._exit(3)
        s = FaissStore.open({str(tmp_path / "v")!r})
        s.add([Passage(id=f"n{{i}}", text="new") for i in range(20)], np.ones((20, 16)) + np.eye(20, 16), record={{}})
        s.delete(["d0000"])
        if os.environ["HOW"] == "commit":
            faiss_files._write_graph = write_then_die
            s.save()
        os._exit(3)
        """
    )
    for how in ("commit", "unsaved"):
        proc = subprocess.run([sys.executable, "-c", script], env={"HOW": how, "PATH": ""}, timeout=120)
        assert proc.returncode == 3
        with FaissStore.open(tmp_path / "v") as back:
            assert back.count() == 40 and back._index.ntotal == 40
            assert back.search(vecs[0], k=1)[0].id == "d0000"
    with FaissStore.open(tmp_path / "v") as back:  # the stray generation of the killed save is written over
        back.add(objs[40:], vecs[40:], record=REC)
    with FaissStore.open(tmp_path / "v") as back:
        assert back.count() == 60 and back.search(vecs[50], k=1)[0].id == "d0050"


def test_a_store_dropped_with_unsaved_writes_says_so(tmp_path):
    import gc

    objs, vecs = corpus(10)
    store = FaissStore.open(tmp_path / "v", create=True)
    store.add(objs, vecs, record=REC)
    with pytest.warns(UnsavedWritesWarning, match="writes since the last save are lost"):
        del store
        gc.collect()
    with FaissStore.open(tmp_path / "v") as back:
        assert back.count() == 0
        back.add(objs, vecs, record=REC)
    with FaissStore.open(tmp_path / "v") as back:  # closed (saved): nothing to say when dropped
        assert back.count() == 10


def test_delete_replace_and_compact():
    objs, vecs = corpus(200)
    store = FaissStore.in_memory()
    store.add(objs, vecs, record=REC)
    q = vecs[7]
    assert store.search(q, k=1)[0].id == "d0007"
    store.delete(["d0007"])
    assert "d0007" not in [h.id for h in store.search(q, k=50)] and store.count() == 199
    store.add([Passage(id="d0008", text="moved")], -vecs[8:9], record=REC)  # an id stored again: replaced
    assert store.count() == 199 and store.search(-vecs[8], k=1)[0].obj.text == "moved"
    assert store.search(vecs[8], k=200)[-1].id == "d0008"
    before = [[h.id for h in store.search(v, k=10)] for v in vecs[:20]]
    store.compact()
    assert store._index.ntotal == 199
    assert [[h.id for h in store.search(v, k=10)] for v in vecs[:20]] == before


def test_a_float16_store_answers_as_the_float32_one_in_a_smaller_folder_and_keeps_its_dtype(tmp_path, monkeypatch):
    objs, vecs = corpus(600, dim=64)
    ids = [o.id for o in objs]
    for dtype in ("float32", "float16"):
        with FaissStore.open(tmp_path / dtype, create=True, dtype=dtype) as store:
            store.add(objs, vecs, record=REC | {"retrievekit_dim": 64})
            store.delete(["d0005"])
    keep = [i != "d0005" for i in ids]
    sizes = {d: (tmp_path / d / "vectors.1.faiss").stat().st_size for d in ("float32", "float16")}
    assert sizes["float16"] < 0.75 * sizes["float32"]  # 64 dims: 128 bytes a vector instead of 256, links alike
    with FaissStore.open(tmp_path / "float16", dtype="float32") as half:  # a store keeps the dtype it was made with
        assert half.settings["dtype"] == "float16" and half.count() == 599
        for q in np.random.default_rng(4).normal(size=(20, 64)):
            hits = half.search(q, k=10)
            assert [h.id for h in hits] == exact(vecs, ids, q, 10, keep)
            best = vecs[int(hits[0].id[1:])]
            assert hits[0].score == pytest.approx(float(best @ q / np.linalg.norm(best) / np.linalg.norm(q)), abs=2e-3)
            monkeypatch.setattr(faiss_store, "EXACT_BELOW", 10_000)  # a filter ranked exactly from decoded vectors
            tenant_b = [o.metadata["tenant"] == "b" and k for o, k in zip(objs, keep, strict=True)]
            assert [h.id for h in half.search(q, k=5, where={"tenant": "b"})] == exact(vecs, ids, q, 5, tenant_b)
        half.delete(["d0006"])
        half.compact()
        assert half._index.ntotal == 598 and half.search(vecs[6], k=1)[0].id != "d0006"


@pytest.mark.parametrize(
    "where",
    [{"tenant": "b"}, {"year": 2022}, {"flag": True}, {"tenant": ["a", "c"], "year": [2020, 2021]}, {"score": 1.5}],
)
@pytest.mark.parametrize("exact_below", [10_000, 0])  # ranked exactly, and through the graph's bitmap selector
def test_a_filter_means_what_it_means_at_chroma(where, exact_below, monkeypatch):
    monkeypatch.setattr(faiss_store, "EXACT_BELOW", exact_below)
    objs, vecs = corpus(300)
    store, chroma = FaissStore.in_memory(), ChromaStore.in_memory()
    store.add(objs, vecs, record=REC)
    chroma.add(objs, vecs, record=REC)
    store.delete(["d0003"])
    chroma.delete(["d0003"])
    for q in np.random.default_rng(3).normal(size=(5, 16)):
        got = [h.id for h in store.search(q, k=10, where=where)]
        assert got == [h.id for h in chroma.search(q, k=10, where=where)]
        assert got and "d0003" not in got
    assert store.search(vecs[0], k=5, where={"tenant": "zzz"}) == []
    assert store.search(vecs[0], k=5, where={"year": "2020"}) == []  # a string never equals a number


def test_bad_input_is_a_typed_error_naming_what(tmp_path):
    objs, vecs = corpus(10)
    store = FaissStore.in_memory()
    store.add(objs, vecs, record=REC)
    cases = [
        (lambda: store.add(objs[:2], vecs[:2, :8], record=REC), "shape"),
        (lambda: store.add(objs[:2], np.zeros((2, 16)), record=REC), "all zeros"),
        (lambda: store.add(objs[:2], np.full((2, 16), np.nan), record=REC), "finite"),
        (lambda: store.add([objs[0], objs[0]], vecs[:2], record=REC), "appears twice"),
        (lambda: store.search(np.ones(8), k=3), "dimension 8"),
        (lambda: store.search(np.ones(16), k=0), "k"),
        (lambda: store.search(np.ones(16), k=3, where={"$or": "x"}), "$or"),
        (lambda: store.delete(["a\x00"]), "NUL"),
        (lambda: FaissStore.in_memory(ef_search=0), "ef_search"),
        (lambda: FaissStore.in_memory(M=4), "unknown faiss store setting 'M'"),
        (lambda: FaissStore.in_memory(dtype="int8"), "dtype must be one of float32, float16"),
    ]
    for call, words in cases:
        with pytest.raises(InvalidInputError, match=None) as info:
            call()
        assert words in str(info.value), (words, str(info.value))
    assert store.count() == 10  # nothing of a refused batch was written
    store.close()
    with pytest.raises(InvalidInputError, match="closed"):
        store.search(np.ones(16), k=1)


def test_a_folder_that_is_not_a_whole_store_is_refused(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(IndexFormatError, match="not an empty folder"):
        FaissStore.open(tmp_path / "other", create=True)
    objs, vecs = corpus(30)
    with FaissStore.open(tmp_path / "v", create=True) as store:
        store.add(objs, vecs, record=REC)
    graph = tmp_path / "v" / "vectors.1.faiss"
    graph.write_bytes(graph.read_bytes()[:100])
    with pytest.raises(IndexFormatError, match="cannot be read"):
        FaissStore.open(tmp_path / "v")
    graph.unlink()
    with pytest.raises(IndexFormatError, match="is missing"):
        FaissStore.open(tmp_path / "v")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "objects.sqlite3").write_bytes(b"not a database at all, just bytes" * 40)
    with pytest.raises(IndexFormatError, match="cannot be read"):
        FaissStore.open(tmp_path / "w")
    for dtype, words in (('"int8"', "its dtype 'int8' is not known"), ('"float16"', "is not an HNSW graph")):
        with FaissStore.open(tmp_path / dtype, create=True) as store:  # a float32 graph
            store.add(objs, vecs, record=REC)
        conn = sqlite3.connect(tmp_path / dtype / "objects.sqlite3")
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('dtype', ?)", (dtype,))
        conn.commit()
        conn.close()
        with pytest.raises(IndexFormatError, match=words):
            FaissStore.open(tmp_path / dtype)


def test_two_writers_never_lose_a_save(tmp_path):
    objs, vecs = corpus(20)
    with FaissStore.open(tmp_path / "v", create=True) as store:
        store.add(objs[:10], vecs[:10], record=REC)
    first, second = FaissStore.open(tmp_path / "v"), FaissStore.open(tmp_path / "v")
    first.add(objs[10:15], vecs[10:15], record=REC)
    first.save()
    with pytest.raises(IndexLockedError, match="open it again"):
        second.add(objs[15:], vecs[15:], record=REC)
    assert second.count() == 15  # what the first saved; nothing of the second
    first.close()
    second.close()
    with FaissStore.open(tmp_path / "v") as again:
        assert again.count() == 15 and again._index.ntotal == 15


def test_the_faiss_store_is_the_dense_side_of_a_method_by_one_setting(tmp_path):
    """``store=open_store("faiss", ...)`` in place of the default Chroma index: the same hits for every query."""
    emb = WordCountEmbedder(words=FRUIT_WORDS)  # word counts that tell FRUIT's texts apart
    retriever = StoreRetriever(open_store("faiss", path=tmp_path / "v", create=True), embedder=emb)
    retriever.add(FRUIT)
    faiss_dense = build_method("dense", MethodContext(corpus=FRUIT, store=retriever))
    chroma_dense = build_method("dense", MethodContext(corpus=FRUIT, embedder=emb))

    def ranked(hits):  # equal scores (to 4 places) in id order: the two engines' float ties differ in the last bits
        return sorted((-round(h.score, 4), h.id) for h in hits)

    for q in ("yellow fruit", "apples are red", "programming language", "the longest river"):
        assert ranked(faiss_dense.search(q, k=len(FRUIT))) == ranked(chroma_dense.search(q, k=len(FRUIT)))
        assert faiss_dense.search(q, k=1)[0].obj == next(o for o in FRUIT if o.id == faiss_dense.search(q, k=1)[0].id)
    retriever.close()


def test_without_faiss_installed_the_store_says_what_to_install(tmp_path, monkeypatch):
    from retrievekit.core.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "faiss", None)  # an import of faiss fails as if it were not installed
    for call in (lambda: open_store("faiss", path=tmp_path / "v", create=True), FaissStore.in_memory):
        with pytest.raises(MissingDependencyError, match=r"retrievekit\[faiss\]"):
            call()
    assert not (tmp_path / "v").exists()  # said before any folder is made
