"""The iterative agent graph driven by a scripted tool-calling chat model: behaviour, checkpoints, bad input."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from retrievekit.core.errors import EmptyQueryError, InvalidInputError
from retrievekit.core.index import BM25Index
from retrievekit.core.iterative import recursion_limit_for
from retrievekit.core.types import Passage, ScoredHit
from retrievekit.langgraph import (
    IterativeAgentMethod,
    ScriptedToolChatModel,
    build_iterative_agent,
)

CORPUS = [
    Passage(id="lilu", title="Lilu (mythology)", text="Lilu is a masculine Akkadian word for a spirit or demon."),
    Passage(id="alu", title="Alû", text="Alû is a demon in Babylonian mythology, like the Gallu."),
    Passage(id="gallu", title="Gallu", text="Gallu are demons of the underworld in Mesopotamian mythology."),
    Passage(id="paris", title="Paris", text="Paris is the capital of France, on the river Seine."),
    Passage(id="seine", title="Seine", text="The Seine flows through Paris into the English Channel."),
    Passage(id="rome", title="Rome", text="Rome is the capital of Italy, founded on seven hills."),
]
QUESTION = "If Gallu is a demon, Lilu is what?"


def search(query: str, call_id: str = "") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": query}, "id": call_id}])


def delete(ids: list[str]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "chunk_delete", "args": {"ids": ids}, "id": ""}])


def kinds(state: dict) -> list[str]:
    return [e["kind"] for e in state["trace"]]


@pytest.fixture(scope="module")
def bm25() -> BM25Index:
    return BM25Index.build(CORPUS)


class Recorder:
    """A retriever that records queries and delegates to BM25."""

    def __init__(self, inner: BM25Index) -> None:
        self.inner = inner
        self.queries: list[str] = []

    def search(self, query: str, k: int = 10, *, trace=None) -> list[ScoredHit]:
        self.queries.append(query)
        return self.inner.search(query, k, trace=trace)


def test_fallback_fires_on_turn_one_only(bm25):
    rec = Recorder(bm25)
    llm = ScriptedToolChatModel(replies=[search("Lilu spirit"), search("Gallu underworld"), "a spirit"])
    out = build_iterative_agent(llm, rec, search_top_k=2).invoke({"question": QUESTION})
    # turn 1: model query + original question; turn 2: model query only
    assert rec.queries == ["Lilu spirit", QUESTION, "Gallu underworld"]
    assert kinds(out).count("fallback_search") == 1
    fb = next(e for e in out["trace"] if e["kind"] == "fallback_search")
    assert fb["turn"] == 1
    roles = [(e["turn"], e["data"]["role"]) for e in out["trace"] if e["kind"] == "search"]
    assert roles == [(1, "model"), (1, "fallback"), (2, "model")]
    ids = [c["id"] for c in out["working_set"]]
    assert len(ids) == len(set(ids)), "merged without duplicates"
    assert out["searches"] == 3 and out["answer"] == "a spirit" and out["stop_reason"] == "answered"


def test_fallback_merges_without_duplicates(bm25):
    rec = Recorder(bm25)
    # the model's query equals the original question: both searches return the same chunks
    llm = ScriptedToolChatModel(replies=[search(QUESTION), "a spirit"])
    out = build_iterative_agent(llm, rec, search_top_k=3).invoke({"question": QUESTION})
    assert rec.queries == [QUESTION, QUESTION]
    ids = [c["id"] for c in out["working_set"]]
    assert len(ids) == 3 == len(set(ids))
    second = [e for e in out["trace"] if e["kind"] == "search"][1]
    assert second["data"]["added"] == []


def test_fallback_can_be_disabled(bm25):
    rec = Recorder(bm25)
    llm = ScriptedToolChatModel(replies=[search("Lilu"), "a spirit"])
    out = build_iterative_agent(llm, rec, fallback_on_first_turn=False).invoke({"question": QUESTION})
    assert rec.queries == ["Lilu"] and "fallback_search" not in kinds(out)


def test_delete_removes_exactly_the_named_chunks(bm25):
    llm = ScriptedToolChatModel(replies=[search("capital river Paris Rome"), delete(["rome", "nope"]), "Seine"])
    agent = build_iterative_agent(llm, bm25, fallback_on_first_turn=False, search_top_k=5)
    out = agent.invoke({"question": "Which river flows through Paris?"})
    before = [e for e in out["trace"] if e["kind"] == "search"][0]["data"]["added"]
    after = [c["id"] for c in out["working_set"]]
    assert "rome" in before
    assert after == [i for i in before if i != "rome"]
    ev = next(e for e in out["trace"] if e["kind"] == "delete")
    assert ev["data"] == {"removed": ["rome"], "unknown": ["nope"]}
    assert "unknown_ids" in kinds(out)
    assert llm.bound_tool_names == ["chunk_search", "chunk_delete"]


def test_delete_disabled_is_not_bound_and_rejected(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), delete(["paris"]), "x"])
    out = build_iterative_agent(llm, bm25, enable_delete=False, fallback_on_first_turn=False).invoke({"question": "q?"})
    assert llm.bound_tool_names == ["chunk_search"]
    assert "unknown_tool" in kinds(out)
    assert "paris" in [c["id"] for c in out["working_set"]]


def test_turn_cap_stops_a_model_that_never_stops_calling_tools(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris")])  # repeated forever
    agent = build_iterative_agent(llm, bm25, max_turns=3)
    out = agent.invoke({"question": "Which river flows through Paris?"})
    assert out["turn"] == 3 and out["stop_reason"] == "turn_cap"
    assert "turn_cap" in kinds(out)
    # 3 agent calls + 1 answer call; the answer call got no tools and produced the final message
    assert out["usage"]["llm_calls"] == 4
    assert isinstance(out["messages"][-1], AIMessage) and not out["messages"][-1].tool_calls
    assert out["answer"] == out["messages"][-1].content
    assert agent.config["recursion_limit"] == recursion_limit_for(3)


def test_turn_cap_of_one(bm25):
    llm = ScriptedToolChatModel(replies=[search("Rome"), "Italy"])
    out = build_iterative_agent(llm, bm25, max_turns=1).invoke({"question": "Where is Rome?"})
    assert out["turn"] == 1 and out["stop_reason"] == "turn_cap" and out["answer"] == "Italy"


def test_invalid_tool_arguments_are_reported_not_raised(bm25):
    bad = AIMessage(
        "",
        tool_calls=[
            {"name": "chunk_search", "args": {"query": "   "}, "id": "a"},
            {"name": "chunk_search", "args": {"q": "Paris"}, "id": "b"},
            {"name": "chunk_delete", "args": {"ids": []}, "id": "c"},
        ],
        invalid_tool_calls=[{"name": "chunk_search", "args": "{not json", "id": "d", "error": "bad json"}],
    )
    llm = ScriptedToolChatModel(replies=[bad, "none"])
    out = build_iterative_agent(llm, bm25).invoke({"question": "Where is Paris?"})
    assert kinds(out).count("invalid_tool_args") == 4
    errors = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == 4
    assert out["working_set"] == [] and out["searches"] == 0
    assert "fallback_search" not in kinds(out)
    # the model saw its failed actions on the next turn
    assert "invalid arguments" in llm.prompts[1][-1].content


def test_retriever_that_raises_is_recorded(bm25):
    def broken(query, k, trace):
        raise RuntimeError("index offline")

    llm = ScriptedToolChatModel(replies=[search("Paris"), "unknown"])
    out = build_iterative_agent(llm, broken).invoke({"question": "Where is Paris?"})
    errs = [e for e in out["trace"] if e["kind"] == "retriever_error"]
    assert len(errs) == 2 and "index offline" in errs[0]["message"]  # model query and fallback
    assert out["answer"] == "unknown" and out["working_set"] == []


def test_empty_result_is_recorded():
    llm = ScriptedToolChatModel(replies=[search("anything"), "no idea"])
    out = build_iterative_agent(llm, lambda q, k, t: []).invoke({"question": "Why?"})
    assert kinds(out).count("empty_result") == 2
    assert "No new chunks" in [m for m in out["messages"] if isinstance(m, ToolMessage)][0].content


def test_llm_error_is_recorded_and_answered_from_working_set(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), RuntimeError("timeout"), "France"])
    out = build_iterative_agent(llm, bm25, on_llm_error="stop").invoke({"question": "Where is Paris?"})
    assert out["stop_reason"] == "llm_error" and "llm_error" in kinds(out) and out["answer"] == "France"


def test_a_failed_llm_raises_by_default(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), RuntimeError("server gone")])
    with pytest.raises(RuntimeError, match="server gone"):
        build_iterative_agent(llm, bm25).invoke({"question": "Where is Paris?"})


def test_on_llm_error_is_checked(bm25):
    with pytest.raises(InvalidInputError, match="on_llm_error"):
        build_iterative_agent(ScriptedToolChatModel(replies=["x"]), bm25, on_llm_error="ignore")  # type: ignore[arg-type]


def test_empty_question_is_a_typed_error(bm25):
    agent = build_iterative_agent(ScriptedToolChatModel(replies=["x"]), bm25)
    with pytest.raises(EmptyQueryError):
        agent.invoke({"question": "   "})


def test_bad_construction_arguments(bm25):
    llm = ScriptedToolChatModel(replies=["x"])
    with pytest.raises(InvalidInputError):
        build_iterative_agent(llm, bm25, max_turns=0)
    with pytest.raises(InvalidInputError):
        build_iterative_agent(llm, bm25, search_top_k=0)
    with pytest.raises(InvalidInputError):
        build_iterative_agent(llm, 42)
    with pytest.raises(InvalidInputError):
        build_iterative_agent("not a model", bm25)


def test_streams_custom_progress(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), "France"])
    agent = build_iterative_agent(llm, bm25)
    events = [c["event"] for c in agent.stream({"question": "Where is Paris?"}, stream_mode="custom")]
    assert events[0] == "start" and events[-1] == "answer"
    assert events.count("search") == 2 and "agent_reply" in events


def test_messages_stream_mode_with_tool_calls(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), "France"])
    agent = build_iterative_agent(llm, bm25)
    chunks = list(agent.stream({"question": "Where is Paris?"}, stream_mode="messages"))
    assert any(getattr(m, "tool_calls", None) for m, _meta in chunks)


def test_checkpoint_resume_with_sqlite(tmp_path, bm25):
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = str(tmp_path / "agent.sqlite")
    cfg = {"configurable": {"thread_id": "t1"}}
    llm = ScriptedToolChatModel(replies=[search("Paris Seine"), "the Seine", search("Rome"), "Italy"])
    # invocation 1: pause before the tools run
    with SqliteSaver.from_conn_string(db) as saver:
        agent = build_iterative_agent(llm, bm25, checkpointer=saver, interrupt_before=["tools"])
        first = agent.invoke({"question": "Which river flows through Paris?"}, cfg)
        assert first["turn"] == 1 and first.get("answer") is None and first["working_set"] == []
        assert agent.get_state(cfg).next == ("tools",)
    # invocation 2 (a new saver over the same file, as after a restart): resume the same thread
    with SqliteSaver.from_conn_string(db) as saver:
        agent = build_iterative_agent(llm, bm25, checkpointer=saver)
        out = agent.invoke(None, cfg)
        assert out["answer"] == "the Seine" and out["stop_reason"] == "answered"
        assert "paris" in [c["id"] for c in out["working_set"]]
        assert kinds(out).count("fallback_search") == 1
        # a follow-up question on the same thread: per-question counters reset, transcript and working set kept
        follow = agent.invoke({"messages": [HumanMessage("And where is Rome?")]}, cfg)
        assert follow["question"] == "And where is Rome?" and follow["answer"] == "Italy"
        assert follow["turn"] == 2 and follow["searches"] == 2
        ids = [c["id"] for c in follow["working_set"]]
        assert "paris" in ids and "rome" in ids
        humans = [m.content for m in follow["messages"] if isinstance(m, HumanMessage)]
        assert humans == ["Which river flows through Paris?", "And where is Rome?"]
        assert len(list(saver.list(cfg))) > 5


def test_the_documented_review_loop_runs_to_the_end(tmp_path, bm25, capsys):
    """docs/methods/iterative.md's checkpointer snippet, step by step: one invoke(None) would only reach the next
    pause (there is one before every tool turn), the loop runs the agent to its answer."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    llm = ScriptedToolChatModel(replies=[search("Paris Seine", "c1"), search("river France", "c2"), "the Seine"])
    retriever = bm25
    pauses = []
    with SqliteSaver.from_conn_string(str(tmp_path / "agent.sqlite")) as saver:
        agent = build_iterative_agent(llm, retriever, checkpointer=saver, interrupt_before=["tools"])
        cfg = {"configurable": {"thread_id": "t1"}}
        state = agent.invoke({"question": "Which river flows through Paris?"}, cfg)
        while agent.get_state(cfg).next:
            pauses.append(agent.get_state(cfg).next)
            print(agent.get_state(cfg).values["messages"][-1].tool_calls)
            state = agent.invoke(None, cfg)
        print(state["answer"], state["stop_reason"])
        assert agent.get_state(cfg).next == ()
    assert pauses == [("tools",), ("tools",)]  # a single invoke(None) would have stopped at the second pause
    assert state["answer"] == "the Seine" and state["stop_reason"] == "answered"
    assert state["turn"] == 3 and "paris" in [c["id"] for c in state["working_set"]]
    out = capsys.readouterr().out.splitlines()
    assert "chunk_search" in out[0] and "river France" in out[1] and out[-1] == "the Seine answered"


