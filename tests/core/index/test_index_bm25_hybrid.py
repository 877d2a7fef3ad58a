from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrievekit.core.errors import EmptyCorpusError, EmptyQueryError, IndexFormatError
from retrievekit.core.index.bm25 import BM25Config, BM25Index, top_k_indices
from retrievekit.core.index.hybrid import FusionConfig, HybridRetriever, fuse
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, ScoredHit, Table


def test_bm25_ranks_the_matching_document_first(small_corpus):
    idx = BM25Index.build(small_corpus)
    assert idx.search("highest mountain", k=3)[0].id == "everest"
    assert idx.search("memory-safe systems language", k=1)[0].id == "rust"
    # stemming: "fruit" matches "fruits"
    assert {h.id for h in idx.search("fruit", k=6)} == {"apple", "banana"}


def test_bm25_scores_match_textbook_formula():
    docs = [Passage(id=str(i), text=t) for i, t in enumerate(["cat dog", "cat cat bird", "fish"])]
    cfg = BM25Config(stemmer="", stopwords="", engine="bm25s")
    s = BM25Index.build(docs, cfg).scores("cat")
    n, df = 3, 2
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    avgdl = (2 + 3 + 1) / 3
    # Lucene's BM25 (the 'lucene' variant, as in Elasticsearch/BEIR) drops the constant (k1 + 1) factor
    exp = [
        idf * tf / (tf + cfg.k1 * (1 - cfg.b + cfg.b * dl / avgdl)) if tf else 0 for tf, dl in [(1, 2), (2, 3), (0, 1)]
    ]
    assert np.allclose(s, exp, rtol=1e-5)


def test_bm25_unknown_terms_give_no_hits_and_a_trace_note(small_corpus):
    idx = BM25Index.build(small_corpus)
    t = Trace()
    assert idx.search("zzzz qqqq", k=5, trace=t) == []
    assert t.events[0].kind == "no_match"
    with pytest.raises(EmptyQueryError):
        idx.search("   ")


@pytest.mark.parametrize("query", ["the of and", "?!.", "Is it a...?", "  the  "])
def test_bm25_query_without_searchable_terms_says_so(small_corpus, query):
    idx = BM25Index.build(small_corpus)
    assert idx.query_terms(query) == []
    t = Trace()
    assert idx.search(query, k=5, trace=t) == []
    assert [e.kind for e in t.events] == ["no_searchable_terms"]
    assert "no searchable terms" in t.events[0].message and t.events[0].stage == "bm25"
    # without a stop-word list the same words are terms again, and match
    plain = BM25Index.build(small_corpus, BM25Config(stemmer="", stopwords="", engine="bm25s"))
    if query == "the of and":
        assert plain.query_terms(query) == ["the", "of", "and"] and plain.search(query, k=5)


def test_hybrid_returns_the_dense_hits_for_a_query_bm25_cannot_search(small_corpus, minilm):
    from retrievekit.core.index.dense import DenseIndex

    dense = DenseIndex.build(small_corpus, embedder=minilm, collection_name="stop-words-hybrid")
    h = HybridRetriever([dense, BM25Index.build(small_corpus)], names=["dense", "bm25"])
    t = Trace()
    hits = h.search("is it the?", k=3, trace=t)
    assert [x.id for x in hits] == [x.id for x in dense.search("is it the?", k=3)] and len(hits) == 3
    assert [(e.kind, e.stage) for e in t.events] == [("no_searchable_terms", "bm25")]


def test_bm25_indexes_tables():
    t = Table(id="t", title="Medals", header=["country", "gold"], rows=[["Norway", "16"], ["Germany", "12"]])
    idx = BM25Index.build([t, Passage(id="p", text="Skiing in Norway")])
    assert idx.search("Germany gold", k=1)[0].id == "t"


