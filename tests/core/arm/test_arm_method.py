"""ARM end to end on a small table + passage corpus: real MiniLM, Chroma, BM25, pulp/HiGHS and a tiny real LM."""

from __future__ import annotations

import pulp
import pytest
from _arm import QUESTION, Chat, corpus
from _tiny_lm import tiny_local_lm

from retrievekit.core.arm import Arm, ArmConfig
from retrievekit.core.arm.method import build_arm_no_mip
from retrievekit.core.errors import EmptyCorpusError, EmptyQueryError, InvalidInputError
from retrievekit.core.eval.fallbacks import stage_counts
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.llm import LocalLM
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.registry import MethodContext, available_methods
from retrievekit.core.trace import Trace

CFG = {
    "max_keywords": 2,
    "keyword_beams": 2,
    "words_per_keyword": 2,
    "verify_beams": 2,
    "verify_max_objects": 2,
    "ilp_k": 4,
    "prompt_rows": 2,
    "prompt_chars": 60,
}


@pytest.fixture(scope="module")
def indexes(minilm_module):
    objs = corpus()
    return (
        objs,
        DenseIndex.build(objs, embedder=minilm_module, collection_name="arm-test-method"),
        BM25Index.build(objs),
    )


@pytest.fixture(scope="module")
def minilm_module():
    from retrievekit.core.index.embeddings import MiniLMEmbedder

    return MiniLMEmbedder.default()


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    return tiny_local_lm(outlines=False)  # no schema compile: keeps the tests fast


def make(indexes, llm=None, **options) -> Arm:
    objs, dense, bm25 = indexes
    return Arm(objs, llm, ArmConfig.from_options({**CFG, **options}), dense=dense, bm25=bm25)


def test_without_llm_the_mip_set_keeps_the_linked_objects(indexes):
    trace = Trace()
    arm = make(indexes)
    hits = arm.search(QUESTION, k=10, trace=trace)
    ids = [h.id for h in hits]
    assert {"Nonso_Anozie_1", "/wiki/Prime_Suspect"} <= set(ids)
    assert arm.returns_set and all(h.obj.metadata["arm_selected"] for h in hits)
    table = next(h for h in hits if h.id == "Nonso_Anozie_1")
    assert (
        "cell 'Prime Suspect' in table 'Nonso Anozie - Television' links to passage 'Prime Suspect'"
        in (table.obj.metadata["arm_links"])
    )
    assert "cell_links" not in table.obj.metadata and table.obj.metadata["padded_rows"] == 1
    assert {e.kind for e in trace.events} == {"no_llm"} and trace.llm_calls == 0
    assert trace.counters["arm.drafts"] == 3 and "arm.mip" in trace.stage_seconds
    assert [h.rank for h in hits] == list(range(len(hits)))


def test_with_the_tiny_lm_every_stage_runs(indexes, lm):
    trace = Trace()
    hits = make(indexes, lm).search(QUESTION, k=3, trace=trace)
    assert 1 <= len(hits) <= 3
    # 1 constrained decomposition + 1-2 rephrasings + 3 verifications
    assert 1 <= trace.counters["arm.keywords"] <= 2 and trace.counters.get("arm.verify_failed", 0) == 0
    assert 1 + trace.counters["arm.keywords"] + 3 == trace.llm_calls
    kw = next(e for e in trace.events if e.kind == "keywords")
    assert all(k.lower() in QUESTION.lower().replace(",", " ,") or k in QUESTION.lower() for k in kw.data["keywords"])
    for stage in ("arm.keywords", "arm.base", "arm.compatibility", "arm.mip", "arm.verify"):
        assert stage in trace.stage_seconds
    for h in hits:
        meta = h.obj.metadata
        assert meta["arm_votes"] >= 1 and meta["arm_logprob"] <= 0 and meta["arm_set"] == [x.id for x in hits]


def test_ablations_and_options(indexes, lm):
    no_mip, no_verify = Trace(), Trace()
    make(indexes, lm, mip=False).search(QUESTION, k=5, trace=no_mip)
    assert "arm.mip_seconds" not in no_mip.counters
    make(indexes, lm, verify=False, keywords=False).search(QUESTION, k=5, trace=no_verify)
    assert no_verify.llm_calls == 0 and "arm.verify" not in no_verify.stage_seconds
    assert {"arm", "arm-no-mip", "arm-no-verify"} <= set(available_methods())
    with pytest.raises(InvalidInputError):
        ArmConfig.from_options({"mip": "maybe"})


