"""The tantivy BM25 engine (``BM25Config(engine="tantivy")``, issues #63 and #61): scores equal a fresh build's after
additions and after deletions (before a compaction too, through tantivy's own merges, in another handle and after a
kill); SciFact quality in the band of the bm25s engine; readers see a
writer's change at their next search; one writer at a time (a typed error); a real SIGKILL during an add, a delete
or a compaction leaves the old or the new state; LiveIndex over it equals a fresh build."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from _living_corpus import QUERIES, passages, rounds
from _paths import REPO

from retrievekit.core.errors import CorpusMismatchError, IndexFormatError, IndexLockedError, InvalidInputError
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.bm25_engine import TantivyEngine
from retrievekit.core.index.corpus_record import corpus_record
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.store import read_manifest
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

TANTIVY = BM25Config(engine="tantivy")
WORDS = (
    "aspirin statin cholesterol insulin glucose diabetes tumour cell protein gene expression receptor kinase "
    "mutation cancer therapy patients trial randomized cohort risk mortality infection vaccine antibody immune "
    "response inflammation cytokine mice model pathway signalling apoptosis dna rna sequencing microbiome gut "
    "obesity sleep exercise memory neuron brain cortex hippocampus dopamine serotonin stress cortisol heart "
    "artery blood pressure kidney liver lung fibrosis bone fracture vitamin zinc iron deficiency pregnancy infant "
    "children adults elderly women men dose placebo efficacy safety outcome increase decrease associated"
).split()


def _corpus(n: int, seed: int, prefix: str = "d") -> list[Passage]:
    """SciFact-like abstracts: Zipf-weighted words, 20 to 160 of them, deterministic."""
    rng = random.Random(seed)
    weights = [1 / (r + 1) for r in range(len(WORDS))]
    return [
        Passage(id=f"{prefix}{i:05d}", text=" ".join(rng.choices(WORDS, weights, k=rng.randint(20, 160))) + ".")
        for i in range(n)
    ]


def _queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, rng.randint(2, 7))) for _ in range(n)]


def _top(idx, q, k=10):
    return [(h.id, h.score) for h in idx.search(q, k)]


def _assert_same(idx, fresh, queries):
    for q in queries:
        got, want = _top(idx, q), _top(fresh, q)
        assert [i for i, _ in got] == [i for i, _ in want], q
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6, abs=1e-6), q


def test_after_deletes_additions_and_compact_scores_equal_a_fresh_build(tmp_path, monkeypatch):
    base, added, queries = _corpus(2000, 1), _corpus(200, 2, prefix="n"), _queries(50, 3)
    BM25Index.build(base, TANTIVY).save(tmp_path / "bm25")
    idx = BM25Index.load(tmp_path / "bm25")
    gone = [p.id for p in base[::10]]
    assert idx.delete(gone + ["not-there"], compact=False) == gone
    assert idx.pending_deletes == 200 and len(idx) == 1800
    idx.add(added)
    live = [p for p in base if p.id not in set(gone)] + added
    fresh = BM25Index.build(live, TANTIVY)
    hits = {h.id for q in queries for h in idx.search(q, 50)}
    assert not hits & set(gone)  # deleted ids vanish at once
    with monkeypatch.context() as m:  # tantivy's own scores still count the deleted documents
        m.setattr(TantivyEngine, "_pending", staticmethod(lambda searcher: 0))
        assert sum(_top(idx, q) != _top(fresh, q) for q in queries) > 0
    _assert_same(idx, fresh, queries)  # before compaction: scored over the live statistics
    _assert_same(BM25Index.load(tmp_path / "bm25"), fresh, queries)  # another handle, from the manifest
    ids = [p.id for p in live[::37]] + gone[:3]
    for q in queries[:10]:
        got, want = idx.scores_of(q, ids), fresh.scores_of(q, ids)
        assert got == pytest.approx(want, rel=1e-6) and not set(got) & set(gone)
    idx.compact()
    assert idx.pending_deletes == 0 and len(idx) == 2000
    _assert_same(idx, fresh, queries)
    again = BM25Index.load(tmp_path / "bm25", corpus=live)  # the corpus record followed every change
    _assert_same(again, fresh, queries)
    assert sorted(p.name for p in (tmp_path / "bm25").iterdir()) == ["gen-000002", "manifest.json"]


def test_scores_stay_a_fresh_builds_while_tantivy_merges_segments_that_hold_deleted_documents(tmp_path):
    """A commit per change: tantivy merges its small segments on its own, dropping some deleted documents from its
    statistics and keeping others; the scores over the live documents do not depend on which."""
    base = _corpus(300, 11)
    BM25Index.build(base, TANTIVY).save(tmp_path / "t")
    idx, reader = BM25Index.load(tmp_path / "t"), BM25Index.load(tmp_path / "t")
    live, deleted = {p.id: p for p in base}, 0
    for r in range(24):
        batch = _corpus(6, 100 + r, prefix=f"r{r:02d}-")
        idx.add(batch)
        live.update((p.id, p) for p in batch)
        gone = [batch[0].id, batch[1].id] + ([base[r].id] if r % 4 == 0 else [])
        assert idx.delete(gone, compact=False) == gone
        deleted += len(gone)
        for i in gone:
            live.pop(i)
    assert 0 < idx.pending_deletes < deleted  # some deleted documents merged away, some still counted
    fresh = BM25Index.build(list(live.values()), TANTIVY)
    queries = [*_queries(30, 12), "aspirin aspirin statin"]  # a repeated term counts again
    _assert_same(idx, fresh, queries)
    _assert_same(reader, fresh, queries)  # another handle: the live length from the manifest


def test_additions_alone_are_exact_at_once_and_scores_stay_near_the_bm25s_engine(tmp_path):
    base, added, queries = _corpus(1000, 4), _corpus(100, 5, prefix="n"), _queries(30, 6)
    idx = BM25Index.build(base, TANTIVY)
    idx.add(added[:50])
    idx.add(added[50:])
    assert idx.pending_deletes == 0
    _assert_same(idx, BM25Index.build(base + added, TANTIVY), queries)
    today = BM25Index.build(base + added)  # the bm25s engine: same analyzer, scores divided by k1 + 1 to match
    rel = [
        abs(a.score - b.score) / b.score
        for q in queries
        for a, b in zip(idx.search(q, 1), today.search(q, 1), strict=False)
    ]
    assert rel and float(np.median(rel)) < 0.05


def test_delete_compacts_on_its_own_above_ten_percent_and_bm25s_changes_too():
    idx = BM25Index.build(_corpus(100, 7), TANTIVY)
    idx.delete([f"d{i:05d}" for i in range(10)])  # 10 of 100: not above 10 %
    assert idx.pending_deletes == 10
    idx.delete(["d00010"])  # 11 of 100
    assert idx.pending_deletes == 0 and len(idx) == 89
    idx.delete(["d00011"], compact=True)
    assert idx.pending_deletes == 0
    plain = BM25Index.build(_corpus(100, 7))
    plain.add([Passage(id="x", text="aspirin aspirin zinc")])
    assert plain.delete(["d00000", "zz"]) == ["d00000"] and len(plain) == 100
    assert plain.search("aspirin zinc", 1)[0].id == "x"


def test_searches_answer_as_today_with_the_same_trace_events_and_ties_by_id():
    docs = [Passage(id="b", text="green tea"), Passage(id="a", text="green tea"), Passage(id="c", text="coffee")]
    idx = BM25Index.build(docs, TANTIVY)
    assert [h.id for h in idx.search("tea", 1)] == ["a"]
    idx.delete(["a"], compact=False)
    idx.add([Passage(id="a", text="green tea")])  # another segment, later address: still first by id
    assert [h.id for h in idx.search("tea", 2)] == ["a", "b"]
    t = Trace()
    assert idx.search("the of and ?!", trace=t) == [] and t.events[0].kind == "no_searchable_terms"
    t = Trace()
    assert idx.search("zebra", trace=t) == [] and t.events[0].kind == "no_match"
    assert idx.query_terms("The cats of Rome?") == ["cats", "rome"]
    scores = idx.scores("coffee")
    assert scores.shape == (3,) and scores[[o.id for o in idx.objects].index("c")] > 0 and np.count_nonzero(scores) == 1


def test_a_tie_group_larger_than_the_first_ask_is_broken_by_id_across_segments():
    ids = [f"t{i:04d}" for i in range(700)]  # 700 equal documents: more than 2k + TIE_ROOM and 8 times that
    random.Random(3).shuffle(ids)
    idx = BM25Index.build([Passage(id=i, text="green tea") for i in ids[:300]], TANTIVY)
    idx.add([Passage(id=i, text="green tea") for i in ids[300:]])  # a second segment, later addresses
    idx.add([Passage(id="z", text="green tea tea"), Passage(id="c", text="coffee")])
    got = idx.search("tea", 10)
    assert [h.id for h in got] == ["z", *sorted(ids)[:9]]
    assert got[1].score == got[9].score < got[0].score
    assert [h.id for h in idx.search("green tea", 3)] == ["z", *sorted(ids)[:2]]


def test_bad_settings_and_changes_are_refused_typed(tmp_path):
    docs = [Passage(id="a", text="tea"), Passage(id="b", text="coffee")]
    for bad in ({"k1": 1.5}, {"b": 0.5}, {"method": "bm25+"}, {"stemmer": ""}, {"stopwords": ""}):
        with pytest.raises(InvalidInputError, match=f"BM25Config.{next(iter(bad))}="):
            BM25Index.build(docs, BM25Config(engine="tantivy", **bad))
    with pytest.raises(InvalidInputError, match="engine must be one of"):
        BM25Index.build(docs, BM25Config(engine="lucene"))
    idx = BM25Index.build(docs, TANTIVY)
    with pytest.raises(InvalidInputError, match="already in the index"):
        idx.add([Passage(id="a", text="x")])
    with pytest.raises(InvalidInputError, match="ids must be a list"):
        idx.delete(None)
    with pytest.raises(InvalidInputError, match=r"objects\[0\]"):
        idx.add(["text"])
    idx.save(tmp_path / "t")
    assert not (tmp_path / "t" / "objects.jsonl").exists()  # documents live in tantivy's doc store
    with pytest.raises(IndexFormatError, match="reads up to version 1"):
        read_manifest(tmp_path / "t", "bm25", 1)  # a retrievekit without the engine refuses the folder
    with pytest.raises(CorpusMismatchError):
        BM25Index.load(tmp_path / "t", corpus=docs[:1])
    (tmp_path / "t" / "manifest.json").write_text(
        (tmp_path / "t" / "manifest.json").read_text().replace('"generation": 1', '"generation": 7')
    )
    with pytest.raises(IndexFormatError, match="damaged"):
        BM25Index.load(tmp_path / "t")
    BM25Index.build(docs, TANTIVY).save(tmp_path / "s")
    for seg in (tmp_path / "s" / "gen-000001").glob("*.store"):
        seg.write_bytes(bytes(b ^ 0x5A for b in seg.read_bytes()))  # a damaged segment: typed, not a Rust panic
    with pytest.raises(IndexFormatError, match="tantivy index"):
        BM25Index.load(tmp_path / "s").search("tea")


def test_a_reader_sees_each_change_at_its_next_search(tmp_path):
    BM25Index.build([Passage(id="a", text="red apples"), Passage(id="b", text="green pears")], TANTIVY).save(
        tmp_path / "t"
    )
    reader, writer = BM25Index.load(tmp_path / "t"), BM25Index.load(tmp_path / "t")
    assert [h.id for h in reader.search("apples")] == ["a"]
    writer.add([Passage(id="c", text="red cherries")])
    assert {h.id for h in reader.search("red", 5)} == {"a", "c"}
    writer.delete(["a"], compact=False)
    assert [h.id for h in reader.search("red", 5)] == ["c"] and reader.pending_deletes == 1
    writer.compact()  # a new generation; the old one is removed
    assert [h.id for h in reader.search("red", 5)] == ["c"] and reader.pending_deletes == 0 and len(reader) == 2
    reader.add([Passage(id="d", text="red plums")])  # the reader writes on the new generation
    assert {h.id for h in writer.search("red", 5)} == {"c", "d"}


_HOLD_THE_LOCK = """
    import sys, time, tantivy
    index = tantivy.Index.open(sys.argv[1])
    writer = index.writer(heap_size=20_000_000, num_threads=1)
    print("locked", flush=True)
    time.sleep(120)
