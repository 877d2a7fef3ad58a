"""One-SHOT cropping awaited to the socket (issue #60), against a scripted OpenAI-compatible server in its own
process (``_async_llm_server``: every call answered after 0.2 s, ``{"keep": [0]}`` to a cropping schema).

* 50 concurrent ``apostprocess_nodes`` cropping through LlamaIndex's ``OpenAILike`` answer with the same nodes as
  the sync path, each task reads its own call's trace, and no thread is started per query or per request (the
  process's thread count stays within a fixed pool; no ``retrievekit-llm`` or ``retrievekit-async`` worker starts).
* 50 in-flight calls cancelled: the server receives no request after the cancel + 0.5 s, every connection is
  closed, nothing is printed at loop close.
* Inside ``RetrieverQueryEngine.aquery`` and a LangChain chain's ``ainvoke`` (``ChatOpenAI`` cropping in a
  ``ContextualCompressionRetriever``) the results equal the sync path's, the crops are awaited on the loop (no
  ``retrievekit-llm`` worker thread) and the trace is published to the awaiting task.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _async_llm_server import llm_server, stats
from _cancelling import after_the_cancel, assert_no_loop_errors, cancel_under_way
from _lcel import arun_rag_chain, run_rag_chain
from _thread_watch import watching_threads
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from retrievekit.core.index import BM25Index
from retrievekit.core.trace import capture_traces
from retrievekit.core.types import Passage
from retrievekit.llama_index import LlamaIndexChatLLM, OneShotPostprocessor

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUESTIONS = [f"What is hot? ({i})" for i in range(50)]
THREAD_POOL = 12
"""Threads the awaited path may add at most: asyncio's default executor resolves host names (at most
``min(32, cpus + 4)`` threads); no thread per query or per request."""
TEXTS = [f"Lava is hot near vent {i}. Magma rises from below. Rocks melt in the heat." for i in range(3)]
PASSAGES = [Passage(id=f"vent{i}", text=t) for i, t in enumerate(TEXTS)]


@pytest.fixture(scope="module")
def server():
    with llm_server(0.2) as s:
        yield s


def _openai_like(server, slots: int):
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(model="scripted", api_base=server.url, api_key="-", is_chat_model=True, timeout=60)
    return LlamaIndexChatLLM(llm, max_concurrency=slots)


def _postprocessor(server, slots: int = 256) -> OneShotPostprocessor:
    return OneShotPostprocessor(budget=400, crop=True, llm=_openai_like(server, slots))


def _nodes() -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=p.id, text=p.text), score=1.0 - i / 10) for i, p in enumerate(PASSAGES)]


def _seen(nodes: list[NodeWithScore]) -> list[tuple[str, float | None, str]]:
    return [(n.node.node_id, n.score, n.node.get_content()) for n in nodes]


def _workers(names: set[str]) -> set[str]:
    """retrievekit's worker threads among ``names``: a crop's request pool or the bridge's off-loop pool (started
    for this work: the bridge's pool outlives the calls that started it)."""
    return {n for n in names if n.startswith(("retrievekit-llm", "retrievekit-async"))}


def test_50_concurrent_apostprocess_nodes_crop_awaited_without_a_thread_per_request(server):
    pp = _postprocessor(server)
    asyncio.run(pp.apostprocess_nodes(_nodes(), query_str="warm up"))  # imports and the first connection
    gc.collect()
    base = threading.active_count()

    async def one(question: str) -> tuple[list[NodeWithScore], list[Any], Any]:
        with capture_traces() as traces:
            out = await pp.apostprocess_nodes(_nodes(), query_str=question)
        return out, traces, pp.last_trace

    async def all_awaited() -> list[tuple[list[NodeWithScore], list[Any], Any]]:
        return await asyncio.gather(*(one(q) for q in QUESTIONS))

    results, counts, names = asyncio.run(watching_threads(all_awaited))
    assert max(counts) - base <= THREAD_POOL, (base, max(counts))
    assert _workers(names) == set(), sorted(names)
    for question, (out, traces, last) in zip(QUESTIONS, results, strict=True):
        assert [n.node.get_content() for n in out] == [t.split(". ")[0] + "." for t in TEXTS]  # each one cropped
        assert len(traces) == 1 and last is traces[0] and last.query == question
        assert last.llm_calls == 3 and "oneshot.crop" in last.stage_seconds
        assert [e.data["id"] for e in last.events if e.kind == "oneshot.crop"] == ["vent0", "vent1", "vent2"]

    with ThreadPoolExecutor(8) as pool:  # the same calls on threads through the sync API
        sync = list(pool.map(lambda q: pp.postprocess_nodes(_nodes(), query_str=q), QUESTIONS))
    assert [_seen(s) for s in sync] == [_seen(out) for out, _traces, _last in results]


