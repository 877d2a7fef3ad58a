"""The iterative agent's tool steps (Fishing for Answers, mechanism 3), tested on their own: no LangGraph, no model."""

from __future__ import annotations

import dataclasses
import json

import pytest

from retrievekit.core.errors import InvalidInputError, ToolCallError
from retrievekit.core.iterative import (
    ChunkDeleteArgs,
    ChunkSearchArgs,
    SearchSettings,
    StepResult,
    delete_step,
    make_chunk,
    parse_tool_call,
    rejected_step,
    search_step,
    unparsable_call,
)
from retrievekit.core.trace import Trace

QUESTION = "If Gallu is a demon, Lilu is what?"
DOCS = {
    "lilu": make_chunk("lilu", "Lilu is a masculine Akkadian word for a spirit.", title="Lilu"),
    "alu": make_chunk("alu", "Alû is a demon in Babylonian mythology."),
    "gallu": make_chunk("gallu", "Gallu are demons of the underworld.", title="Gallu"),
    "rome": make_chunk("rome", "Rome is the capital of Italy."),
}


class Scripted:
    """A search function: fixed ids per query (missing query: nothing), recording every call."""

    def __init__(self, results: dict[str, list[str]]) -> None:
        self.results = results
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, k: int, trace: Trace | None) -> list:
        self.calls.append((query, k))
        return [dict(DOCS[i]) for i in self.results.get(query, [])]


class ScriptedJudge:
    """A relevance judge with fixed P(relevant) per chunk id (looked up in the chunk text), recording its calls."""

    def __init__(self, scores: dict[str, float], fail: Exception | None = None) -> None:
        self.scores = scores
        self.fail = fail
        self.calls: list[tuple[str, list[str]]] = []

    def score_relevance(self, query, candidates, *, trace=None):
        self.calls.append((query, list(candidates)))
        if trace is not None:
            trace.record_llm_call(7 * len(candidates), 1)
        if self.fail is not None:
            raise self.fail
        return [next((p for key, p in self.scores.items() if key in c), 0.0) for c in candidates]


def kinds(result: StepResult) -> list[str]:
    return [e["kind"] for e in result.events]


def ids(chunks) -> list[str]:
    return [c["id"] for c in chunks]


# ---------------------------------------------------------------------------------------------- search_step


def test_fallback_search_runs_on_turn_one_after_the_models_query():
    search = Scripted({"Lilu spirit": ["lilu"], QUESTION: ["gallu", "alu"]})
    r = search_step([], ChunkSearchArgs(query="Lilu spirit"), search, question=QUESTION, turn=1)
    assert search.calls == [("Lilu spirit", 5), (QUESTION, 5)]
    assert kinds(r) == ["fallback_search", "search", "search"]
    assert r.events[0]["data"] == {"query": "Lilu spirit", "original": QUESTION} and r.events[0]["turn"] == 1
    assert [(e["data"]["role"], e["data"]["added"]) for e in r.events[1:]] == [
        ("model", ["lilu"]),
        ("fallback", ["gallu", "alu"]),
    ]
    assert ids(r.working_set) == ["lilu", "gallu", "alu"]
    assert r.searches == 2 and r.fallback_done and not r.error and r.usage == {}
    assert r.reply == "Added 3 chunk(s): [lilu], [gallu], [alu] Working set: 3 chunk(s)."
    assert [(p["event"], p["role"]) for p in r.progress] == [("search", "model"), ("search", "fallback")]


@pytest.mark.parametrize(
    ("turn", "fallback_done", "settings"),
    [(2, False, None), (1, True, None), (1, False, SearchSettings(fallback_on_first_turn=False))],
)
def test_no_fallback_after_turn_one_once_done_or_when_disabled(turn, fallback_done, settings):
    search = Scripted({"Lilu": ["lilu"], QUESTION: ["gallu"]})
    r = search_step(
        [],
        ChunkSearchArgs(query="Lilu"),
        search,
        question=QUESTION,
        turn=turn,
        settings=settings,
        fallback_done=fallback_done,
    )
    assert search.calls == [("Lilu", 5)] and "fallback_search" not in kinds(r)
    assert r.searches == 1 and r.fallback_done is fallback_done and ids(r.working_set) == ["lilu"]


