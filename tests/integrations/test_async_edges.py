"""Async end to end (#51): every edge's async entry point runs its one sync implementation off the event loop, and
the scripted LLMs are reached through their async API. A task waking every 20 ms on the loop stays on time while
LATTICE, One-SHOT cropping and the agent run concurrently; inside ``RetrieverQueryEngine.aquery`` and a LangChain
chain's ``ainvoke`` the results equal the sync path's; a LlamaIndex component built without ``llm=`` uses the
user's ``Settings.llm``."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest
from _lattice import planted_tree
from _lcel import run_rag_chain
from _slow_llm import SlowChatModel, SlowLLM, SlowToolChatModel
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from llama_index.core import Settings
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from retrievekit.core.index import BM25Index
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.trace import capture_traces
from retrievekit.core.types import Passage
from retrievekit.langchain import LangChainChatLLM, OneShotCompressor
from retrievekit.langchain import LatticeRetriever as LCLattice
from retrievekit.langgraph import build_iterative_agent
from retrievekit.llama_index import IterativeAgentRetriever, LatticeRetriever, LlamaIndexChatLLM, OneShotPostprocessor
from retrievekit.llama_index.llm import as_chat_llm

QUERY = "volcano magma"
LAVA = "Lava is hot. Magma rises from below. Rocks melt in the heat."


def _lattice(llm: SlowLLM) -> LatticeRetriever:
    return LatticeRetriever(Lattice(planted_tree(), LlamaIndexChatLLM(llm, max_concurrency=32)), similarity_top_k=3)


def _nodes(n: int = 2) -> list[NodeWithScore]:
    texts = [f"Lava is hot. Magma rises from vent {i}. Rocks melt in the heat." for i in range(n)]
    return [NodeWithScore(node=TextNode(id_=f"n{i}", text=t), score=1.0 - i / 10) for i, t in enumerate(texts)]


def _agent(model: SlowToolChatModel):
    return build_iterative_agent(model, BM25Index.build([Passage(id="lava", text=LAVA)]))


def _search_then_answer(delay: float = 0.3) -> SlowToolChatModel:
    call = AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "lava"}, "id": "1"}])
    return SlowToolChatModel(replies=[call, "hot"], delay=delay)


async def _ticker(stop: asyncio.Event, late: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.02)
        late.append(time.perf_counter() - start - 0.02)


def test_the_loop_stays_on_time_while_lattice_cropping_and_the_agent_run():
    llm = SlowLLM(delay=0.3)
    lattice = _lattice(llm)
    crop = OneShotPostprocessor(budget=200, crop=True, llm=LlamaIndexChatLLM(llm, max_concurrency=32))
    models = [_search_then_answer() for _ in range(4)]
    agents = [_agent(m) for m in models]

    async def main() -> tuple[float, float, list[float], list]:
        start = time.perf_counter()
        await lattice.aretrieve(QUERY)
        one = time.perf_counter() - start
        stop, late = asyncio.Event(), []
        ticker = asyncio.create_task(_ticker(stop, late))
        start = time.perf_counter()
        await asyncio.gather(*[lattice.aretrieve(QUERY) for _ in range(8)])
        eight = time.perf_counter() - start
        outs = await asyncio.gather(
            *[lattice.aretrieve("volcano lava") for _ in range(8)],
            *[crop.apostprocess_nodes(_nodes(), query_str="What is hot?") for _ in range(8)],
            *[agent.ainvoke({"question": "Is lava hot?"}) for agent in agents],
        )
        stop.set()
        await ticker
        return one, eight, late, outs

    # the objects the rest of the suite left behind are not this test's: a full garbage collection walking them
    # would stall whichever thread triggers it, the loop included, so they are frozen for the measured window
    gc.collect()
    gc.freeze()
    try:
        one, eight, late, outs = asyncio.run(main())
    finally:
        gc.unfreeze()
    assert max(late) <= 0.1, f"the loop was late by {max(late) * 1000:.0f} ms"
    assert eight <= 1.5 * one, f"8 concurrent aretrieve took {eight:.2f} s, one took {one:.2f} s"
    assert llm.calls.sync == 0 and llm.calls.async_ > 0  # every LLM call went through achat
    assert all(m.calls.sync == 0 and m.calls.async_ == 2 for m in models)  # agent turn + answer, awaited
    assert all(out and out[0].node.node_id == "t1s2l0" for out in outs[:8])  # the gold leaf
    assert all(len(out) == 2 and out[0].node.get_content() == "Lava is hot." for out in outs[8:16])  # cropped
    assert all(state["answer"] == "hot" and state["working_set"][0]["id"] == "lava" for state in outs[16:])


def test_a_query_engine_answers_the_same_from_aquery_as_from_query():
    llm = SlowLLM(delay=0.0)
    crop = OneShotPostprocessor(budget=200, crop=True, llm=LlamaIndexChatLLM(llm))
    engine = RetrieverQueryEngine.from_args(_lattice(llm), llm=MockLLM(), node_postprocessors=[crop])

    def seen(response) -> list[tuple[str, float | None, str]]:
        return [(n.node.node_id, n.score, n.node.get_content()) for n in response.source_nodes]

    sync = seen(engine.query(QUERY))
    calls = llm.calls.sync
    awaited = seen(asyncio.run(engine.aquery(QUERY)))
    assert awaited == sync and sync[0][0] == "t1s2l0"
    assert llm.calls.sync == calls and llm.calls.async_ == calls  # the same calls, each through achat


def test_the_agent_retriever_gives_the_same_nodes_awaited_with_the_trace_kept():
    retriever = IterativeAgentRetriever(_agent(_search_then_answer(delay=0.0)))
    sync = [(n.node.node_id, n.score) for n in retriever.retrieve("Is lava hot?")]
    model = _search_then_answer(delay=0.0)
    awaited_retriever = IterativeAgentRetriever(_agent(model))

    async def retrieve():
        with capture_traces() as traces:
            nodes = await awaited_retriever.aretrieve("Is lava hot?")
        return nodes, traces[-1], awaited_retriever.last_trace

    nodes, trace, last = asyncio.run(retrieve())
    assert [(n.node.node_id, n.score) for n in nodes] == sync == [("lava", 1.0)]
    assert awaited_retriever.last_answer == "hot" and trace.query == "Is lava hot?" and trace.llm_calls == 2
    assert last is trace
    assert model.calls.sync == 0 and model.calls.async_ == 2


def test_a_langchain_chain_and_compressor_give_the_same_documents_awaited():
    model = SlowChatModel(delay=0.0)
    retriever = LCLattice(retriever=Lattice(planted_tree(), LangChainChatLLM(model)), k=3)
    answer, sync_docs = run_rag_chain(retriever, QUERY, "lava")
    calls = model.calls.sync

    async def chain():
        seen: list[Document] = []

        def keep(docs):
            seen.extend(docs)
            return docs

        out = await (retriever | keep).ainvoke(QUERY)
        return out, seen

    awaited, _ = asyncio.run(chain())
    assert [d.id for d in awaited] == [d.id for d in sync_docs] and sync_docs[0].id == "t1s2l0"
    assert [d.metadata["score"] for d in awaited] == [d.metadata["score"] for d in sync_docs]
    assert model.calls.sync == calls and model.calls.async_ == calls

    comp = OneShotCompressor(budget=200, crop=True, llm=SlowChatModel(delay=0.0))
    docs = [
        Document(page_content=n.node.get_content(), id=n.node.node_id, metadata={"score": n.score}) for n in _nodes()
    ]
    sync_out = comp.compress_documents(docs, "What is hot?")
    awaited_out = asyncio.run(comp.acompress_documents(docs, "What is hot?"))
    assert [(d.id, d.page_content) for d in awaited_out] == [(d.id, d.page_content) for d in sync_out]
    assert awaited_out[0].page_content == "Lava is hot."


@pytest.fixture
def user_settings_llm():
    """``Settings.llm`` set by the user for one test, then unset again."""
    llm = SlowLLM(delay=0.0)
    Settings.llm = llm
    try:
        yield llm
    finally:
        Settings._llm = None


def test_a_component_built_without_llm_uses_the_users_settings_llm(user_settings_llm):
    retriever = LatticeRetriever.from_tree(planted_tree(), similarity_top_k=1)
    assert retriever.lattice.llm.llm is user_settings_llm
    assert retriever.retrieve(QUERY)[0].node.node_id == "t1s2l0" and user_settings_llm.calls.sync > 0
    crop = OneShotPostprocessor(budget=200, crop=True)  # needs an LLM: Settings.llm is it
    assert crop.postprocess_nodes(_nodes(1), query_str="What is hot?")[0].node.get_content() == "Lava is hot."


def test_an_unset_settings_llm_is_never_resolved(capsys):
    assert Settings._llm is None
    assert as_chat_llm(None) is None  # the method's embedded default, chosen later by name
    assert Settings._llm is None and capsys.readouterr().out == ""  # no OpenAI default, no "Using MockLLM" print


def test_the_agents_astream_reports_progress_and_awaits_the_model():
    model = _search_then_answer(delay=0.0)
    agent = _agent(model)

    async def stream():
        return [chunk async for chunk in agent.astream({"question": "Is lava hot?"}, stream_mode="custom")]

    events = [c["event"] for c in asyncio.run(stream())]
    assert events[0] == "start" and "agent_reply" in events and events[-1] == "answer"
    assert model.calls.sync == 0 and model.calls.async_ == 2
