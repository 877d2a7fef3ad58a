"""Plan replay for agent judge sweeps: the model's replies are recorded once per question and replayed.

The chat model is scripted (its replies are the point: the test asserts they are replayed, not asked again); BM25,
the judge hook and the LangGraph runtime are real.
"""

from __future__ import annotations

import json

import pytest
from _corpora import FRUIT
from _judges import OverlapJudge
from langchain_core.messages import AIMessage

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.iterative.plan_cache import PlanCache
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.registry import MethodContext
from retrievekit.langgraph.graph import build_iterative_agent
from retrievekit.langgraph.method import IterativeAgentMethod, build_iterative
from retrievekit.langgraph.plan_replay import PlanReplayChatModel
from retrievekit.langgraph.testing import ScriptedToolChatModel

QUESTION = "Which fruits are yellow or red?"


def _script():
    search = AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "yellow fruits"}, "id": "1"}])
    return ScriptedToolChatModel(replies=[search, "bananas"])


def _searches(state):
    return [(e["data"].get("query"), e["data"].get("role")) for e in state["trace"] if e["kind"] == "search"]


def test_a_replayed_run_makes_the_recorded_searches_and_follows_its_own_judge(tmp_path):
    cache = PlanCache(tmp_path, model="scripted", settings={"max_turns": 5}, corpus_ids=[p.id for p in FRUIT])
    live = _script()
    model = PlanReplayChatModel(inner=live, plans=cache)
    index = BM25Index.build(FRUIT)
    plain = IterativeAgentMethod(build_iterative_agent(model, index), plans=model)
    recorded = [h.id for h in plain.search(QUESTION)]
    assert live.position == 2 and len(cache) == 1 and plain.last_run.trace.counters["iterative.plan_replayed"] == 0

    judge = OverlapJudge(planted={"Bananas": 0.9, "": 0.1})  # keeps only the banana passage
    judged = IterativeAgentMethod(build_iterative_agent(model, index, judge=judge), plans=model)
    kept = [h.id for h in judged.search(QUESTION)]
    assert live.position == 2  # the model was not asked again
    assert judged.last_run.trace.counters["iterative.plan_replayed"] == 1 and judged.last_answer == "bananas"
    assert _searches(judged.last_run.state) == _searches(plain.last_run.state)
    assert kept == ["banana"] and set(recorded) > {"banana"}


def test_a_failed_live_run_is_not_recorded(tmp_path):
    cache = PlanCache(tmp_path, model="scripted", settings={}, corpus_ids=[])
    broken = ScriptedToolChatModel(replies=[RuntimeError("server down")])
    model = PlanReplayChatModel(inner=broken, plans=cache)
    method = IterativeAgentMethod(
        build_iterative_agent(model, BM25Index.build(FRUIT), on_llm_error="stop"), plans=model
    )
    method.search(QUESTION)
    assert method.last_run.stop_reason == "llm_error" and len(cache) == 0 and cache.get(QUESTION) is None


def test_a_plan_too_short_for_the_agent_is_an_llm_error_not_a_silent_answer(tmp_path):
    cache = PlanCache(tmp_path, model="scripted", settings={}, corpus_ids=[])
    search = {"content": "", "tool_calls": [{"name": "chunk_search", "args": {"query": "fruit"}}]}
    cache.put(QUESTION, [search])  # no answer recorded
    model = PlanReplayChatModel(inner=ScriptedToolChatModel(replies=["never asked"]), plans=cache)
    method = IterativeAgentMethod(
        build_iterative_agent(model, BM25Index.build(FRUIT), max_turns=3, on_llm_error="stop"), plans=model
    )
    method.search(QUESTION)
    run = method.last_run
    assert run.stop_reason == "llm_error" and model.inner.position == 0 and run.answer == ""
    assert any("recorded plan" in json.dumps(e) for e in run.state["trace"])


class _ToolJSON(ChatLLMBase):
    """Stands in for the local model under the tool-call schema: a search, then an answer; counts its calls."""

    name = "tool-json"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.calls += 1
        if self.calls % 2:
            return Completion('{"tool": "chunk_search", "query": "yellow fruits"}')
        return Completion('{"tool": "final_answer", "answer": "bananas"}')


def test_bench_option_plan_cache_records_under_the_work_dir_and_replays(tmp_path):
    lm = _ToolJSON()
    opts = {"base": "bm25", "plan_cache": "true", "max_turns": 2, "fallback": "false"}
    first = build_iterative(MethodContext(corpus=FRUIT, work_dir=tmp_path, llm=lm, options=opts))
    first.search(QUESTION)
    calls = lm.calls
    assert calls >= 2 and list((tmp_path / "agent-plans").glob("plans.*.jsonl"))
    judged = {**opts, "judge_threshold": 0.9}  # a different threshold shares the plan; the judge is not in the key
    again = build_iterative(MethodContext(corpus=FRUIT, work_dir=tmp_path, llm=lm, options=judged))
    again.search(QUESTION)
    assert lm.calls == calls and again.last_run.trace.counters["iterative.plan_replayed"] == 1
    other = build_iterative(MethodContext(corpus=FRUIT, work_dir=tmp_path, llm=lm, options={**opts, "max_turns": 3}))
    other.search(QUESTION)
    assert (
        lm.calls > calls and other.last_run.trace.counters["iterative.plan_replayed"] == 0
    )  # other settings: recorded anew


def test_plan_cache_true_without_a_work_dir_is_a_typed_error():
    with pytest.raises(InvalidInputError, match="needs a work dir"):
        build_iterative(MethodContext(corpus=FRUIT, llm=_ToolJSON(), options={"base": "bm25", "plan_cache": "true"}))


@pytest.mark.parametrize("off", [False, "false", "none", ""])
def test_plan_cache_off_values_build_no_replay(tmp_path, off):
    method = build_iterative(
        MethodContext(corpus=FRUIT, work_dir=tmp_path, llm=_ToolJSON(), options={"base": "bm25", "plan_cache": off})
    )
    assert method.plans is None and not (tmp_path / "agent-plans").exists()