def test_merge_keeps_the_working_set_order_and_skips_duplicates():
    before = [DOCS["rome"], DOCS["lilu"]]
    search = Scripted({"Lilu": ["lilu", "gallu"], QUESTION: ["gallu", "alu", "rome"]})
    r = search_step(before, ChunkSearchArgs(query="Lilu"), search, question=QUESTION, turn=1)
    assert ids(r.working_set) == ["rome", "lilu", "gallu", "alu"]
    assert [e["data"]["added"] for e in r.events if e["kind"] == "search"] == [["gallu"], ["alu"]]
    assert [e["data"]["hits"] for e in r.events if e["kind"] == "search"] == [
        ["lilu", "gallu"],
        ["gallu", "alu", "rome"],
    ]
    assert r.reply == "Added 2 chunk(s): [gallu], [alu] Skipped 3 duplicate(s). Working set: 4 chunk(s)."
    assert ids(before) == ["rome", "lilu"], "the input working set is not mutated"


def test_new_chunks_carry_query_and_turn_and_are_cut_to_top_k():
    search = Scripted({"q": ["lilu", "alu", "gallu"]})
    r = search_step([], ChunkSearchArgs(query="q"), search, question="Q?", turn=3, settings=SearchSettings(top_k=2))
    assert search.calls == [("q", 2)] and ids(r.working_set) == ["lilu", "alu"]
    assert {(c["query"], c["turn"]) for c in r.working_set} == {("q", 3)}


def test_retriever_trace_events_are_kept_with_the_turn():
    def noting(query, k, trace):
        trace.note("bm25.fallback", "dense index missing", index="dense")
        return [DOCS["rome"]]

    r = search_step([], ChunkSearchArgs(query="Rome"), noting, question="Where?", turn=2)
    assert kinds(r) == ["bm25.fallback", "search"]
    assert r.events[0] == {
        "kind": "bm25.fallback",
        "message": "dense index missing",
        "turn": 2,
        "data": {"index": "dense"},
    }


def test_retriever_errors_are_recorded_not_raised():
    def broken(query, k, trace):
        raise RuntimeError("index offline")

    r = search_step([DOCS["rome"]], ChunkSearchArgs(query="Paris"), broken, question=QUESTION, turn=1)
    assert kinds(r) == ["fallback_search", "retriever_error", "retriever_error"]
    assert r.events[1]["message"] == "model search 'Paris' failed: RuntimeError: index offline"
    assert r.events[2]["message"].startswith("fallback search ")
    assert ids(r.working_set) == ["rome"] and r.searches == 2 and not r.error
    assert [p["event"] for p in r.progress] == ["retriever_error", "search", "retriever_error", "search"]
    assert r.reply.startswith("No new chunks") and r.reply.endswith("Working set: 1 chunk(s).")


def test_empty_results_are_recorded():
    r = search_step([], ChunkSearchArgs(query="anything"), Scripted({}), question="Why?", turn=1)
    assert kinds(r) == ["fallback_search", "empty_result", "search", "empty_result", "search"]
    assert r.events[1]["message"] == "model search 'anything' returned nothing"
    assert (
        r.reply == "No new chunks (nothing found, or only chunks already in the working set). Working set: 0 chunk(s)."
    )


# ---------------------------------------------------------------------------------------------- the judge