def test_cancelled_crops_send_nothing_more_and_close_their_connections(server, capfd):
    pp = _postprocessor(server, slots=4)  # 150 crops through 4 slots: most are still to send at the cancel

    async def scenario() -> float:
        tasks = [asyncio.create_task(pp.apostprocess_nodes(_nodes(), query_str=q)) for q in QUESTIONS]
        cancelled_at, done = await cancel_under_way(tasks, server, arrived=before + 8, within=20)
        assert all(isinstance(d, (asyncio.CancelledError, list)) for d in done), done  # a few may have answered
        assert sum(isinstance(d, asyncio.CancelledError) for d in done) >= 40
        return cancelled_at

    before = len(stats(server)["arrivals"])
    got = after_the_cancel(server, asyncio.run(scenario()))
    assert before + 8 <= len(got["arrivals"]) < before + 150  # cancelled while under way
    assert got["open"] <= 1, got  # the stats request itself
    assert_no_loop_errors(capfd)


def test_a_query_engine_crops_the_same_from_aquery_as_from_query_awaited_on_the_loop(server):
    from retrievekit.llama_index import RetrieveKitRetriever

    pp = _postprocessor(server)
    retriever = RetrieveKitRetriever(BM25Index.build(PASSAGES), similarity_top_k=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(), node_postprocessors=[pp])
    sync = _seen(engine.query("Is lava hot?").source_nodes)

    async def aquery() -> tuple[Any, list[Any], Any]:
        with capture_traces() as traces:
            response = await engine.aquery("Is lava hot?")
        return response, traces, pp.last_trace

    (response, traces, last), _counts, names = asyncio.run(watching_threads(aquery))
    assert _seen(response.source_nodes) == sync and len(sync) == 3
    assert all(len(content.split(". ")) == 1 for _id, _score, content in sync)  # each node cropped to one sentence
    assert not any(n.startswith("retrievekit-llm") for n in names), sorted(names)  # crops awaited, not on workers
    assert last in traces and last.query == "Is lava hot?" and last.llm_calls == 3


def test_a_langchain_chain_crops_the_same_from_ainvoke_as_from_invoke(server):
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_openai import ChatOpenAI

    from retrievekit.langchain import OneShotCompressor, RetrieveKitRetriever

    comp = OneShotCompressor(
        budget=400, crop=True, llm=ChatOpenAI(base_url=server.url, api_key="-", model="scripted", timeout=60)
    )
    base = RetrieveKitRetriever(retriever=BM25Index.build(PASSAGES), k=3)
    chain_retriever = ContextualCompressionRetriever(base_compressor=comp, base_retriever=base)
    answer, sync_docs = run_rag_chain(chain_retriever, "Is lava hot?", "yes")

    async def ainvoke() -> tuple[tuple[str, list[Any]], list[Any], Any]:
        with capture_traces() as traces:
            got = await arun_rag_chain(chain_retriever, "Is lava hot?", "yes")
        return got, traces, comp.last_trace

    ((awaited_answer, docs), traces, last), _counts, names = asyncio.run(watching_threads(ainvoke))
    assert awaited_answer == answer == "yes"
    assert [(d.id, d.page_content, d.metadata) for d in docs] == [(d.id, d.page_content, d.metadata) for d in sync_docs]
    assert len(docs) == 3 and all(d.metadata.get("oneshot_cropped") for d in docs)
    assert not any(n.startswith("retrievekit-llm") for n in names), sorted(names)
    assert last in traces and last.query == "Is lava hot?" and last.llm_calls == 3

    async def custom_events() -> list[dict[str, Any]]:
        stream = chain_retriever.astream_events("Is lava hot?", version="v2")
        return [e["data"] async for e in stream if e["event"] == "on_custom_event" and e["name"] == "retrievekit_trace"]

    sent = asyncio.run(custom_events())  # the compressor's trace reaches the run's async handlers too
    assert any("oneshot.crop" in d["stage_seconds"] and d["llm_calls"] == 3 for d in sent), sent