def test_the_docstring_review_example_runs():
    import doctest

    import retrievekit.langgraph.graph as graph

    (test,) = [t for t in doctest.DocTestFinder().find(graph) if t.name.endswith(".build_iterative_agent")]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0 and "while g.get_state(cfg).next" in test.docstring


def test_in_memory_saver_and_state_history(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), "France"])
    agent = build_iterative_agent(llm, bm25, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "m"}}
    agent.invoke({"question": "Where is Paris?"}, cfg)
    assert agent.get_state(cfg).values["answer"] == "France"
    assert len(list(agent.get_state_history(cfg))) >= 5


def test_as_subgraph_node_in_a_bigger_graph(bm25):
    llm = ScriptedToolChatModel(replies=[search("Paris"), "France"])
    agent = build_iterative_agent(llm, bm25)

    def polish(state: MessagesState) -> dict:
        return {"messages": [AIMessage("Answer: " + state["messages"][-1].content)]}

    parent = StateGraph(MessagesState)
    parent.add_node("retrieve_and_answer", agent)
    parent.add_node("polish", polish)
    parent.add_edge(START, "retrieve_and_answer")
    parent.add_edge("retrieve_and_answer", "polish")
    parent.add_edge("polish", END)
    out = parent.compile().invoke({"messages": [HumanMessage("Where is Paris?")]})
    assert out["messages"][-1].content == "Answer: France"
    assert any(isinstance(m, ToolMessage) for m in out["messages"])


