"""``last_trace`` and the ``*_with_trace`` methods give each concurrent caller its own call's trace (#15 item 14).

32 threads, 32 ``aretrieve`` tasks and 32 ``ainvoke`` tasks call one retriever over a real BM25 index with distinct
queries. Every caller waits at a barrier after its call, so all 32 calls are made before any trace is read: with one
shared ``last_trace`` attribute, 31 callers would read another caller's trace. LangChain's ``ainvoke`` runs the
search on an executor thread, and the awaiting task must still read its own. The chain tests check that a call a
chain makes for the caller (in a copy of its context, on its thread or on worker threads) is still the caller's.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from _callers import N, in_tasks, in_threads
from _corpora import FRUIT
from _lcel import run_rag_chain
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from retrievekit.core.index.bm25 import BM25Index
from retrievekit.langchain import OneShotCompressor
from retrievekit.langchain import RetrieveKitRetriever as LangChainRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LlamaRetriever


class _Together:
    """The real BM25 index, holding each search at a barrier until all 32 are in flight (threads only)."""

    def __init__(self) -> None:
        self.inner = BM25Index.build(FRUIT)
        self.barrier = threading.Barrier(N, timeout=60)

    def search(self, query, k=10, *, trace=None):
        hits = self.inner.search(query, k, trace=trace)
        self.barrier.wait()
        return hits


def _ids(docs_or_nodes):
    return [getattr(d, "id", None) or d.node.node_id for d in docs_or_nodes]


def test_llama_index_32_threads_each_read_their_own_last_trace():
    retriever = LlamaRetriever(_Together(), similarity_top_k=2)

    def call(query, barrier):
        nodes = retriever.retrieve(query)
        barrier.wait()
        return query, nodes, retriever.last_trace

    results = in_threads(call)
    for query, nodes, trace in results:
        assert trace.query == query and "bm25" in trace.stage_seconds and nodes
    assert len({id(trace) for _, _, trace in results}) == N


def test_llama_index_32_threads_retrieve_with_trace():
    retriever = LlamaRetriever(_Together(), similarity_top_k=2)
    results = in_threads(lambda q, _: (q, *retriever.retrieve_with_trace(q)))
    for query, nodes, trace in results:
        assert trace.query == query and nodes


def test_llama_index_32_aretrieve_tasks_each_read_their_own_last_trace():
    retriever = LlamaRetriever(BM25Index.build(FRUIT), similarity_top_k=2)

    async def call(query, barrier):
        nodes = await retriever.aretrieve(query)
        await barrier.wait()
        return query, nodes, retriever.last_trace

    for query, nodes, trace in in_tasks(call):
        assert trace.query == query and nodes


def test_llama_index_32_aretrieve_with_trace_tasks():
    retriever = LlamaRetriever(BM25Index.build(FRUIT), similarity_top_k=2)

    async def call(query, barrier):
        nodes, trace = await retriever.aretrieve_with_trace(query)
        await barrier.wait()
        return query, nodes, trace

    for query, nodes, trace in in_tasks(call):
        assert trace.query == query and _ids(nodes) == _ids(retriever.retrieve(query))


def test_langchain_32_threads_each_read_their_own_last_trace_and_invoke_with_trace():
    retriever = LangChainRetriever(retriever=_Together(), k=2)

    def call(query, barrier):
        docs = retriever.invoke(query)
        barrier.wait()
        return query, docs, retriever.last_trace

    for query, docs, trace in in_threads(call):
        assert trace.query == query and docs
    for query, docs, trace in in_threads(lambda q, _: (q, *retriever.invoke_with_trace(q))):
        assert trace.query == query and docs


def test_langchain_32_ainvoke_tasks_each_read_their_own_last_trace():
    retriever = LangChainRetriever(retriever=BM25Index.build(FRUIT), k=2)  # ainvoke searches on executor threads

    async def call(query, barrier):
        docs = await retriever.ainvoke(query)
        await barrier.wait()
        return query, docs, retriever.last_trace

    for query, docs, trace in in_tasks(call):
        assert trace.query == query and _ids(docs) == _ids(retriever.invoke(query))


def test_langchain_32_ainvoke_with_trace_tasks_and_a_per_call_k():
    retriever = LangChainRetriever(retriever=BM25Index.build(FRUIT), k=2)

    async def call(query, barrier):
        docs, trace = await retriever.ainvoke_with_trace(query, k=1)  # k= per call reaches the async path too
        await barrier.wait()
        return query, docs, trace

    for query, docs, trace in in_tasks(call):
        assert trace.query == query and len(docs) == 1


def test_langchain_compressor_32_acompress_tasks_each_read_their_own_last_trace():
    comp = OneShotCompressor(budget=40)
    docs = [Document(page_content=p.text, id=p.id, metadata={"score": 1.0}) for p in FRUIT]

    async def call(query, barrier):
        await comp.acompress_documents(docs, query)
        await barrier.wait()
        return query, comp.last_trace

    for query, trace in in_tasks(call):
        assert trace.query == query


def test_a_call_made_by_a_chain_is_the_callers():
    retriever = LangChainRetriever(retriever=BM25Index.build(FRUIT), k=2)
    comp = OneShotCompressor(budget=40)
    chain = RunnableLambda(lambda q: comp.compress_documents(retriever.invoke(q), q))  # a copied context
    chain.invoke("which fruit is yellow")
    assert retriever.last_trace.query == comp.last_trace.query == "which fruit is yellow"
    retriever.invoke("direct call")
    run_rag_chain(retriever, "the highest mountain", "Everest")  # the retriever runs on a worker thread
    assert retriever.last_trace.query == "the highest mountain"

    def fresh_thread():  # a thread whose first call is a chain on worker threads, then the chain again
        run_rag_chain(retriever, "first in this thread", "x")
        first = retriever.last_trace.query
        run_rag_chain(retriever, "second in this thread", "x")
        return first, retriever.last_trace.query

    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(fresh_thread).result() == ("first in this thread", "second in this thread")
