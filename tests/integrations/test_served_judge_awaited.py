"""The served judge on the model-call drivers (issue #60), against a scripted OpenAI-compatible server in its own
process (``_async_llm_server``: every request answered after 0.2 s; a request that asks for log-probabilities gets
Yes at a log-probability fixed by its prompt, No at -1).

* 20 concurrent awaited judge calls on one loop -- judge calls of a step awaited by ``adrive`` (as LATTICE's slates
  are with ``--judge served``) and ``ServedJudge.ascore_relevance`` itself -- give the sync path's scores, and start
  no thread per request (no ``retrievekit-llm`` request worker, no bridge worker: the requests are tasks of the loop).
* 20 in-flight awaited judge calls cancelled: the server receives no request after the cancel + 0.5 s, and the
  cancelled calls' connections are closed.
* A loop closed by hand with judge calls in flight prints nothing (no unraisable error, no "Unclosed client
  session"), and the next loops' calls answer.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _async_llm_server import llm_server, stats
from _cancelling import (
    after_the_cancel,
    assert_no_loop_errors,
    assert_nothing_printed,
    cancel_under_way,
    close_with_calls_in_flight,
    unraisable_caught,
)
from _thread_watch import watching_threads

from retrievekit.core.judge.served import ServedJudge
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import adrive
from retrievekit.core.trace import Trace

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUERIES = [f"Does aspirin reduce fever? ({i})" for i in range(20)]
DOCS = [f"Document {j}: aspirin, fever and {j} other words." for j in range(8)]
THREAD_GROWTH = 12
"""Threads the awaited path may add at most: asyncio's default executor resolving host names; none per request."""


@pytest.fixture(scope="module")
def server():
    with llm_server(0.2) as s:
        yield s


def _judged(query: str) -> Any:
    """A step that asks the judge once, as a method's step does (LATTICE's slates with ``--judge served``)."""
    (scores,) = yield [ModelCall.judge(query, DOCS)]
    if isinstance(scores, BaseException):
        raise scores
    return scores


def test_awaited_judge_calls_give_the_sync_scores_without_a_thread_per_request(server):
    judge = ServedJudge("scripted", server.url, max_concurrency=64)
    with ThreadPoolExecutor(4) as pool:
        sync = list(pool.map(lambda q: judge.score_relevance(q, DOCS), QUERIES))
    assert judge.readout == "logprobs" and len({tuple(s) for s in sync}) == len(QUERIES)  # read off log-probabilities
    asyncio.run(judge.ascore_relevance("warm up", DOCS[:2]))  # imports, the loop's first client
    gc.collect()
    base = threading.active_count()
    traces = [Trace() for _ in QUERIES]

    async def all_awaited() -> list[Any]:
        through_driver = [adrive(_judged(q), judge, trace=t) for q, t in zip(QUERIES, traces, strict=True)]
        direct = [judge.ascore_relevance(q, DOCS) for q in QUERIES]
        return await asyncio.gather(*through_driver, *direct)

    start = len(stats(server)["arrivals"])
    results, counts, names = asyncio.run(watching_threads(all_awaited))
    assert results == sync + sync
    assert len(stats(server)["arrivals"]) - start == 2 * len(QUERIES) * len(DOCS)  # one request a pair
    assert not any(n.startswith(("retrievekit-llm", "retrievekit-async")) for n in names), sorted(names)
    assert max(counts) - base <= THREAD_GROWTH, (base, max(counts))
    for t in traces:  # the requests' calls and the judge hook's counts reach the caller's trace
        assert t.llm_calls == len(DOCS) and t.counters["served_judge.pairs"] == len(DOCS)
        assert t.counters["judge.calls"] == 1 and t.counters["judge.candidates"] == len(DOCS)


def test_cancelled_awaited_judge_calls_send_nothing_more(server, capfd):
    judge = ServedJudge("scripted", server.url, max_concurrency=4)  # 4 requests in flight at most: 160 take 8 s

    async def scenario() -> float:
        tasks = [asyncio.create_task(adrive(_judged(q), judge)) for q in QUERIES]
        cancelled_at, done = await cancel_under_way(tasks, server, arrived=before + 8)
        assert sum(isinstance(d, asyncio.CancelledError) for d in done) >= len(QUERIES) - 2, done
        return cancelled_at

    start = stats(server)  # an earlier test's sync client may keep a connection alive: counted here
    before = len(start["arrivals"])
    got = after_the_cancel(server, asyncio.run(scenario()))
    assert before + 8 <= len(got["arrivals"]) < before + len(QUERIES) * len(DOCS)  # cancelled while under way
    assert got["open"] <= start["open"], (start["open"], got["open"])  # the cancelled calls' connections closed
    assert_no_loop_errors(capfd)


def test_a_loop_closed_with_judge_calls_in_flight_prints_nothing_and_the_next_loops_answer(server, capfd, caplog):
    judge = ServedJudge("scripted", server.url, max_concurrency=8)
    judged = functools.partial(judge.ascore_relevance, candidates=DOCS[:2])
    with unraisable_caught() as unraisable:
        close_with_calls_in_flight(judged, [f"left {i}" for i in range(3)])
        answers = [asyncio.run(judged(QUERIES[0])) for _ in range(2)]
        del judge, judged  # its per-loop clients held the calls left in flight: collected now
        gc.collect()
    assert answers[0] == answers[1] and len(answers[0]) == 2
    assert_nothing_printed(capfd, caplog, unraisable)
