"""The agent always searches on its first turn: tool_choice="required" is asked for, a call written as text is parsed
into a tool call, and a first reply that names no search gets the question searched (scripted replies: the point is
what the graph does with each kind of reply)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from retrievekit.core.index import BM25Index
from retrievekit.core.types import Passage
from retrievekit.langgraph import ScriptedToolChatModel, build_iterative_agent

CORPUS = [Passage(id="b", text="Bananas are yellow fruits."), Passage(id="r", text="Rust is a language.")]


class RecordingChoice(ScriptedToolChatModel):
    """Records the ``tool_choice`` each ``bind_tools`` call asked for."""

    choices: list[Any] = []

    def bind_tools(self, tools, **kwargs):  # type: ignore[override]
        self.choices.append(kwargs.get("tool_choice"))
        return super().bind_tools(tools, **kwargs)


def _kinds(out: dict[str, Any]) -> list[str]:
    return [e["kind"] for e in out["trace"]]


def test_first_turn_asks_for_a_required_tool_call():
    llm = RecordingChoice(
        replies=[
            AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "yellow"}, "id": "1"}]),
            "Bananas.",
        ]
    )
    llm.choices = []
    out = build_iterative_agent(llm, BM25Index.build(CORPUS)).invoke({"question": "Which fruit is yellow?"})
    assert "required" in llm.choices and None in llm.choices  # turn 1 bound with it, later turns without
    assert out["answer"] == "Bananas." and [c["id"] for c in out["working_set"]][0] == "b"


def test_a_search_written_as_text_is_parsed_into_a_call():
    llm = ScriptedToolChatModel(replies=['I will call chunk_search("yellow fruit") first.', "Bananas."])
    out = build_iterative_agent(llm, BM25Index.build(CORPUS)).invoke({"question": "Which fruit?"})
    assert "text_tool_call" in _kinds(out) and "forced_search" not in _kinds(out)
    searched = [e for e in out["trace"] if e["kind"] == "search"]
    assert any("yellow fruit" in e["message"] for e in searched) and out["working_set"]


def test_a_first_answer_without_a_search_gets_the_question_searched():
    llm = ScriptedToolChatModel(replies=["Bananas, I think."])
    out = build_iterative_agent(llm, BM25Index.build(CORPUS)).invoke({"question": "Which fruit is yellow?"})
    assert _kinds(out).count("forced_search") == 1 and out["searches"] >= 1
    assert [c["id"] for c in out["working_set"]][0] == "b" and out["answer"] == "Bananas, I think."


def test_always_search_off_lets_the_model_answer_at_once():
    llm = ScriptedToolChatModel(replies=["Bananas."])
    out = build_iterative_agent(llm, BM25Index.build(CORPUS), always_search=False).invoke({"question": "Yellow?"})
    assert out["searches"] == 0 and out["working_set"] == [] and out["stop_reason"] == "answered"


def test_a_first_turn_call_of_another_tool_or_with_bad_arguments_still_searches():
    """Forced to call "a tool", a small model may pick delete on an empty working set, or botch the arguments: turn 1
    searches the question instead (and the first turn is bound to the search tool alone)."""
    bound: list[list[str]] = []

    class Recording(ScriptedToolChatModel):
        def bind_tools(self, tools, **kwargs):  # type: ignore[override]
            bound.append([getattr(t, "name", str(t)) for t in tools])
            return super().bind_tools(tools, **kwargs)

    for first in (
        AIMessage("", tool_calls=[{"name": "chunk_delete", "args": {"ids": ["b"]}, "id": "1"}]),
        AIMessage("", invalid_tool_calls=[{"name": "chunk_search", "args": "{oops", "id": "1", "error": "bad json"}]),
    ):
        bound.clear()
        out = build_iterative_agent(Recording(replies=[first, "Bananas."]), BM25Index.build(CORPUS)).invoke(
            {"question": "Which fruit is yellow?"}
        )
        assert _kinds(out).count("forced_search") == 1 and out["searches"] >= 1
        assert [c["id"] for c in out["working_set"]][0] == "b"
        assert ["chunk_search"] in bound  # the first turn's binding offers the search alone