"""


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}


def test_one_writer_at_a_time_another_process_holding_the_lock_is_a_typed_error(tmp_path):
    docs = [Passage(id="a", text="tea"), Passage(id="b", text="coffee")]
    BM25Index.build(docs, TANTIVY).save(tmp_path / "t")
    code = textwrap.dedent(_HOLD_THE_LOCK)
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "t" / "gen-000001")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        idx = BM25Index.load(tmp_path / "t")
        for change in (lambda: idx.add([Passage(id="c", text="milk")]), lambda: idx.delete(["a"]), idx.compact):
            with pytest.raises(IndexLockedError, match="another writer"):
                change()
        assert len(idx) == 2 and [h.id for h in idx.search("tea")] == ["a"]  # nothing changed
    finally:
        holder.kill()
        holder.wait(30)
    idx.add([Passage(id="c", text="milk")])  # the killed holder's lock is free
    assert len(BM25Index.load(tmp_path / "t")) == 3
    other = BM25Index.load(tmp_path / "t")
    with other._engine._writing(), pytest.raises(IndexLockedError):  # the same process: one writer too
        idx.delete(["a"])


_KILLED = """
    import os, shutil, signal, sys
    import retrievekit.core.index.bm25_engine as engine
    from retrievekit.core.index.bm25 import BM25Index
    from retrievekit.core.types import Passage

    folder, what = sys.argv[1], sys.argv[2]
    calls = []
    real_manifest, real_rmtree = engine.write_manifest, shutil.rmtree

    def write_manifest(*a, **kw):  # the kill point: after tantivy's commit, before the manifest names it
        calls.append(1)
        if what in ("add", "delete", "compact") and len(calls) == (2 if what == "compact" else 1):
            os.kill(os.getpid(), signal.SIGKILL)
        real_manifest(*a, **kw)

    def rmtree(path, *a, **kw):  # after the manifest names the new generation, before the old one goes
        if what == "compact_swapped" and "gen-" in str(path):
            os.kill(os.getpid(), signal.SIGKILL)
        real_rmtree(path, *a, **kw)

    engine.write_manifest, engine.shutil.rmtree = write_manifest, rmtree
    idx = BM25Index.load(folder)
    if what == "add":
        idx.add([Passage(id=f"n{i}", text=f"new text number {i}") for i in range(5)])
    elif what == "delete":
        idx.delete(["d00001", "d00002"], compact=False)
    elif what in ("compact", "compact_swapped"):
        idx.delete(["d00001", "d00002"], compact=True)
    elif what == "loop":
        for i in range(10_000):
            idx.add([Passage(id=f"n{i}", text=f"new text number {i}")])
            if i % 3 == 2:
                idx.delete([f"n{i - 1}"], compact=i % 9 == 8)