def test_judge_deletes_the_new_chunks_below_the_threshold():
    judge = ScriptedJudge({"Akkadian": 0.9, "Babylonian": 0.2, "underworld": 0.5})
    before = [DOCS["rome"]]  # already in the set: not judged again, never deleted by the judge
    search = Scripted({"demons": ["lilu", "alu", "gallu", "rome"]})
    r = search_step(
        before, ChunkSearchArgs(query="demons"), search, question=QUESTION, turn=2, settings=SearchSettings(judge=judge)
    )
    assert ids(r.working_set) == ["rome", "lilu", "gallu"]  # 0.5 is not below the 0.5 threshold
    assert len(judge.calls) == 1 and judge.calls[0][0] == QUESTION
    assert judge.calls[0][1][0] == "Lilu\nLilu is a masculine Akkadian word for a spirit."  # title + text
    assert kinds(r) == ["search", "judge_delete"]
    ev = r.events[1]
    judged = ev["data"].pop("judged")  # the scored pairs, for the harness's judge accuracy
    assert ev["data"] == {"removed": ["alu"], "scores": {"lilu": 0.9, "alu": 0.2, "gallu": 0.5}, "threshold": 0.5}
    assert judged[0]["refs"] == [["lilu"], ["alu"], ["gallu"]] and judged[0]["scores"] == [0.9, 0.2, 0.5]
    assert r.usage == {"judge_calls": 1, "llm_calls": 1, "prompt_tokens": 21, "completion_tokens": 1}
    assert r.progress[-1] == {"event": "judge_delete", "turn": 2, "removed": ["alu"]}
    assert r.reply == (
        "Added 3 chunk(s): [lilu], [alu], [gallu] Skipped 1 duplicate(s). The relevance judge removed [alu]. "
        "Working set: 3 chunk(s)."
    )


def test_judge_threshold_and_a_judge_that_keeps_everything():
    search = Scripted({"demons": ["lilu", "alu"]})
    judge = ScriptedJudge({"Akkadian": 0.9, "Babylonian": 0.6})
    strict = search_step(
        [],
        ChunkSearchArgs(query="demons"),
        search,
        question="Q?",
        turn=2,
        settings=SearchSettings(judge=judge, judge_threshold=0.7),
    )
    assert ids(strict.working_set) == ["lilu"]
    kept = search_step(
        [], ChunkSearchArgs(query="demons"), search, question="Q?", turn=2, settings=SearchSettings(judge=judge)
    )
    assert ids(kept.working_set) == ["lilu", "alu"] and kinds(kept) == ["search", "judge"]
    assert kept.events[1]["message"] == "the judge kept all 2 new chunk(s)" and "removed" not in kept.reply


@pytest.mark.parametrize("fail", [RuntimeError("GPU fell over"), None])
def test_a_failing_judge_keeps_the_chunks(fail):
    judge = ScriptedJudge({}, fail=fail)
    if fail is None:  # a reply of the wrong length is refused by judge_relevance (LLMOutputError)
        judge.score_relevance = lambda query, candidates, *, trace=None: [0.1]
    search = Scripted({"demons": ["lilu", "alu"]})
    r = search_step(
        [], ChunkSearchArgs(query="demons"), search, question="Q?", turn=2, settings=SearchSettings(judge=judge)
    )
    assert ids(r.working_set) == ["lilu", "alu"] and kinds(r) == ["search", "judge_error"]
    assert r.events[1]["message"].endswith("; chunks kept") and r.usage["judge_calls"] == 1
    if fail is not None:
        assert "GPU fell over" in r.events[1]["message"]


def test_judge_is_not_called_when_a_search_adds_nothing():
    judge = ScriptedJudge({})
    r = search_step(
        [DOCS["lilu"]],
        ChunkSearchArgs(query="x"),
        Scripted({"x": ["lilu"]}),
        question="Q?",
        turn=2,
        settings=SearchSettings(judge=judge),
    )
    assert judge.calls == [] and r.usage == {} and kinds(r) == ["search"]


# ---------------------------------------------------------------------------------------------- delete_step


def test_delete_removes_exactly_the_named_chunks_and_reports_unknown_ids():
    before = [DOCS["lilu"], DOCS["alu"], DOCS["rome"]]
    r = delete_step(before, ChunkDeleteArgs(ids=["rome", "nope", "rome"]), turn=3)
    assert ids(r.working_set) == ["lilu", "alu"] and ids(before) == ["lilu", "alu", "rome"]
    assert kinds(r) == ["delete", "unknown_ids"]
    assert r.events[0]["data"] == {"removed": ["rome"], "unknown": ["nope"]} and r.events[0]["turn"] == 3
    assert r.reply == 'Removed 1 chunk(s); unknown ids ["nope"]. Working set: 2 chunk(s).'
    assert r.progress == [{"event": "delete", "turn": 3, "removed": ["rome"], "unknown": ["nope"]}]
    assert r.searches == 0 and not r.error
    plain = delete_step(before, ChunkDeleteArgs(ids=["alu"]), turn=1)
    assert kinds(plain) == ["delete"] and plain.reply == "Removed 1 chunk(s). Working set: 2 chunk(s)."


