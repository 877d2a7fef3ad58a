"""ARM's index over a living corpus (issue #61 item 2): :class:`LiveArm` (``LiveIndex.create("arm")``) adds, edits and
deletes objects in place (its BM25 and dense parts changed, only what changed embedded) and answers as ARM built
fresh over the live objects: the same ids with the same scores (to 1e-6), before and after reopening its folder.

Real components: all-MiniLM-L6-v2, real Chroma, the BM25 index, ARM's retrieval, alignment and MIP stages (no LLM:
``llm="none"``, the stages that need a model are skipped the same way in both).
"""

from __future__ import annotations

import asyncio

import pytest
from _living_corpus import QUERIES, passages, rounds

from retrievekit.core.arm.index import LiveArm
from retrievekit.core.arm.method import create_arm
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.trace import Trace


def _same(got, want) -> None:
    assert [h.id for h in got] == [h.id for h in want]
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)


@pytest.mark.parametrize("engine", ["bm25s", "tantivy"])
def test_a_living_arm_answers_as_arm_built_fresh_over_the_live_objects(tmp_path, minilm, engine):
    """On the tantivy engine the BM25 part changes in place (no ``bm25_rebuilt`` event) and, compacted, scores as a
    fresh build's; on bm25s it is built again at each change."""
    one, two, three = rounds()
    folder = tmp_path / "arm"
    options = {"base_k": 3} | ({"bm25_engine": engine} if engine == "bm25s" else {})  # tantivy: the default
    idx = LiveIndex.create("arm", path=folder, embedder=minilm, llm="none", options=options)
    assert isinstance(idx, LiveArm) and idx.search(QUERIES[0]) == []
    idx.upsert(passages(one))
    for r_old, r_new in ((one, two), (two, three)):
        trace = Trace()
        idx.upsert([p for p in passages(r_new) if r_old.get(p.id) != p.text], trace=trace)
        assert trace.counters["live.upserted"] == sum(r_old.get(k) != v for k, v in r_new.items())
        idx.delete(sorted(set(r_old) - set(r_new)), trace=trace)
        assert any(e.kind == "bm25_rebuilt" for e in trace.events) is (engine == "bm25s")
    idx.compact()  # tantivy: the deleted documents leave the statistics (bm25s: nothing to do)
    final = passages(three)
    assert sorted(o.id for o in idx.get(idx.ids())) == [p.id for p in final]
    fresh = create_arm(
        final, llm=None, embedder=minilm, base_k=3, bm25=BM25Index.build(final, BM25Config(engine=engine))
    )
    try:
        for q in QUERIES:
            _same(idx.search(q, k=5), fresh.search(q, k=5))
        _same(asyncio.run(idx.asearch(QUERIES[1], k=5)), fresh.search(QUERIES[1], k=5))
        idx.close()
        back = LiveIndex.open(folder, embedder=minilm, llm="none")
        assert isinstance(back, LiveArm) and back.config.base_k == 3 and back.bm25_config.engine == engine
        for q in QUERIES:
            _same(back.search(q, k=5), fresh.search(q, k=5))
        back.close()
    finally:
        fresh.dense.close()


def test_arm_options_and_models_are_checked_by_name(minilm):
    with pytest.raises(InvalidInputError, match="unknown ARM option"):
        LiveIndex.create("arm", embedder=minilm, options={"fusion": "rrf"})
    with pytest.raises(InvalidInputError, match="llm= reaches no part of a hybrid LiveIndex"):
        LiveIndex.create("hybrid", embedder=minilm, llm="none")