"""


def _kill(folder, what, after_s=None):
    cmd = [sys.executable, "-c", textwrap.dedent(_KILLED), str(folder), what]
    if after_s is None:
        proc = subprocess.run(cmd, env=_env(), timeout=300, capture_output=True)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
        return
    before = os.stat(folder / "manifest.json").st_mtime_ns
    proc = subprocess.Popen(cmd, env=_env(), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while os.stat(folder / "manifest.json").st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.01)  # its first change is written: the stream is running
    time.sleep(after_s)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]  # still changing the index when killed
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(60) == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]


def _consistent(folder):
    """The index reopened: its objects, count, manifest record and statistics agree; returns its ids."""
    idx = BM25Index.load(folder)
    objs = idx.objects
    assert len(idx) == len(objs) and idx._engine.record == corpus_record(objs)
    manifest = json.loads((folder / "manifest.json").read_text())
    BM25Index.load(folder, corpus=objs)  # the record it opens with names these objects
    _assert_same(idx, BM25Index.build(objs, TANTIVY), ["text number", "aspirin insulin", "number text number"])
    return {o.id for o in objs}, manifest, idx


@pytest.mark.parametrize("what", ["add", "delete", "compact", "compact_swapped"])
def test_a_sigkill_during_a_change_leaves_the_old_or_the_new_state(tmp_path, what):
    base = _corpus(40, 8)
    folder = tmp_path / "t"
    BM25Index.build(base, TANTIVY).save(folder)
    old = {p.id for p in base}
    _kill(folder, what)
    ids, manifest, idx = _consistent(folder)
    if what == "add":  # committed, manifest not yet written: the commit holds, the record is read again
        assert ids == old | {f"n{i}" for i in range(5)} and manifest["n_objects"] == 40
    else:
        assert ids == old - {"d00001", "d00002"}
    assert idx.pending_deletes == (2 if what in ("delete", "compact") else 0)
    idx.add([Passage(id="z", text="after the kill")])  # the next writer sweeps what the kill left
    idx.compact()
    assert sorted(p.name for p in folder.iterdir()) == [f"gen-{manifest['generation'] + 1:06d}", "manifest.json"]
    _assert_same(idx, BM25Index.build(idx.objects, TANTIVY), _queries(10, 9))


@pytest.mark.parametrize("after_s", [0.05, 0.4, 1.0])
def test_a_sigkill_at_any_instant_of_a_stream_of_changes_leaves_a_consistent_index(tmp_path, after_s):
    folder = tmp_path / "t"
    BM25Index.build(_corpus(40, 10), TANTIVY).save(folder)
    _kill(folder, "loop", after_s=after_s)
    ids, _, idx = _consistent(folder)
    assert len(ids) > 40  # killed inside the stream, after some changes
    idx.add([Passage(id="zz", text="after the kill")])
    assert "zz" in {o.id for o in BM25Index.load(folder).objects}


def test_live_index_with_the_tantivy_engine_equals_a_fresh_build_after_three_rounds(tmp_path):
    idx = LiveIndex.create("bm25", path=tmp_path / "live", options={"bm25_engine": "tantivy"})
    for r in rounds():
        idx.upsert(passages(r))
        idx.delete([i for i in idx.ids() if i not in r])
        assert idx._bm25.folder == tmp_path / "live" / "bm25"  # changed in place in its folder
    final = passages(rounds()[-1])
    fresh = BM25Index.build(final, TANTIVY)
    want = {q: [(h.id, round(h.score, 6)) for h in fresh.search(q, 5)] for q in QUERIES}
    assert {q: [(h.id, round(h.score, 6)) for h in idx.search(q, 5)] for q in QUERIES} == want
    idx.close()
    with LiveIndex.open(tmp_path / "live") as again:
        assert {q: [(h.id, round(h.score, 6)) for h in again.search(q, 5)] for q in QUERIES} == want
    manifest = json.loads((tmp_path / "live" / "bm25" / "manifest.json").read_text())
    assert manifest["engine"] == "tantivy" and manifest["n_objects"] == len(final)
    with pytest.raises(InvalidInputError, match="bm25_engine"):
        LiveIndex.create("bm25", options={"bm25_engine": "lucene"})
    with pytest.raises(InvalidInputError, match="no BM25 part"):
        LiveIndex.create("dense", options={"bm25_engine": "tantivy"})


def test_scifact_dev_ndcg_at_10_is_in_the_band_of_the_bm25s_engine(data_dir):
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.eval.metrics import ndcg_at_k

    ds = load_dataset("scifact", str(data_dir), split="dev")
    idx = BM25Index.build(list(ds.corpus), TANTIVY)
    scores = [ndcg_at_k([h.id for h in idx.search(q.text, 10)], ds.qrels.get(q.id, {}), 10) for q in ds.queries]
    assert len(scores) == 215
    assert abs(sum(scores) / len(scores) - 0.6812) <= 0.005


def test_a_live_index_compacts_on_request_below_the_threshold(tmp_path):
    """Deleting under a tenth leaves the deleted documents in tantivy's statistics; ``LiveIndex.compact()`` drops
    them, and the scores are a fresh build's."""
    base = passages(rounds()[0])  # four copies under other ids: one deletion stays under a tenth
    docs = [Passage(id=f"{p.id}-{i}", text=f"{p.text} {i}") for i in range(4) for p in base]
    idx = LiveIndex.create("bm25", path=tmp_path / "live", options={"bm25_engine": "tantivy"})
    idx.upsert(docs)
    idx.delete([docs[0].id])
    assert idx._bm25.pending_deletes == 1
    assert idx.compact() == 1 and idx._bm25.pending_deletes == 0 and idx.compact() == 0
    fresh = BM25Index.build(docs[1:], TANTIVY)
    want = {q: [(h.id, round(h.score, 6)) for h in fresh.search(q, 5)] for q in QUERIES}
    assert {q: [(h.id, round(h.score, 6)) for h in idx.search(q, 5)] for q in QUERIES} == want
    idx.close()


