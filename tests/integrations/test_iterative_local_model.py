"""Schema-constrained tool calling over a local model: unit tests with a fake LM, and a real SmolLM2 run (CPU)."""

from __future__ import annotations

import jsonschema
import pytest
from _smollm2 import load_smollm2
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.index import BM25Index
from retrievekit.core.llm.protocol import Completion, JsonResult
from retrievekit.core.types import Passage
from retrievekit.langchain.local_chat import FINAL_ANSWER, LocalToolChatModel, tool_call_schema
from retrievekit.langgraph import build_iterative_agent, chunk_delete, chunk_search, run_agent


class FakeLM:
    """Returns scripted JSON values; records the schema and prompt of each call."""

    def __init__(self, values):
        self.values = list(values)
        self.calls = []

    def complete_json(self, prompt, schema, *, max_tokens=256, trace=None, retries=2):
        self.calls.append((prompt, schema))
        if trace is not None:
            trace.record_llm_call(100, 10)
        v = self.values.pop(0)
        if isinstance(v, Exception):
            raise v
        return JsonResult(value=v, raw=str(v))

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.calls.append((prompt, None))
        return Completion("Paris", 50, 2)


def test_call_schema_is_a_union_of_tools_and_final_answer():
    chat = LocalToolChatModel(llm=None).bind_tools([chunk_search, chunk_delete])
    schema = chat.call_schema()
    names = [b["properties"]["tool"]["const"] for b in schema["anyOf"]]
    assert names == ["chunk_search", "chunk_delete", FINAL_ANSWER]
    search = schema["anyOf"][0]
    assert search["properties"]["query"]["maxLength"] == 80 and search["additionalProperties"] is False
    assert schema["anyOf"][1]["properties"]["ids"]["maxItems"] == 5
    jsonschema.validate({"tool": "chunk_search", "query": "x"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "chunk_search", "ids": ["x"]}, schema)
    forced = LocalToolChatModel(llm=None).bind_tools([chunk_search, chunk_delete], tool_choice="any").call_schema()
    assert FINAL_ANSWER not in str(forced)
    one = LocalToolChatModel(llm=None).bind_tools([chunk_search, chunk_delete], tool_choice="chunk_delete")
    assert one.call_schema()["properties"]["tool"]["const"] == "chunk_delete"
    with pytest.raises(ValueError):
        LocalToolChatModel(llm=None).bind_tools([chunk_search], tool_choice="nope")
    with pytest.raises(ValueError):
        tool_call_schema([], allow_final_answer=False)


def test_local_chat_model_emits_tool_calls_and_answers():
    lm = FakeLM([{"tool": "chunk_search", "query": "Paris"}, {"tool": FINAL_ANSWER, "answer": "France"}])
    chat = LocalToolChatModel(llm=lm).bind_tools([chunk_search, chunk_delete])
    msg = chat.invoke([SystemMessage("sys"), HumanMessage("Where is Paris?")])
    assert msg.tool_calls[0]["name"] == "chunk_search" and msg.tool_calls[0]["args"] == {"query": "Paris"}
    assert msg.usage_metadata["input_tokens"] == 100
    prompt, schema = lm.calls[0]
    assert prompt[0].role == "system" and "chunk_search(query)" in prompt[0].content
    assert "anyOf" in schema
    assert chat.invoke("again").content == "France"
    # without tools it is a plain chat model
    assert LocalToolChatModel(llm=lm).invoke("hi").content == "Paris"


def test_local_chat_model_degrades_when_no_valid_call():
    lm = FakeLM([LLMOutputError("cut off", raw="{")])
    msg = LocalToolChatModel(llm=lm).bind_tools([chunk_search]).invoke("q")
    assert msg.content == "" and not msg.tool_calls and "retrievekit_error" in msg.response_metadata


def test_graph_with_fake_local_lm_records_invalid_call():
    corpus = [Passage(id="p", text="Paris is in France.")]
    lm = FakeLM([LLMOutputError("cut off", raw="{")])
    agent = build_iterative_agent(LocalToolChatModel(llm=lm), BM25Index.build(corpus), always_search=False)
    out = agent.invoke({"question": "Paris?"})
    assert "invalid_tool_call" in [e["kind"] for e in out["trace"]]
    assert out["stop_reason"] == "no_action" and out["answer"] == "Paris"
    # by default the first turn searches all the same: the question itself
    lm = FakeLM([LLMOutputError("cut off", raw="{")])
    agent = build_iterative_agent(LocalToolChatModel(llm=lm), BM25Index.build(corpus), on_llm_error="stop")
    out = agent.invoke({"question": "Paris?"})  # the script ends after turn 1: a partial result, asked for
    kinds = [e["kind"] for e in out["trace"]]
    assert kinds[:2] == ["invalid_tool_call", "forced_search"] and [c["id"] for c in out["working_set"]] == ["p"]


# --------------------------------------------------------------------------- real SmolLM2 (CPU)


@pytest.fixture(scope="module")
def smollm2():
    return load_smollm2()


def test_smollm2_drives_the_agent_with_valid_tool_calls(smollm2):
    corpus = [
        Passage(id="everest", title="Everest", text="Mount Everest is the highest mountain on Earth."),
        Passage(id="nile", title="Nile", text="The Nile is a long river in Africa."),
        Passage(id="banana", title="Banana", text="Bananas are yellow fruits."),
    ]
    chat = LocalToolChatModel(llm=smollm2, max_tokens=64, answer_max_tokens=16)
    agent = build_iterative_agent(chat, BM25Index.build(corpus), max_turns=2, search_top_k=2)
    run = run_agent(agent, "What is the highest mountain on Earth?")
    kinds = [e.kind for e in run.trace.events]
    # every agent reply was a well-formed call of a bound tool or a final answer
    assert not {"invalid_tool_args", "invalid_tool_call", "unknown_tool", "llm_error"} & set(kinds), kinds
    ais = [m for m in run.state["messages"] if isinstance(m, AIMessage)]
    for m in ais[:-1]:
        for call in m.tool_calls:
            assert call["name"] in ("chunk_search", "chunk_delete")
    assert run.stop_reason in ("answered", "turn_cap") and run.state["turn"] <= 2
    assert isinstance(run.answer, str) and run.answer
    assert "everest" in [c["id"] for c in run.working_set]  # the turn-1 fallback search guarantees it
    assert run.trace.llm_calls >= 2 and run.trace.counters["iterative.retrieval_calls"] >= 1
