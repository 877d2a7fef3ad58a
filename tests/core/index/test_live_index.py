"""LiveIndex (issue #61 item 1): bm25 / dense / hybrid changed in place answer as a fresh build over what they hold,
in memory and reopened from their folder; bad input and a folder whose parts disagree are refused, typed."""

from __future__ import annotations

import pytest
from _living_corpus import QUERIES, passages, rounds

from retrievekit.core.errors import CorpusMismatchError, IndexFormatError, InvalidInputError
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


def test_only_changed_objects_are_embedded_and_the_interim_bm25_path_is_traced(minilm):
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
    with LiveIndex.create("hybrid", embedder=emb) as idx:
        idx.upsert(passages(one))
        first = emb.texts
        idx.upsert(passages(two))
        assert emb.texts - first == 4  # two edited, two new; the five unchanged are not embedded again
        assert idx.last_change.counters["live.unchanged"] == 5
        in_place = callable(getattr(BM25Index, "add", None)) and callable(getattr(BM25Index, "delete", None))
        kinds = [e.kind for e in idx.last_change.events]
        assert ("bm25_rebuilt" in kinds) is not in_place  # the interim path says so; the in-place one does not


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


def test_a_folder_whose_part_holds_another_corpus_is_refused(tmp_path):
    one = passages(rounds()[0])
    idx = LiveIndex.create("bm25", path=tmp_path / "live")
    idx.upsert(one)
    BM25Index.build(one[:3]).save(tmp_path / "live" / "bm25")  # a change cut short between its parts
    with pytest.raises(CorpusMismatchError):
        LiveIndex.open(tmp_path / "live")
    with pytest.raises(IndexFormatError, match="not a live index folder"):
        LiveIndex.open(tmp_path / "live" / "bm25")  # a part, not the index