def test_a_change_to_an_opened_folder_reads_only_what_it_changes_and_keeps_the_record_exact(tmp_path, monkeypatch):
    from retrievekit.core.index.corpus_record import RECORD_KEY

    docs = [Passage(id=f"d{i:03d}", text=f"note {i} about tea and rain") for i in range(300)]
    BM25Index.build(docs, TANTIVY).save(tmp_path / "t")
    whole_reads: list[int] = []
    read = TantivyEngine._read_digests
    monkeypatch.setattr(TantivyEngine, "_read_digests", lambda self: whole_reads.append(1) or read(self))
    index, reader = BM25Index.load(tmp_path / "t"), BM25Index.load(tmp_path / "t")
    index.add([Passage(id="new", text="fresh tea")])
    index.delete(["d007", "zz"], compact=False)
    with pytest.raises(InvalidInputError, match="'d001' is already in the index"):
        index.add([Passage(id="d001", text="again")])
    reader.add([Passage(id="other", text="from the second handle")])  # after another handle's commits
    index.delete(["other"], compact=False)
    assert not whole_reads  # no change read every stored document
    live = [d for d in docs if d.id != "d007"] + [Passage(id="new", text="fresh tea")]
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest[RECORD_KEY] == corpus_record(live) and manifest["n_objects"] == len(live) == 300
    assert len(BM25Index.load(tmp_path / "t")) == 300