def test_fill_to_k_pads_with_unselected_candidates(indexes):
    arm = make(indexes, fill_to_k=True, expand_ks="0", ilp_k=1, base_k=1)
    hits = arm.search("solar panels", k=4)
    assert len(hits) == 4 and not arm.returns_set
    assert hits[0].obj.metadata["arm_selected"] and not hits[-1].obj.metadata["arm_selected"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_solver_unavailable_is_traced_and_falls_back(indexes, monkeypatch):
    monkeypatch.setattr(pulp.HiGHS, "available", lambda self: False)
    trace = Trace()
    hits = make(indexes).search(QUESTION, k=5, trace=trace)
    assert hits
    assert trace.counters["arm.mip_fallback"] == 3
    assert any(e.kind == "mip_fallback" and "not available" in e.message for e in trace.events)


def test_chat_llm_path_snaps_keywords_and_verifies_by_json(indexes):
    trace = Trace()
    hits = make(indexes, Chat()).search(QUESTION, k=5, trace=trace)
    assert {h.id for h in hits} == {"Nonso_Anozie_1", "/wiki/Prime_Suspect"}
    assert all(h.obj.metadata["arm_logprob"] == 0.0 for h in hits)
    assert trace.llm_calls == 4


class Broken(ChatLLMBase):
    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        return Completion("I cannot answer that.", 1, 1)


def test_broken_llm_degrades_gracefully(indexes):
    trace = Trace()
    hits = make(indexes, Broken()).search(QUESTION, k=5, trace=trace)
    assert hits
    kinds = [e.message for e in trace.events if e.kind == "fallback"]
    assert any("content words" in m for m in kinds)
    assert any("verification failed for every draft" in m for m in kinds)
    # every fallback is in a named stage (a bench run reports it per stage, never under "(none)")
    counts = stage_counts(trace)
    assert "(none)" not in counts and counts["arm.aggregate"] == {"llm_calls": 0, "fallbacks": 1}


def test_no_candidates_and_bad_input(indexes):
    objs, dense, bm25 = indexes

    class NoDense:
        embedder = dense.embedder

        def search(self, query, k=10, *, trace=None):
            return []

    trace = Trace()
    arm = Arm(objs, None, ArmConfig(), dense=NoDense(), bm25=bm25)
    assert arm.search("zzzz qqqq", k=3, trace=trace) == []
    assert any(e.kind == "no_candidates" for e in trace.events)
    with pytest.raises(EmptyQueryError):
        arm.search("   ")
    with pytest.raises(InvalidInputError):
        arm.search("q", k=0)
    with pytest.raises(EmptyCorpusError):
        Arm([], None, dense=NoDense(), bm25=bm25)


def test_a_query_of_stop_words_is_ranked_by_dense_alone_and_says_so(indexes):
    trace = Trace()
    hits = make(indexes).search("Is it, or is it not?", k=3, trace=trace)
    assert hits  # dense similarity still ranks objects
    notes = [e for e in trace.events if e.kind == "no_searchable_terms"]
    assert len(notes) == 1 and notes[0].stage == "arm.base"
    t = Trace()
    make(indexes).search(QUESTION, k=3, trace=t)
    assert "no_searchable_terms" not in [e.kind for e in t.events]


def test_factory_with_work_dir_caches_indexes(tmp_path):
    ctx = MethodContext(corpus=corpus(), work_dir=tmp_path, llm="none", options={"expand_ks": "3"})
    arm = build_arm_no_mip(ctx)
    assert not arm.config.mip and arm.llm is None and arm.config.expand_ks == (3,)
    assert sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == ["bm25", "dense"]
    assert arm.search("Prime Suspect creator", k=3)


def test_identical_drafts_reuse_the_verdict(indexes):
    trace = Trace()
    hits = make(indexes, Chat(), expand_ks="3,3", verify_beams=1).search(QUESTION, k=5, trace=trace)
    assert trace.counters["arm.verify_reused"] == 1
    assert trace.llm_calls == 2  # keywords JSON + one verification for two identical drafts
    assert all(h.obj.metadata["arm_votes"] == 2 for h in hits)
