"""Issue #63 item 2: a method asks BM25 for its top hits and the scores of named objects (``scores_of``), not for
every object's score, so the tantivy engine never scores the whole corpus for ARM; the bm25s engine gives the same
values as before, from one scoring of the corpus per query."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.arm.retriever import Arm
from retrievekit.core.fakes import OnesEmbedder
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.types import Passage, Table

DOCS = [Passage(id=f"p{i}", text=f"topic{i % 5} words about item{i} " + "filler " * (i % 4)) for i in range(40)]


@pytest.mark.parametrize("engine", ["bm25s", "tantivy"])
def test_scores_of_gives_what_scores_gives_those_objects(engine):
    idx = BM25Index.build(DOCS, BM25Config(engine=engine))
    full = dict(zip([o.id for o in idx.objects], idx.scores("topic3 item7").tolist(), strict=True))
    asked = ["p7", "p3", "p8", "p0", "missing"]
    got = idx.scores_of("topic3 item7", asked)
    assert set(got) == {"p7", "p3", "p8", "p0"}  # an id the index does not hold is left out
    assert got == pytest.approx({i: full[i] for i in got}, rel=1e-6)
    assert got["p0"] == 0.0 and got["p7"] > got["p3"] > 0  # no term: 0.0


def test_the_bm25s_engine_scores_the_corpus_once_for_a_search_and_scores_of_the_same_query(monkeypatch):
    idx = BM25Index.build(DOCS, BM25Config(engine="bm25s"))
    calls = []
    real = BM25Index.scores
    monkeypatch.setattr(BM25Index, "scores", lambda self, q: calls.append(q) or real(self, q))
    hits = idx.search("topic2 item12", 5)
    assert idx.scores_of("topic2 item12", [h.id for h in hits]) == {h.id: pytest.approx(h.score) for h in hits}
    assert calls == ["topic2 item12"]
    idx.add([Passage(id="new", text="topic2 again")])  # a change: the kept scores are not reused
    assert "new" in idx.scores_of("topic2 item12", ["new"]) and len(calls) == 2


@pytest.mark.parametrize("engine", ["bm25s", "tantivy"])
def test_arm_never_scores_every_object_and_ranks_as_before(engine, monkeypatch):
    corpus = [
        *DOCS,
        Table(id="t", title="Cast", header=("Role", "Series"), rows=(("Robert", "Prime Suspect"),)),
        Passage(id="ps", title="Prime Suspect", text="Prime Suspect was created by Lynda La Plante."),
    ]
    bm25 = BM25Index.build(corpus, BM25Config(engine=engine))
    arm = Arm(corpus, None, embedder=OnesEmbedder(), bm25=bm25)
    before = [(h.id, round(h.score, 9)) for h in arm.search("Who created the series with Robert?", k=5)]

    def every_object(self, query):
        raise AssertionError("ARM scored every object")

    if engine == "tantivy":
        monkeypatch.setattr(BM25Index, "scores", every_object)
    again = [(h.id, round(h.score, 9)) for h in arm.search("Who created the series with Robert?", k=5)]
    assert again == before and "t" in {i for i, _ in again}
    assert np.isfinite([s for _, s in again]).all()
