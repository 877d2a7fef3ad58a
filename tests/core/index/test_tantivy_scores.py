"""Exact BM25 on the tantivy engine while deleted documents are still counted (issue #61): the pieces it rests on
agree with tantivy itself (its terms, its quantised lengths, its scores), and the top k comes out a fresh build's
even when the live statistics lift documents that tantivy's stale scores rank far down (the candidates widen)."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

import retrievekit.core.index.bm25_engine as engine
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.tantivy_docs import analyze, fill, new_index, tantivy
from retrievekit.core.index.tantivy_scores import Stats, average_length, field_norm, rescored, term_counts
from retrievekit.core.types import Passage

TANTIVY = BM25Config(engine="tantivy")
TEXTS = [
    "The cats of Rome, and the cats of PARIS: 12 cats_and dogs.",
    "Aspirin (ASA) reduced IL-6 by 40% in 2,000 patients; p<0.05 -- see Fig. 2a & Table S1.",
    "a I x y z 1 2 3 to be or not to be",
    "Émile's café serves naïve crème brûlée in Zürich",  # not ASCII: tantivy's analyzer itself
    "β-amyloid and α-synuclein (Aβ42) m² µg/mL ½ dose Ⅻ",
    "",
    "running runs runner ran easily fairly happily generously",
]


@pytest.mark.parametrize("text", TEXTS)
def test_term_counts_are_the_analyzers_terms_and_length(text):
    words = analyze(text)
    assert term_counts(text) == (Counter(words), len(words))


def test_lengths_scores_and_statistics_are_tantivys_own():
    lengths = [1, 7, 40, 41, 45, 97, 300, 1000, 2500]
    docs = [Passage(id=f"d{n}", text=" ".join(["tea"] + [f"w{i % 50}x" for i in range(n - 1)])) for n in lengths]
    index = new_index(None)
    fill(index, docs)
    searcher = index.searcher()
    query = tantivy().Query.term_query(index.schema, "text", "tea", index_option="freq")
    hits = searcher.search(query, len(docs)).hits
    stats = Stats(len(docs), sum(lengths), {"tea": len(docs)})
    avg, n = average_length(searcher, index.schema, "tea", hits[0][1])
    assert (n, avg) == (len(docs), pytest.approx(float(stats.average)))
    by_id = {str(searcher.doc(addr)["id"][0]): score for score, addr in hits}
    mine = dict(zip(by_id, rescored(stats, ["tea"], [d for d in docs if d.id in by_id]), strict=True))
    for d, length in zip(docs, lengths, strict=True):  # tantivy quantises the length it scores with
        assert mine[d.id] == pytest.approx(by_id[d.id], rel=1e-6), (length, field_norm(length))
    assert [field_norm(n) for n in lengths] == [1, 7, 40, 40, 44, 96, 280, 984, 2328]


def test_documents_the_live_statistics_lift_from_far_down_are_found(monkeypatch):
    """Most documents holding "zinc" are deleted: its live IDF rises, so short live "zinc" documents that tantivy's
    stale scores rank below many "tea" ones now come first; the candidates widen until the top k is a fresh
    build's."""
    rng = random.Random(5)
    filler = [f"w{i}" for i in range(40)]
    docs = [Passage(id=f"t{i:03d}", text=" ".join(["tea"] * 3 + rng.choices(filler, k=8))) for i in range(150)]
    zinc = [Passage(id=f"z{i:03d}", text=" ".join(["zinc"] + rng.choices(filler, k=30))) for i in range(120)]
    idx = BM25Index.build(docs + zinc, TANTIVY)
    gone = [z.id for z in zinc[:112]]
    idx.delete(gone, compact=False)
    asked = []
    real = engine.exact_top

    def watched(top, *rest):
        return real(lambda m: asked.append(m) or top(m), *rest)

    monkeypatch.setattr(engine, "exact_top", watched)
    fresh = BM25Index.build(docs + zinc[112:], TANTIVY)
    for q, k in (("zinc tea", 10), ("tea zinc zinc", 5), ("zinc", 3), ("w3 tea", 10)):
        got, want = idx.search(q, k), fresh.search(q, k)
        assert [h.id for h in got] == [h.id for h in want], q
        assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-6), q
    assert idx.pending_deletes == 112 and max(asked) > 20  # some search had to widen past its first candidates
    assert idx.scores_of("zinc", ["z115", "t001", "z000"]) == pytest.approx(fresh.scores_of("zinc", ["z115", "t001"]))


@pytest.mark.parametrize("reader", ["same handle", "another handle, then a compaction"])
def test_a_search_in_another_thread_during_deletes_reads_one_state(tmp_path, reader):
    """Deletes in one thread, searches in two others (on the same index, or on another handle of its folder while the
    last delete compacts it into a new generation): each answer is a fresh build's over the documents held before or
    after some delete, never a reader of one state scored with another's statistics."""
    rng = random.Random(9)
    words = [f"w{i}" for i in range(30)]
    docs = [Passage(id=f"d{i:03d}", text=" ".join(rng.choices(words, k=rng.randint(5, 40)))) for i in range(200)]
    gone = [d.id for d in docs[::9]][:20]
    queries = ["w1 w2 w3", "w4 w4 w9", "w17 w28"]
    states, held = [], list(docs)
    for i in [None, *gone]:  # every state the deletes pass through, answered by a fresh build
        held = [d for d in held if d.id != i]
        fresh = BM25Index.build(held, TANTIVY)
        states.append({q: [(h.id, h.score) for h in fresh.search(q, 5)] for q in queries})
    idx, seen, stop = BM25Index.build(docs, TANTIVY, folder=tmp_path / "b"), [], threading.Event()
    other = idx if reader == "same handle" else BM25Index.load(tmp_path / "b")
    compact_last = reader != "same handle"

    def search():
        while not stop.is_set():
            seen.extend((q, [(h.id, h.score) for h in other.search(q, 5)]) for q in queries)

    readers = [threading.Thread(target=search) for _ in range(2)]
    for t in readers:
        t.start()
    for n, i in enumerate(gone, 1):
        idx.delete([i], compact=compact_last and n == len(gone))
    time.sleep(0.2)  # the readers' searches after the last change
    stop.set()
    for t in readers:
        t.join()

    def one_of_the_states(q, got):
        return any(
            [i for i, _ in got] == [i for i, _ in s[q]] and [x for _, x in got] == pytest.approx([x for _, x in s[q]])
            for s in states
        )

    assert len(seen) > 20 and other.pending_deletes == (0 if compact_last else 20)
    assert all(one_of_the_states(q, got) for q, got in seen)
