"""The async model driver at users' load, against a scripted OpenAI-compatible server in its own process
(``_async_llm_server``: every call answered after 0.2 s, as many at once as arrive).

* 200 concurrent LATTICE ``aretrieve`` through LlamaIndex's ``OpenAILike``: all answer, with the sync API's results,
  and no thread is started per query or per request (the process's thread count stays within a fixed pool); a task
  waking every 20 ms on the loop is never late by more than 50 ms (the searches' own code takes turns on the loop:
  ``retrievekit.core.llm.loop_turns``), nor by more than 100 ms with eight concurrent queries.
* 100 in-flight ``aretrieve`` cancelled: the server receives no request after the cancel + 0.5 s, every connection
  is closed, and nothing is printed at loop close.
* One retriever answers in two successive ``asyncio.run`` and in 4 threads each running its own loop.
* A 100k-token query is refused with a typed error before any request, sync and awaited.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from _async_llm_server import llm_server, stats
from _cancelling import after_the_cancel, assert_no_loop_errors
from _lattice import planted_tree

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.llm.bridge import async_workers
from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUERIES = [f"volcano magma question {i}" for i in range(200)]
THREAD_POOL = async_workers() + 12
"""Threads the async path may add at most: the bridge's fixed pool (``async_workers()``, 32 unless set: a sync client
or an in-process model; a LATTICE search's own work runs on the loop, in turns) and asyncio's default executor
resolving host names (at most ``min(32, cpus + 4)`` threads); no thread per query or per request (200 queries, 2,600
requests)."""


@pytest.fixture(scope="module")
def server():
    with llm_server(0.2) as s:
        yield s


def _retriever(server, slots: int = 512) -> LatticeRetriever:
    """A LATTICE retriever whose model takes ``slots`` calls at once: 512 covers the burst of 200 queries (400 calls
    at once: two slates a query after its first), as a user sets the budget to a server with enough slots."""
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(model="scripted", api_base=server.url, api_key="-", is_chat_model=True, timeout=60)
    return LatticeRetriever(Lattice(planted_tree(), LlamaIndexChatLLM(llm, max_concurrency=slots)), similarity_top_k=3)


class _Collections:
    """Seconds the interpreter spent in garbage collections (``gc.callbacks``), to tell its pauses from the loop's."""

    def __init__(self) -> None:
        self.total, self._start = 0.0, 0.0

    def __call__(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start


def _waited_for_a_cpu() -> float:
    """Seconds this thread has spent ready to run but waiting for a CPU (Linux ``schedstat``; 0.0 elsewhere): on a
    busy 2-core machine other processes' time, not the loop's."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


async def _ticker(stop: asyncio.Event, late: list[float], threads: list[int]) -> None:
    """Every 20 ms: how late the wake was, less the time the loop's thread waited for a CPU and the interpreter's
    garbage collections meanwhile (pauses of the machine and of the process's heap, not of the code on the loop:
    benchmarks/async_load.py reports the plain lateness), and the thread count."""
    collections = _Collections()
    gc.callbacks.append(collections)
    try:
        while not stop.is_set():
            start, collected, waited = time.perf_counter(), collections.total, _waited_for_a_cpu()
            await asyncio.sleep(0.02)
            paused = collections.total - collected + _waited_for_a_cpu() - waited
            late.append(time.perf_counter() - start - 0.02 - paused)
            threads.append(threading.active_count())
    finally:
        gc.callbacks.remove(collections)


async def _all_awaited(retriever: LatticeRetriever, queries: list[str]) -> tuple[list, list[float], list[int], float]:
    stop, late, threads = asyncio.Event(), [], []
    ticker = asyncio.create_task(_ticker(stop, late, threads))
    await asyncio.sleep(0.05)
    start = time.perf_counter()
    results = await asyncio.gather(*(retriever.aretrieve(q) for q in queries))
    wall = time.perf_counter() - start
    stop.set()
    await ticker
    return results, late, threads, wall


def test_200_concurrent_lattice_aretrieve_answer_on_time_without_a_thread_per_query_or_request(server):
    """200 concurrent queries (2,600 requests): all answer, the thread count stays within the stated pool, and a task
    waking every 20 ms is never late by more than 50 ms from the code on the loop (the ticker leaves out the garbage
    collector's pauses and the loop thread's waits for a CPU). The heap of the imports is frozen first
    (``gc.freeze()``, as a latency-sensitive server does after start-up), so collections stay short."""
    retriever = _retriever(server)
    asyncio.run(retriever.aretrieve("warm up"))  # imports and the first connection, outside the measurement
    start = time.perf_counter()
    asyncio.run(retriever.aretrieve(QUERIES[0]))
    one = time.perf_counter() - start  # one query alone: what 200 at once is compared with (printed)
    gc.collect()
    gc.freeze()
    try:
        base = threading.active_count()
        results, late, threads, wall = asyncio.run(_all_awaited(retriever, QUERIES))
    finally:
        gc.unfreeze()
    assert len(results) == 200 and all(len(r) == 3 for r in results)
    assert max(threads) - base <= THREAD_POOL, (base, max(threads))
    assert max(late) <= 0.05, f"the loop stalled {max(late) * 1000:.0f} ms with 200 queries in flight"

    with ThreadPoolExecutor(200) as pool:  # the same queries on threads through the sync API
        start = time.perf_counter()
        sync_results = list(pool.map(retriever.retrieve, QUERIES))
        threads_wall = time.perf_counter() - start
    assert [[n.node.node_id for n in r] for r in sync_results] == [[n.node.node_id for n in r] for r in results]
    # the times are printed, not asserted (they follow the machine's load): benchmarks/async_load.py measures them
    print(
        f"one aretrieve: {one:.2f} s; 200 aretrieve: {wall:.2f} s ({wall / one:.1f}x one); 200 threads: "
        f"{threads_wall:.2f} s; loop late max {max(late) * 1000:.0f} ms"
    )


def test_the_loop_stays_on_time_under_an_apps_concurrent_queries(server):
    """Eight concurrent queries (an app's burst on a small server): a task waking every 20 ms is never late by more
    than 100 ms, the bound of the other async tests."""
    retriever = _retriever(server, slots=8)
    asyncio.run(retriever.aretrieve("warm up"))
    results, late, _threads, _wall = asyncio.run(_all_awaited(retriever, QUERIES[:8]))
    assert all(len(r) == 3 for r in results)
    assert max(late) <= 0.1, f"the loop stalled {max(late) * 1000:.0f} ms"


def test_cancelled_queries_send_nothing_more_and_close_their_connections(server, capfd):
    retriever = _retriever(server)

    async def scenario() -> float:
        tasks = [asyncio.create_task(retriever.aretrieve(q)) for q in QUERIES[:100]]
        await asyncio.sleep(0.5)
        for t in tasks:
            t.cancel()
        cancelled_at = time.monotonic()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(d, asyncio.CancelledError) for d in done)
        return cancelled_at

    got = after_the_cancel(server, asyncio.run(scenario()))
    assert got["open"] <= 1, got  # the stats request itself
    assert_no_loop_errors(capfd)


def test_one_retriever_answers_in_successive_loops_and_in_threads_with_loops_of_their_own(server):
    retriever = _retriever(server, slots=8)
    first = [n.node.node_id for n in asyncio.run(retriever.aretrieve("volcano magma"))]
    second = [n.node.node_id for n in asyncio.run(retriever.aretrieve("volcano magma"))]
    assert first == second and len(first) == 3
    with ThreadPoolExecutor(4) as pool:
        own_loops = list(pool.map(lambda q: asyncio.run(retriever.aretrieve(q)), ["volcano magma"] * 4))
    assert all([n.node.node_id for n in r] == first for r in own_loops)


def test_a_100k_token_query_is_refused_before_any_request(server):
    """A query of about 100,000 tokens would be copied into every slate's request: it is refused with a typed error
    naming the bound before any request, sync and awaited; a query within the bound is served as usual."""
    retriever = _retriever(server, slots=8)
    before = len(stats(server)["arrivals"])
    query = "volcano magma " * 50_000  # 700,000 characters, about 100,000 tokens
    with pytest.raises(InvalidInputError, match="max_prompt_chars"):
        retriever.retrieve(query)
    with pytest.raises(InvalidInputError, match="max_prompt_chars"):
        asyncio.run(retriever.aretrieve(query))
    assert len(stats(server)["arrivals"]) == before
    assert len(retriever.retrieve("volcano magma " * 100)) == 3
