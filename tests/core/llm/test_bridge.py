"""The async bridge: sync code off the loop on a bounded pool of named threads, with the caller's context and
traces; a served adapter's request made there goes through its async send on the caller's loop, under the same
call policy (timeout cancelled, typed errors, slots), and never waits on the loop's own thread."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import pytest

from retrievekit.core.errors import LLMTimeoutError, LLMUnavailableError
from retrievekit.core.llm.bridge import async_workers, caller_loop, run_off_loop, send_request, set_async_workers
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.served import ServedChatLLM
from retrievekit.core.trace import Trace, capture_traces, last_trace_property, publish

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_bridge_var", default="unset")


class TwoWay(ServedChatLLM):
    """A served adapter whose sync and async sends both answer, each recording the thread it ran on."""

    endpoint = "http://127.0.0.1:9/v1"

    def __init__(self, *, delay: float = 0.0, fail: BaseException | None = None, **kwargs):
        super().__init__(**kwargs)
        self.delay, self.fail = delay, fail
        self.sync_threads: list[str] = []
        self.async_threads: list[str] = []
        self.cancelled = 0
        self.in_flight = self.peak = 0
        self._lock = threading.Lock()

    def _send(self, request):
        self.sync_threads.append(threading.current_thread().name)
        time.sleep(self.delay)
        return Completion("sync", 3, 1)

    async def _asend(self, request):  # type: ignore[override]
        self.async_threads.append(threading.current_thread().name)
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if self.fail is not None:
                raise self.fail
            return Completion("async", 3, 1)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            with self._lock:
                self.in_flight -= 1


def test_sync_code_runs_on_named_pool_threads_with_the_callers_context():
    def work():
        return threading.current_thread().name, _VAR.get(), caller_loop() is not None

    async def main():
        _VAR.set("mine")
        return await run_off_loop(work)

    name, value, has_loop = asyncio.run(main())
    assert name.startswith("retrievekit-async") and value == "mine" and has_loop
    assert caller_loop() is None  # outside the bridge


def test_the_pool_is_bounded_and_configurable():
    set_async_workers(2)
    try:
        assert async_workers() == 2
        running, peak, lock = [0], [0], threading.Lock()

        def work():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

        async def main():
            await asyncio.gather(*[run_off_loop(work) for _ in range(6)])

        asyncio.run(main())
        assert peak[0] == 2
    finally:
        set_async_workers(None)
    assert async_workers() == 32


def test_traces_published_off_the_loop_reach_the_awaiting_task():
    class Edge:
        last_trace = last_trace_property()

        def call(self, query):
            trace = Trace(query=query)
            self.last_trace = trace
            publish(trace)

    edge = Edge()

    async def one(query):
        with capture_traces() as traces:
            await run_off_loop(edge.call, query)
        await asyncio.sleep(0.01)  # the other task's call finishes meanwhile
        return [t.query for t in traces], edge.last_trace.query

    async def main():
        return await asyncio.gather(one("a"), one("b"))

    assert asyncio.run(main()) == [(["a"], "a"), (["b"], "b")]


def test_a_request_under_an_await_uses_the_async_send_on_the_callers_loop():
    llm = TwoWay()

    async def main():
        loop_thread = threading.current_thread().name
        return loop_thread, await run_off_loop(llm.complete, "hi", trace=(t := Trace())), t

    loop_thread, done, t = asyncio.run(main())
    assert done.text == "async" and llm.sync_threads == [] and llm.async_threads == [loop_thread]
    assert t.llm_calls == 1
    assert llm.complete("hi").text == "sync"  # no await: the sync client, as before


def test_on_the_loops_own_thread_the_sync_send_is_used_instead_of_deadlocking():
    llm = TwoWay()

    async def main():
        ctx = contextvars.copy_context()
        inner = await run_off_loop(contextvars.copy_context)  # a context that names this loop as the caller's
        for var, value in inner.items():
            ctx.run(var.set, value)
        return ctx.run(llm.complete, "hi").text  # run on the loop's thread itself

    assert asyncio.run(main()) == "sync"


def test_the_policys_timeout_cancels_the_coroutine_and_is_typed():
    llm = TwoWay(delay=5.0, policy=CallPolicy(timeout=0.2, max_retries=2))
    t = Trace()

    async def main():
        start = time.monotonic()
        with pytest.raises(LLMTimeoutError, match="sent no reply within 0.2 s") as info:
            await run_off_loop(llm.complete, "hi", trace=t)
        await asyncio.sleep(0.05)  # the cancellation lands on this loop
        return time.monotonic() - start, info.value

    seconds, error = asyncio.run(main())
    assert seconds < 2.0 and error.endpoint == llm.endpoint and llm.cancelled == 1
    assert t.counters["llm.timeouts"] == 1 and t.llm_calls == 1  # timeouts are not retried


def test_connection_errors_are_retried_a_bounded_number_of_times_on_the_async_path():
    llm = TwoWay(fail=ConnectionRefusedError("refused"), policy=CallPolicy(max_retries=2, backoff=0.0))
    t = Trace()

    async def main():
        with pytest.raises(LLMUnavailableError, match="did not answer after 3 request"):
            await run_off_loop(llm.complete, "hi", trace=t)

    asyncio.run(main())
    assert len(llm.async_threads) == 3 and t.counters["llm.retries"] == 2 and llm.sync_threads == []


def test_max_concurrency_bounds_the_async_requests_in_flight():
    llm = TwoWay(delay=0.05, max_concurrency=3)

    async def main():
        await asyncio.gather(*[run_off_loop(llm.complete, f"q{i}") for i in range(12)])

    asyncio.run(main())
    assert len(llm.async_threads) == 12 and llm.peak == 3


def test_send_request_without_an_async_send_or_loop_is_the_sync_send():
    assert send_request(lambda r: f"sync {r}", None, "x", 1.0) == "sync x"

    async def main():
        return await run_off_loop(send_request, lambda r: f"sync {r}", None, "x", 1.0)

    assert asyncio.run(main()) == "sync x"
