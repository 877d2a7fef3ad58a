"""LiveIndex (issue #61 item 1): bm25 / dense / hybrid changed in place answer as a fresh build over what they hold,
in memory and reopened from their folder; bad input and a folder whose parts disagree are refused, typed."""

from __future__ import annotations

import warnings

import pytest
from _live_kill import run_killed
from _living_corpus import QUERIES, passages, rounds

from retrievekit.core.errors import IndexFormatError, IndexRepairedWarning, InvalidInputError
from retrievekit.core.index.baselines import build_bm25, build_dense, build_hybrid
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.updatable import UpdatableIndex
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage

BUILD = {"bm25": build_bm25, "dense": build_dense, "hybrid": build_hybrid}


def _answers(retriever, q):
    return [(h.id, round(h.score, 5)) for h in retriever.search(q, k=5)]


def _fresh(method, corpus, minilm):
    ctx = MethodContext(corpus=corpus, embedder=None if method == "bm25" else minilm)
    return BUILD[method](ctx)


def _sync(idx, round_):
    idx.upsert(passages(round_))
    return idx.delete([i for i in idx.ids() if i not in round_])


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid"])
def test_three_rounds_equal_a_fresh_build_and_survive_reopening(tmp_path, minilm, method):
    emb = None if method == "bm25" else minilm
    idx = LiveIndex.create(method, path=tmp_path / "live", embedder=emb)
    assert isinstance(idx, UpdatableIndex)
    for r in rounds():
        _sync(idx, r)
    final = passages(rounds()[-1])
    assert sorted(idx.ids()) == [p.id for p in final]
    fresh = _fresh(method, final, minilm)
    want = {q: _answers(fresh, q) for q in QUERIES}
    assert {q: _answers(idx, q) for q in QUERIES} == want
    idx.close()
    with LiveIndex.open(tmp_path / "live", embedder=emb) as again:
        assert {q: _answers(again, q) for q in QUERIES} == want
        assert again.corpus == idx.corpus


@pytest.mark.parametrize("engine", ["tantivy", "bm25s"])
def test_only_changed_objects_are_embedded_and_the_interim_bm25_path_is_traced(minilm, engine):
    class Counting:
        name, dim = minilm.name, minilm.dim

        def __init__(self):
            self.texts = 0

        def embed_documents(self, texts, **kw):
            self.texts += len(texts)
            return minilm.embed_documents(texts, **kw)

        def embed_query(self, text):
            return minilm.embed_query(text)

    emb = Counting()
    one, two, _ = rounds()
    options = {} if engine == "tantivy" else {"bm25_engine": engine}  # tantivy: the default
    with LiveIndex.create("hybrid", embedder=emb, options=options) as idx:
        idx.upsert(passages(one))
        first = emb.texts
        idx.upsert(passages(two))
        assert emb.texts - first == 4  # two edited, two new; the five unchanged are not embedded again
        assert idx.last_change.counters["live.unchanged"] == 5
        kinds = [e.kind for e in idx.last_change.events]
        # the bm25s part is built again and the trace says so; tantivy's changes in place
        assert ("bm25_rebuilt" in kinds) == (engine == "bm25s")


def test_bad_input_is_refused_typed(tmp_path):
    idx = LiveIndex.create("bm25")
    with pytest.raises(InvalidInputError, match="objects\\[0\\]"):
        idx.upsert(["just text"])
    with pytest.raises(InvalidInputError, match="appears twice"):
        idx.upsert([Passage(id="a", text="x"), Passage(id="a", text="y")])
    with pytest.raises(InvalidInputError, match="ids must be a list"):
        idx.delete(None)
    with pytest.raises(InvalidInputError, match="ids\\[0\\]"):
        idx.get([1])
    with pytest.raises(InvalidInputError, match="embeds nothing"):
        LiveIndex.create("bm25", embedder="openai:m@http://127.0.0.1:9/v1")
    with pytest.raises(InvalidInputError, match="unknown option|rrf_kk"):
        LiveIndex.create("hybrid", options={"rrf_kk": 3})
    LiveIndex.create("bm25", path=tmp_path / "b")
    with pytest.raises(InvalidInputError, match="holds a live bm25 index"):
        LiveIndex.create("hybrid", path=tmp_path / "b")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInputError, match="something other than a live index"):
        LiveIndex.create("bm25", path=tmp_path / "other")
    idx.close()
    with pytest.raises(InvalidInputError, match="closed"):
        idx.search("x")


