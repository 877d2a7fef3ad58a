"""Each caller gets its own call's trace, however many call at once (#15 item 14).

``last_trace`` is one attribute shared by every thread and task using a retriever; 32 concurrent callers reading it
saw 31 distinct traces. :func:`retrievekit.core.trace.capture_traces` collects the traces of the calls made in the
caller's own context: these tests run 32 threads, 32 ``aretrieve`` tasks and 32 ``ainvoke`` tasks at once over a
real BM25 index, and each must get exactly one trace, for its own query.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from _corpora import FRUIT
from llama_index.core.schema import QueryBundle

from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.trace import capture_traces
from retrievekit.langchain import RetrieveKitRetriever as LangChainRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LlamaRetriever

QUERIES = [f"{word} number {i}" for i, word in enumerate(["apple", "banana", "python", "rust"] * 8)]


class _Slow:
    """The real BM25 index, with a barrier so all 32 calls are in flight together (widens the race on purpose)."""

    def __init__(self, n: int) -> None:
        self.inner = BM25Index.build(FRUIT)
        self.barrier = threading.Barrier(n, timeout=120)

    def search(self, query, k=10, *, trace=None):
        hits = self.inner.search(query, k, trace=trace)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:  # the async paths run on fewer threads: no rendezvous needed there
            pass
        return hits


def test_32_threads_each_get_their_own_trace():
    retriever = LlamaRetriever(_Slow(len(QUERIES)), similarity_top_k=2)

    def call(query: str):
        with capture_traces() as traces:
            retriever.retrieve(QueryBundle(query))
        return query, traces

    with ThreadPoolExecutor(max_workers=len(QUERIES)) as pool:
        results = list(pool.map(call, QUERIES))
    for query, traces in results:
        assert [t.query for t in traces] == [query]
    assert len({id(t) for _, ts in results for t in ts}) == len(QUERIES)


def _traces_of_tasks(acall):
    """``(query, traces captured in its task)`` for every query, ``acall(query)`` run as concurrent asyncio tasks."""

    async def call(query: str):
        with capture_traces() as traces:
            await acall(query)
        return query, traces

    async def main():
        return await asyncio.gather(*(call(q) for q in QUERIES))

    return asyncio.run(main())


def test_32_concurrent_aretrieve_tasks_each_get_their_own_trace():
    retriever = LlamaRetriever(BM25Index.build(FRUIT), similarity_top_k=2)

    for query, traces in _traces_of_tasks(retriever.aretrieve):
        assert [t.query for t in traces] == [query]


def test_32_concurrent_langchain_ainvoke_tasks_each_get_their_own_trace():
    retriever = LangChainRetriever(retriever=_Slow(1), k=2)  # ainvoke runs the sync path in executor threads

    for query, traces in _traces_of_tasks(retriever.ainvoke):
        assert [t.query for t in traces] == [query]