# ---------------------------------------------------------------------------------------------- invalid calls


@pytest.mark.parametrize(
    ("name", "args", "where"),
    [
        ("chunk_search", {"query": "   "}, "query"),
        ("chunk_search", {"q": "Paris"}, "query: Field required"),
        ("chunk_search", {"query": "x" * 1001}, "query"),
        ("chunk_search", "Paris", "args"),
        ("chunk_delete", {"ids": []}, "ids"),
        ("chunk_delete", {"ids": [str(i) for i in range(101)]}, "ids"),
    ],
)
def test_invalid_arguments_become_a_rejected_step(name, args, where):
    with pytest.raises(ToolCallError) as info:
        parse_tool_call(name, args)
    e = info.value
    assert isinstance(e, InvalidInputError) and e.kind == "invalid_tool_args" and e.label == "invalid arguments"
    assert str(e).startswith(f"invalid arguments for {name}: ") and where in e.errors
    r = rejected_step([DOCS["lilu"]], e, turn=2)
    assert r.error and ids(r.working_set) == ["lilu"] and r.searches == 0 and r.reply == str(e)
    assert kinds(r) == ["invalid_tool_args", "tool_error"]
    assert r.events[0]["data"] == {"args": args} and r.events[1]["message"] == f"{name}: invalid arguments"
    assert r.progress == [{"event": "invalid_tool_args", "turn": 2, "tool": name, "error": e.errors}]


def test_unknown_and_unbound_tools_are_rejected():
    with pytest.raises(ToolCallError, match="unknown tool 'grep'; available: chunk_delete, chunk_search") as info:
        parse_tool_call("grep", {})
    r = rejected_step([], info.value, turn=1)
    assert kinds(r) == ["unknown_tool", "tool_error"] and r.events[1]["message"] == "grep: unknown tool"
    assert r.events[0]["data"] == {} and r.progress == []
    with pytest.raises(ToolCallError, match="available: chunk_search$"):
        parse_tool_call("chunk_delete", {"ids": ["a"]}, tools=["chunk_search"])


def test_unparsable_arguments():
    r = rejected_step([], unparsable_call("chunk_search", "bad json"), turn=1)
    assert r.error and r.reply == "could not parse the arguments of 'chunk_search': bad json"
    assert (
        kinds(r) == ["invalid_tool_args", "tool_error"]
        and r.events[1]["message"] == "chunk_search: unparsable arguments"
    )
    assert r.progress == []


def test_valid_arguments_are_normalised():
    assert parse_tool_call("chunk_search", {"query": " Lilu \n demon "}) == ChunkSearchArgs(query="Lilu demon")
    assert parse_tool_call("chunk_delete", {"ids": ["a", "b"]}).ids == ["a", "b"]


# ---------------------------------------------------------------------------------------------- results and settings


def test_results_are_frozen_and_json_safe():
    judge = ScriptedJudge({"Akkadian": 0.9})
    r = search_step(
        [],
        ChunkSearchArgs(query="Lilu"),
        Scripted({"Lilu": ["lilu", "alu"]}),
        question=QUESTION,
        turn=1,
        settings=SearchSettings(judge=judge),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.reply = "changed"  # type: ignore[misc]
    assert json.loads(json.dumps([r.working_set, r.events, r.progress, r.usage])) == [
        r.working_set,
        r.events,
        r.progress,
        r.usage,
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top_k": 0}, "search_top_k"),
        ({"top_k": True}, "search_top_k"),
        ({"judge": object()}, "score_relevance"),
        ({"judge_threshold": 2}, "judge_threshold"),
        ({"judge_threshold": "0.5"}, "judge_threshold"),
    ],
)
def test_search_settings_are_checked(kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        SearchSettings(**kwargs)