def test_langchain_and_llama_index_retrievers(bm25):
    from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
    from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever

    expected = [h.id for h in bm25.search("Seine river", 2)]
    for retriever in (LCRetriever(retriever=bm25, k=5), LIRetriever(bm25, similarity_top_k=5)):
        llm = ScriptedToolChatModel(replies=[search("Seine river"), "the Seine"])
        out = build_iterative_agent(llm, retriever, search_top_k=2, fallback_on_first_turn=False).invoke(
            {"question": "Which river?"}
        )
        assert [c["id"] for c in out["working_set"]] == expected, type(retriever).__name__
        assert all(c["text"] and c["title"] for c in out["working_set"])


def test_bench_method_wrapper_reports_counters(bm25):
    llm = ScriptedToolChatModel(replies=[search("Seine"), delete(["rome"]), "the Seine"])
    method = IterativeAgentMethod(build_iterative_agent(llm, bm25))
    hits = method.search("Which river flows through Paris?", k=3)
    run = method.last_run
    assert run is not None and method.last_answer == "the Seine"
    c = run.trace.counters
    assert (
        c["iterative.retrieval_calls"] == 2
        and c["iterative.turns"] == 3
        and c["iterative.working_set_size"] == len(run.working_set)
    )
    assert c["iterative.context_tokens"] > 0 and len(hits) == min(3, len(run.working_set))
    assert run.trace.llm_calls == 3
    assert run.trace.to_dict()["counters"]["iterative.retrieval_calls"] == 2
    assert "agent_answer" in [e.kind for e in run.trace.events]


def test_runner_averages_trace_counters(bm25):
    from retrievekit.core.eval.datasets import Dataset, Query
    from retrievekit.core.eval.runner import run_benchmark
    from retrievekit.core.registry import register_method

    def factory(ctx):
        llm = ScriptedToolChatModel(replies=[search("Seine"), "the Seine"])
        return IterativeAgentMethod(build_iterative_agent(llm, BM25Index.build(ctx.corpus)))

    register_method("test-iterative-scripted", factory)
    ds = Dataset("toy", "dev", CORPUS, [Query("q1", "Which river flows through Paris?")], {"q1": {"seine": 1}})
    r = run_benchmark(ds, "test-iterative-scripted", k=10, progress=False)
    assert r["counters_per_query"]["iterative.retrieval_calls"] == 2
    assert r["metrics"]["recall@10"] == 1.0 and "set_recall" in r["metrics"]