def test_bm25_persist_round_trip_and_bad_folders(tmp_path, small_corpus):
    idx = BM25Index.build(small_corpus, BM25Config(engine="bm25s"))  # its bm25s arrays are corrupted below
    idx.save(tmp_path / "bm25")
    back = BM25Index.load(tmp_path / "bm25")
    q = "programming language"
    assert [(h.id, round(h.score, 5)) for h in back.search(q, k=4)] == [
        (h.id, round(h.score, 5)) for h in idx.search(q, k=4)
    ]
    # a foreign folder
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "data.bin").write_bytes(b"\x00")
    with pytest.raises(IndexFormatError, match="not a retrievekit index"):
        BM25Index.load(tmp_path / "foreign")
    # corrupt BM25 arrays
    broken = tmp_path / "broken"
    shutil.copytree(tmp_path / "bm25", broken)
    for f in (broken / "bm25s").glob("*.npy"):
        f.write_bytes(b"garbage")
    with pytest.raises(IndexFormatError, match="corrupt"):
        BM25Index.load(broken)


def test_bm25_empty_corpus():
    with pytest.raises(EmptyCorpusError):
        BM25Index.build([])


def test_top_k_is_deterministic_on_ties():
    assert top_k_indices(np.array([1.0, 1.0, 1.0, 2.0]), 3).tolist() == [3, 0, 1]


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, -1.0]), max_size=40), k=st.integers(0, 50))
def test_top_k_is_the_head_of_the_full_order(scores, k):
    """The k-th largest score found by a partition, then only the kept scores sorted: the same as sorting all."""
    s = np.asarray(scores, dtype=np.float32)
    full = np.lexsort((np.arange(s.size), -s))[: min(k, s.size)]
    assert top_k_indices(s, k).tolist() == full.tolist()


def _hits(ids_scores):
    return [ScoredHit(Passage(id=i, text=i), s, r) for r, (i, s) in enumerate(ids_scores)]


def test_rrf_fusion_matches_definition():
    r1 = _hits([("a", 9), ("b", 5), ("c", 1)])
    r2 = _hits([("c", 0.9), ("a", 0.8)])
    out = fuse([r1, r2], [1.0, 1.0], k=3)
    exp = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61}
    assert [h.id for h in out] == sorted(exp, key=lambda i: -exp[i])
    assert all(abs(h.score - exp[h.id]) < 1e-12 for h in out)


def test_weighted_fusion_max_normalises():
    r1 = _hits([("a", 10.0), ("b", 5.0)])
    r2 = _hits([("b", 0.5), ("a", 0.1)])
    out = fuse([r1, r2], [0.9, 0.1], k=2, config=FusionConfig(fusion="weighted"))
    assert out[0].id == "a" and abs(out[0].score - (0.9 * 1.0 + 0.1 * 0.2)) < 1e-9
    assert abs(out[1].score - (0.9 * 0.5 + 0.1 * 1.0)) < 1e-9


def test_hybrid_over_two_bm25_variants(small_corpus):
    plain = BM25Index.build(small_corpus, BM25Config(stemmer="", stopwords="", engine="bm25s"))
    stem = BM25Index.build(small_corpus)
    h = HybridRetriever([plain, stem], names=["plain", "stem"])
    t = Trace()
    hits = h.search("river in Africa", k=2, trace=t)
    assert hits[0].id == "nile"
    assert {"hybrid", "hybrid.plain", "hybrid.stem"} <= set(t.stage_seconds)


def test_scores_are_bm25s_own_to_the_bit():
    """BM25Index adds each term's postings itself (a buffered add); the sums must be bm25s' np.add.at sums exactly,
    a repeated query term counted twice, as bm25s counts it."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    corpus = [Passage(id=str(i), text=" ".join(rng.choice(words, size=30))) for i in range(300)]
    idx = BM25Index.build(corpus, BM25Config(engine="bm25s"))
    for query in ("w1 w2 w3", "w5 w5 w7 w39", "w0"):
        tokens = idx._tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0]
        theirs = np.asarray(idx._model.get_scores([t for t in tokens if t != 0]), dtype=np.float32)
        assert idx.scores(query).tobytes() == theirs.tobytes()
        assert (theirs > 0).sum() > 0