def test_empty_and_textless_states_answer_nothing():
    idx = LiveIndex.create("bm25")
    assert idx.search("anything") == []
    idx.upsert([Passage(id="a", text="")])
    assert idx.search("anything") == [] and idx.ids() == ["a"]
    idx.upsert([Passage(id="b", text="red apples")])
    assert [h.id for h in idx.search("apples")] == ["b"]
    assert idx.delete(["a", "b"]) == ["a", "b"] and idx.search("apples") == []


def test_a_part_that_moved_on_without_a_commit_is_brought_back_to_the_committed_objects(tmp_path):
    one = passages(rounds()[0])
    idx = LiveIndex.create("bm25", path=tmp_path / "live")
    idx.upsert(one)
    idx.close()
    BM25Index.build(one[:3]).save(tmp_path / "live" / "bm25")  # a change cut short between its parts
    with pytest.warns(IndexRepairedWarning, match="the BM25 part, rebuilt .*holds another corpus"):
        back = LiveIndex.open(tmp_path / "live")
    fresh = LiveIndex.create("bm25")
    fresh.upsert(one)
    for q in QUERIES:
        assert [(h.id, round(h.score, 6)) for h in back.search(q, 5)] == [
            (h.id, round(h.score, 6)) for h in fresh.search(q, 5)
        ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRepairedWarning)
        LiveIndex.open(tmp_path / "live")  # repaired once: the next open has nothing to say
    with pytest.raises(IndexFormatError, match="not a live index folder"):
        LiveIndex.open(tmp_path / "live" / "bm25")  # a part, not the index


_KILLED = """
    import os, signal, sys
    import retrievekit.core.index.live as live
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.index.live import LiveIndex
    from _living_corpus import passages, rounds

    folder, method, what = sys.argv[1], sys.argv[2], sys.argv[3]
    def save_live(self):  # the parts changed (dense in place, then BM25), live/ not yet committed
        os.kill(os.getpid(), signal.SIGKILL)
    live.LiveIndex._save_live = save_live
    idx = LiveIndex.open(folder, embedder=MiniLMEmbedder.default())
    if what == "add":
        idx.upsert(passages(rounds()[1]))  # new and edited documents
    else:
        idx.delete(sorted(idx.ids())[::2])
"""


@pytest.mark.parametrize("what", ["add", "delete"])
@pytest.mark.parametrize("method", ["dense", "hybrid", "hybrid-tantivy"])
def test_a_sigkill_after_the_parts_changed_leaves_the_committed_state(tmp_path, minilm, method, what):
    """Issue #61's crash rule for the dense side: a real SIGKILL after a change reached the dense part (and BM25's)
    but before ``live/`` committed it: the next open answers as a fresh build over the committed objects."""
    method, _, engine = method.partition("-")
    options = {"bm25_engine": engine} if engine else None
    folder = tmp_path / "live"
    idx = LiveIndex.create(method, path=folder, embedder=minilm, options=options)
    idx.upsert(passages(rounds()[0]))
    old = passages(rounds()[0])
    idx.close()
    run_killed(_KILLED, folder, method, what)
    with pytest.warns(IndexRepairedWarning, match="the dense part"):
        back = LiveIndex.open(folder, embedder=minilm)
    assert sorted(back.ids()) == sorted(p.id for p in old)
    fresh = LiveIndex.create(method, embedder=minilm, options=options)
    fresh.upsert(old)
    assert {q: _answers(back, q) for q in QUERIES} == {q: _answers(fresh, q) for q in QUERIES}
    back.upsert([Passage(id="z", text="after the kill: apples")])  # the next writer carries on
    back.close()
    assert "z" in LiveIndex.open(folder, embedder=minilm).ids()
