"""Issue #54 item 4: degenerate slate replies count as fallbacks, and llm-rerank never silently goes pointwise."""

from __future__ import annotations

import json

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.fallbacks import fallback_block, fallback_warnings, stage_counts
from retrievekit.core.fakes import FixedReplyLLM, WordScoreLLM
from retrievekit.core.lattice import LatticeConfig
from retrievekit.core.lattice.listwise import ListwiseJudge
from retrievekit.core.lattice.method import build_llm_rerank
from retrievekit.core.lattice.scoring import SlateScorer
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

TEXTS = [f"passage number {i} about topic {i}" for i in range(10)]


def _scored(reply: list[int], shuffle: bool = False):
    trace = Trace()
    llm = FixedReplyLLM(json.dumps({"scores": reply}))
    with trace.stage("llm_rerank.score"):
        out = SlateScorer(llm, LatticeConfig(shuffle_slates=shuffle)).score("q", TEXTS, leaf=True, trace=trace)
    return out, trace


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ([0] * 10, "all 10 scores are 0"),
        ([50] * 10, "all 10 scores are equal"),
        ([90, 80, 70, 60, 50, 40, 30, 20, 10, 0], "counting sequence"),
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "counting sequence"),
    ],
)
def test_a_reply_that_ranks_nothing_is_a_fallback_and_the_warning_fires(reply, why):
    out, trace = _scored(reply)
    events = [e.message for e in trace.events if e.kind == "fallback"]
    assert out.source == "fallback" and len(events) == 1 and "ranks nothing" in events[0]
    block = fallback_block([stage_counts(trace)])
    assert block is not None and block["llm_rerank.score"]["rate"] == 1.0
    assert fallback_warnings(block) and trace.counters["lattice.degenerate_slates"] == 1


def test_the_counting_sequence_is_read_in_the_order_the_llm_was_shown():
    # with shuffled slates, 80, 70, ..., -10 in the shown slots is still the counted-off reply
    out, trace = _scored([80, 70, 60, 50, 40, 30, 20, 10, 0, 5], shuffle=True)
    assert out.source == "llm" and "lattice.degenerate_slates" not in trace.counters
    out, trace = _scored([90, 80, 70, 60, 50, 40, 30, 20, 10, 0], shuffle=True)
    assert out.source == "fallback" and "counting sequence" in out.events[0]


def test_every_llm_scored_slate_records_its_spread():
    out, trace = _scored([90, 10, 40, 0, 0, 20, 30, 0, 0, 5])
    assert out.source == "llm" and out.spread == 0.9
    assert trace.counters["lattice.llm_slates"] == 1 and trace.counters["lattice.slate_spread"] == 0.9
    assert not [e for e in trace.events if e.kind == "fallback"]


def test_the_listwise_judge_notes_a_degenerate_slate():
    trace = Trace()
    scores = ListwiseJudge(FixedReplyLLM(json.dumps({"scores": [0] * 10}))).score_relevance("q", TEXTS, trace=trace)
    assert scores == [0.0] * 10 and any("ranks nothing" in e.message for e in trace.events if e.kind == "fallback")


def _ctx(**options):
    docs = [Passage(id=f"d{i}", text=f"sun report {i}" if i % 3 else f"rain report {i}") for i in range(30)]
    return MethodContext(corpus=docs, llm=WordScoreLLM("sun"), options={"first_stage": "bm25", **options})


def test_llm_rerank_derives_its_calls_from_fewer_candidates():
    r = build_llm_rerank(_ctx(candidates="20"))
    assert (r.candidates, r.calls) == (20, 8)  # the landed default (40 calls) made 20 one-candidate slates
    assert (build_llm_rerank(_ctx()).candidates, build_llm_rerank(_ctx()).calls) == (100, 40)


def test_llm_rerank_refuses_one_candidate_slates_with_a_message():
    with pytest.raises(InvalidInputError, match="one candidate per slate"):
        build_llm_rerank(_ctx(candidates="20", calls="40"))
