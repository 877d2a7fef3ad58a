"""ARM awaited to the socket (issue #60), against a scripted OpenAI-compatible server in its own process
(``_async_llm_server``: every call answered after 0.2 s; ARM's keyword schema gets the question's longest words, its
verification schema the first names the enum allows). Real MiniLM, Chroma, BM25 and pulp/HiGHS.

* 50 concurrent ``aretrieve`` of LlamaIndex's ``ArmRetriever`` through ``OpenAILike`` answer as the sync path does,
  await ``Arm.asearch`` (the sync search is never run off the loop) and start no thread per query or per request
  (the process's thread count stays within a fixed pool; no ``retrievekit-llm`` request worker runs).
* 50 in-flight queries cancelled: the server receives no request after the cancel + 0.5 s, every connection is
  closed, nothing is printed at loop close.
* Inside ``RetrieverQueryEngine.aquery`` and a LangChain chain's ``ainvoke`` (``ChatOpenAI``) the results equal the
  sync path's, awaited on the loop.
* A model failure ARM falls back on (not an unreachable server) is still a fallback when awaited, and kept out of the
  keyword cache.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _arm import QUESTION, corpus
from _async_llm_server import llm_server, stats
from _cancelling import after_the_cancel, assert_no_loop_errors, cancel_under_way
from _lcel import arun_rag_chain, run_rag_chain
from _thread_watch import watching_threads
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.arm import Arm, ArmConfig
from retrievekit.core.arm.keyword_cache import KeywordCache
from retrievekit.core.errors import StoreUnavailableError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.llm.bridge import async_workers
from retrievekit.core.trace import Trace
from retrievekit.llama_index import ArmRetriever as LIArm
from retrievekit.llama_index import LlamaIndexChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

ASKED = [
    QUESTION,
    "Which series did Lynda La Plante devise?",
    "Who played Robert in Prime Suspect?",
    "In which programme did Abrobagus appear?",
    "What do solar panels convert?",
]
QUESTIONS = [f"{ASKED[i % len(ASKED)]} ({i})" for i in range(50)]
THREAD_POOL = async_workers() + 12
"""Threads the awaited path may add at most: the bridge's fixed pool (``async_workers()``, 32 unless set), where the
steps' own work between calls runs (dense search, the MIP), and asyncio's default executor resolving host names (at
most ``min(32, cpus + 4)`` threads); no thread per query or per request."""


@pytest.fixture(scope="module")
def server():
    with llm_server(0.2) as s:
        yield s


@pytest.fixture(scope="module")
def indexes(minilm):
    objs = corpus()
    return objs, DenseIndex.build(objs, embedder=minilm), BM25Index.build(objs), minilm


def _arm(indexes, llm: Any, **options: Any) -> Arm:
    objs, dense, bm25, minilm = indexes
    config = ArmConfig.from_options({"ilp_k": 4, **options})
    return Arm(objs, llm, config, dense=dense, bm25=bm25, embedder=minilm)


def _openai_like(server, slots: int) -> LlamaIndexChatLLM:
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(model="scripted", api_base=server.url, api_key="-", is_chat_model=True, timeout=60)
    return LlamaIndexChatLLM(llm, max_concurrency=slots)


def _never_sync(arm: Arm) -> None:
    """The awaited path must await ``Arm.asearch``: the sync search run off the loop fails the test."""

    def search(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Arm.search ran: the awaited path did not await Arm.asearch")

    arm.search = search  # type: ignore[method-assign]


def _seen_nodes(nodes: list[Any]) -> list[tuple[str, float | None, dict[str, Any]]]:
    return [(n.node.node_id, n.score, dict(n.node.metadata)) for n in nodes]


def test_50_concurrent_arm_aretrieve_equal_the_sync_path_without_a_thread_per_request(server, indexes):
    arm = _arm(indexes, _openai_like(server, 256))
    retriever = LIArm(arm, similarity_top_k=5)
    with ThreadPoolExecutor(8) as pool:  # the sync path first (its request workers end with each query)
        sync = list(pool.map(retriever.retrieve, QUESTIONS))
    asyncio.run(retriever.aretrieve("warm up"))  # imports, the first connection, HiGHS's and Chroma's own pools
    _never_sync(arm)
    gc.collect()
    base = threading.active_count()

    async def all_awaited() -> list[Any]:
        return await asyncio.gather(*(retriever.aretrieve(q) for q in QUESTIONS))

    results, counts, names = asyncio.run(watching_threads(all_awaited))
    assert [_seen_nodes(r) for r in results] == [_seen_nodes(s) for s in sync]
    assert all(r for r in results) and len({tuple(n.node.node_id for n in r) for r in results}) > 1
    assert max(counts) - base <= THREAD_POOL, (base, max(counts))
    assert not any(n.startswith("retrievekit-llm") for n in names), sorted(names)


def test_arm_traces_count_keywords_and_verification_when_awaited(server, indexes):
    arm = _arm(indexes, _openai_like(server, 8))
    sync_trace, awaited_trace = Trace(), Trace()
    sync = arm.search(QUESTION, 5, trace=sync_trace)
    awaited = asyncio.run(arm.asearch(QUESTION, 5, trace=awaited_trace))
    assert [(h.id, h.score) for h in awaited] == [(h.id, h.score) for h in sync]
    for t in (sync_trace, awaited_trace):  # one keyword call, then the distinct drafts' verifications side by side
        assert t.llm_calls == 1 + 3 - t.counters.get("arm.verify_reused", 0) and t.llm_rounds == 2
        assert t.counters["arm.keywords"] == 2 and "arm.verify_failed" not in t.counters
    untimed = [{k: v for k, v in t.counters.items() if k != "arm.mip_seconds"} for t in (sync_trace, awaited_trace)]
    assert untimed[0] == untimed[1]
    stages = {"arm.keywords": 1, "arm.verify": awaited_trace.llm_calls - 1}
    assert awaited_trace.llm_calls_by_stage == sync_trace.llm_calls_by_stage == stages


def test_cancelled_arm_queries_send_nothing_more_and_close_their_connections(server, indexes, capfd):
    retriever = LIArm(_arm(indexes, _openai_like(server, 4)), similarity_top_k=5)  # 4 requests in flight at most

    async def scenario() -> float:
        tasks = [asyncio.create_task(retriever.aretrieve(q)) for q in QUESTIONS]
        cancelled_at, done = await cancel_under_way(tasks, server, arrived=before + 8)
        assert all(isinstance(d, (asyncio.CancelledError, list)) for d in done), done  # a few may have answered
        assert sum(isinstance(d, asyncio.CancelledError) for d in done) >= 40
        return cancelled_at

    start = stats(server)  # earlier tests' sync clients may keep a connection alive: counted here
    before = len(start["arrivals"])
    got = after_the_cancel(server, asyncio.run(scenario()))
    assert before + 8 <= len(got["arrivals"]) < before + 50 * 4  # cancelled while under way
    assert got["open"] <= start["open"], (start["open"], got["open"])  # the cancelled queries' connections closed
    assert_no_loop_errors(capfd)


def test_a_query_engine_answers_the_same_from_aquery_as_from_query(server, indexes):
    arm = _arm(indexes, _openai_like(server, 8))
    engine = RetrieverQueryEngine.from_args(LIArm(arm, similarity_top_k=5), llm=MockLLM())
    sync = engine.query(QUESTION)
    _never_sync(arm)
    awaited, _counts, names = asyncio.run(watching_threads(lambda: engine.aquery(QUESTION)))
    assert _seen_nodes(awaited.source_nodes) == _seen_nodes(sync.source_nodes) and sync.source_nodes
    assert str(awaited) == str(sync)
    assert not any(n.startswith("retrievekit-llm") for n in names), sorted(names)


def test_a_langchain_chain_answers_the_same_from_ainvoke_as_from_invoke(server, indexes):
    from langchain_openai import ChatOpenAI

    from retrievekit.langchain import ArmRetriever as LCArm
    from retrievekit.langchain import LangChainChatLLM

    chat = ChatOpenAI(base_url=server.url, api_key="-", model="scripted", timeout=60)
    arm = _arm(indexes, LangChainChatLLM(chat, max_concurrency=8))
    retriever = LCArm(retriever=arm, k=5)
    answer, sync_docs = run_rag_chain(retriever, QUESTION, "Lynda La Plante.")
    _never_sync(arm)
    (awaited_answer, docs), _counts, names = asyncio.run(
        watching_threads(lambda: arun_rag_chain(retriever, QUESTION, "Lynda La Plante."))
    )
    assert awaited_answer == answer == "Lynda La Plante."
    assert [(d.id, d.page_content, d.metadata) for d in docs] == [(d.id, d.page_content, d.metadata) for d in sync_docs]
    assert docs and all(d.metadata["arm_selected"] for d in docs)
    assert not any(n.startswith("retrievekit-llm") for n in names), sorted(names)


class _FailingAsync:
    """A model with an async API whose JSON calls fail as a store behind it would (not an unreachable server)."""

    max_concurrency = 4

    def __init__(self) -> None:
        self.calls = 0

    def complete_json(self, prompt: Any, schema: Any, **kwargs: Any) -> Any:
        raise AssertionError("the awaited path awaits acomplete_json")

    async def acomplete_json(self, prompt: Any, schema: Any, **kwargs: Any) -> Any:
        self.calls += 1
        await asyncio.sleep(0)
        raise StoreUnavailableError("the model's store did not answer")

    async def acomplete(self, prompt: Any, **kwargs: Any) -> Any:
        raise AssertionError("no plain chat call")


def test_an_awaited_model_failure_falls_back_and_is_not_cached(indexes, tmp_path):
    failing = _FailingAsync()
    arm = _arm(indexes, failing)
    arm.keyword_cache = KeywordCache(tmp_path, model="failing")
    trace = Trace()
    hits = asyncio.run(arm.asearch(QUESTION, 5, trace=trace))
    notes = [e.message for e in trace.events if e.kind == "fallback"]
    assert hits and any("keyword decomposition failed (StoreUnavailableError" in m for m in notes), notes
    assert trace.counters["arm.verify_failed"] >= 1 and any("every draft" in m for m in notes)
    assert failing.calls == 1 + trace.counters["arm.verify_failed"]
    assert len(KeywordCache(tmp_path, model="failing")) == 0  # a transient failure is not kept
