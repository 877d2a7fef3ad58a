"""The iterative agent (LangGraph) with a relevance judge (issue #9): after each search the judge deletes the chunks
it scores below ``judge_threshold`` from the working set.

The judge is scripted (tests/_judges.py) and so is the chat model (``ScriptedToolChatModel``): the scripted scores are
the point, and every test asserts that the working set follows them. BM25 and the LangGraph runtime are real.
"""

from __future__ import annotations

import pytest
from _corpora import FRUIT
from _judges import OverlapJudge
from langchain_core.messages import AIMessage, ToolMessage

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage
from retrievekit.langgraph.graph import build_iterative_agent
from retrievekit.langgraph.method import run_agent
from retrievekit.langgraph.testing import ScriptedToolChatModel

_AGENT_DOCS = [
    Passage(id="v1", text="Volcanoes erupt lava and magma."),
    Passage(id="v2", text="Lava from volcanoes cools into rock."),
    Passage(id="w1", text="Volcano weather balloons measure wind."),
    Passage(id="x1", text="Completely unrelated text about cooking."),
]


def _search_then_answer(query: str = "volcano lava"):
    return ScriptedToolChatModel(
        replies=[AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": query}, "id": "1"}]), "done"]
    )


def test_agent_judge_deletes_low_chunks_after_search():
    judge = OverlapJudge(planted={"weather": 0.1, "Lava from": 0.4})
    graph = build_iterative_agent(
        _search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=judge, fallback_on_first_turn=False
    )
    state = graph.invoke({"question": "What do volcanoes erupt, lava?"})
    kept = [c["id"] for c in state["working_set"]]
    assert kept == ["v1"]
    ev = next(e for e in state["trace"] if e["kind"] == "judge_delete")
    assert sorted(ev["data"]["removed"]) == ["v2", "w1"] and ev["data"]["threshold"] == 0.5
    assert set(ev["data"]["scores"]) == {"v1", "v2", "w1"}
    assert state["usage"]["judge_calls"] == 1 and len(judge.judge_calls) == 1
    assert judge.judge_calls[0][0] == "What do volcanoes erupt, lava?"  # judged against the question
    tool_msg = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert "The relevance judge removed" in tool_msg.content and "[w1]" in tool_msg.content
    run = run_agent(
        build_iterative_agent(_search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=OverlapJudge()), "volcano?"
    )
    assert run.trace.counters["iterative.judge_calls"] >= 1


def test_agent_without_a_judge_is_unchanged():
    graph = build_iterative_agent(_search_then_answer(), BM25Index.build(_AGENT_DOCS), fallback_on_first_turn=False)
    state = graph.invoke({"question": "What do volcanoes erupt, lava?"})
    assert [c["id"] for c in state["working_set"]] == ["v1", "v2", "w1"]
    assert not any(e["kind"].startswith("judge") for e in state["trace"])
    assert "judge_calls" not in state["usage"]


def test_agent_judge_that_keeps_everything_and_a_broken_judge():
    graph = build_iterative_agent(
        _search_then_answer(),
        BM25Index.build(_AGENT_DOCS),
        judge=OverlapJudge(planted={"": 0.9}),
        fallback_on_first_turn=False,
    )
    state = graph.invoke({"question": "volcano lava"})
    assert len(state["working_set"]) == 3 and any(e["kind"] == "judge" for e in state["trace"])

    class Broken(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            raise RuntimeError("GPU fell over")

    state = build_iterative_agent(
        _search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=Broken(), fallback_on_first_turn=False
    ).invoke({"question": "volcano lava"})
    assert len(state["working_set"]) == 3 and state["answer"] == "done"
    assert any(e["kind"] == "judge_error" and "GPU fell over" in e["message"] for e in state["trace"])


def test_agent_rejects_bad_judge_arguments():
    with pytest.raises(InvalidInputError, match="score_relevance"):
        build_iterative_agent(_search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=object())
    with pytest.raises(InvalidInputError, match="judge_threshold"):
        build_iterative_agent(
            _search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=OverlapJudge(), judge_threshold=2
        )


def test_build_iterative_passes_the_judge(fake_judge_module, monkeypatch):
    judge, _ = fake_judge_module
    from retrievekit.core.llm import local
    from retrievekit.langgraph import graph as graph_mod
    from retrievekit.langgraph import method as method_mod

    monkeypatch.setattr(local.LocalLM, "load", classmethod(lambda cls, name, **kw: OverlapJudge()))
    seen = {}
    real = graph_mod.build_iterative_agent

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_mod, "build_iterative_agent", spy)
    m = method_mod.build_iterative(
        MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "judge_threshold": "0.7", "base": "bm25"})
    )
    assert seen["judge"] is judge and seen["judge_threshold"] == 0.7 and m.graph is not None
