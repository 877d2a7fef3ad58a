"""Attacks on the model-call drivers (``retrievekit.core.llm.drivers``) that need no framework (issue #62).

Each test is one attack on ``drive`` / ``adrive``, the shared slots and the call policy; the ones over a real HTTP
server and the framework edges are in ``tests/integrations/test_driver_attacks.py``. docs/reliability.md lists them.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time

import numpy as np
import pytest
from _lattice import planted_tree

from retrievekit.core.errors import FallbackWarning, InvalidInputError, LLMOutputError
from retrievekit.core.fakes import FixedReplyLLM
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import ChatMessage, Completion
from retrievekit.core.llm.served import ServedChatLLM
from retrievekit.core.llm.slots import SharedSlots
from retrievekit.core.trace import Trace


class CountingServed(ServedChatLLM):
    """A served model whose client answers after ``delay`` seconds through both APIs, counting the requests sent."""

    endpoint = "http://127.0.0.1:9/v1"

    def __init__(self, delay: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.delay, self.sent = delay, 0

    def _send(self, request):
        self.sent += 1
        time.sleep(self.delay)
        return Completion('{"ok": true}', 3, 1)

    async def _asend(self, request):
        self.sent += 1
        await asyncio.sleep(self.delay)
        return Completion('{"ok": true}', 3, 1)


def test_an_empty_batch_gets_no_replies_and_no_round_on_both_drivers():
    def step():
        replies = yield []
        again = yield [ModelCall.chat("x", "hi")]
        return replies, again[0].text

    sync_trace, async_trace = Trace(), Trace()
    assert drive(step(), CountingServed(), trace=sync_trace) == ([], '{"ok": true}')
    assert asyncio.run(adrive(step(), CountingServed(), trace=async_trace)) == ([], '{"ok": true}')
    assert sync_trace.llm_calls == async_trace.llm_calls == sync_trace.llm_rounds == async_trace.llm_rounds == 1


def test_a_step_that_raises_is_closed_and_leaves_no_task_behind():
    closed = []

    def step():
        try:
            yield [ModelCall.chat("x", "a"), ModelCall.chat("x", "b")]
            raise RuntimeError("the step's own bug")
        finally:
            closed.append(True)

    async def main():
        with pytest.raises(RuntimeError, match="own bug"):
            await adrive(step(), CountingServed())
        return asyncio.all_tasks() - {asyncio.current_task()}

    assert asyncio.run(main()) == set()
    with pytest.raises(RuntimeError, match="own bug"):
        drive(step(), FixedReplyLLM("ok"))
    assert closed == [True, True]


def test_cancelling_adrive_closes_the_step_and_sends_nothing_more():
    closed, llm = [], CountingServed(delay=5.0)

    def step():
        try:
            yield [ModelCall.chat("x", "first")]
            yield [ModelCall.chat("x", "second")]
        finally:
            closed.append(True)

    async def main():
        task = asyncio.create_task(adrive(step(), llm))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.2)

    start = time.perf_counter()
    asyncio.run(main())
    assert time.perf_counter() - start < 1.5
    assert closed == [True] and llm.sent == 1


def test_a_json_call_without_a_schema_is_refused_before_any_request_on_both_drivers():
    call = ModelCall("x", "json", (ChatMessage("user", "hi"),), None)

    def step():
        (reply,) = yield [call]
        return reply

    llm = CountingServed()
    with pytest.raises(InvalidInputError):
        drive(step(), llm)
    with pytest.raises(InvalidInputError):
        asyncio.run(adrive(step(), llm))
    assert llm.sent == 0


class NanJudge:
    """A relevance judge whose every score is NaN (a broken checkpoint)."""

    def score_relevance(self, query, candidates, *, trace=None):
        return [math.nan] * len(candidates)


def test_a_nan_judge_falls_back_the_same_when_awaited():
    lattice = Lattice(planted_tree(), NanJudge())
    sync_trace, async_trace = Trace(), Trace()
    with pytest.warns(FallbackWarning, match="LATTICE"):  # the fallback is visible, not silent
        sync_hits = lattice.search("volcano magma", k=3, trace=sync_trace)
    async_hits = asyncio.run(lattice.asearch("volcano magma", k=3, trace=async_trace))
    assert [h.id for h in async_hits] == [h.id for h in sync_hits]
    fallbacks = async_trace.counters["lattice.fallback_slates"]
    assert fallbacks == sync_trace.counters["lattice.fallback_slates"] == async_trace.counters["lattice.slates"] > 0


class SyncOnlyEmbedder:
    """An embedder with no async API whose every batch takes 0.25 s (a CPU model)."""

    name, dim = "sync-only", 2

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def embed_documents(self, texts, **kw):
        self.threads.add(threading.current_thread().name)
        time.sleep(0.25)
        return np.ones((len(texts), 2), dtype=np.float32)

    def embed_query(self, text):
        return np.ones(2, dtype=np.float32)


def test_an_embedder_without_an_async_api_never_blocks_the_loop_and_runs_on_the_bounded_pool():
    embedder = SyncOnlyEmbedder()

    def step():
        vectors = yield [ModelCall.embed([f"text {i}"]) for i in range(4)]
        return [v.shape for v in vectors]

    async def main():
        late, stop = [], asyncio.Event()

        async def ticker():
            while not stop.is_set():
                start = time.perf_counter()
                await asyncio.sleep(0.02)
                late.append(time.perf_counter() - start - 0.02)

        tick = asyncio.create_task(ticker())
        start = time.perf_counter()
        shapes = await adrive(step(), None, embedder=embedder, max_concurrency=4)
        wall = time.perf_counter() - start
        stop.set()
        await tick
        return shapes, wall, max(late)

    shapes, wall, late = asyncio.run(main())
    assert shapes == [(1, 2)] * 4
    assert late < 0.05, f"the loop stalled {late * 1000:.0f} ms"
    assert wall < 0.9, wall  # side by side, not 4 x 0.25 s in turn
    assert embedder.threads and all(name.startswith("retrievekit-async") for name in embedder.threads)


def test_shared_slots_hand_a_slot_to_the_next_waiter_when_a_waiter_is_cancelled():
    slots = SharedSlots(1)

    async def main():
        order = []

        async def hold(name, seconds):
            async with slots:
                order.append(name)
                await asyncio.sleep(seconds)

        first = asyncio.create_task(hold("first", 0.1))
        await asyncio.sleep(0.01)
        cancelled = asyncio.create_task(hold("cancelled", 0.0))
        last = asyncio.create_task(hold("last", 0.0))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        await asyncio.gather(first, last, cancelled, return_exceptions=True)
        return order

    assert asyncio.run(main()) == ["first", "last"]
    assert slots.free == 1


def test_a_sync_call_made_on_a_loops_thread_does_not_deadlock_on_the_loops_held_slots():
    """Sync code inside a coroutine (a blocking call on the loop) while the loop's tasks hold every slot: the
    shared budget must not wait there (the tasks could never free them)."""
    llm = CountingServed(delay=0.2, max_concurrency=1, policy=CallPolicy(timeout=5))

    async def main():
        held = asyncio.create_task(llm.acomplete("hold the one slot"))
        await asyncio.sleep(0.05)
        blocking = llm.complete("sync on the loop's thread").text  # must return, not hang
        await held
        return blocking

    done = []
    worker = threading.Thread(target=lambda: done.append(asyncio.run(main())), daemon=True)
    worker.start()
    worker.join(10)
    assert done == ['{"ok": true}'], "the loop deadlocked on its own slots"


def test_a_reply_that_stays_invalid_is_handed_to_the_step_as_a_value_on_both_drivers():
    def step():
        (reply,) = yield [ModelCall.json("x", "Ok?", {"type": "object"}, retries=1)]
        return reply

    sync_reply = drive(step(), FixedReplyLLM("no json here"))
    async_reply = asyncio.run(adrive(step(), FixedReplyLLM("no json here")))
    assert isinstance(sync_reply, LLMOutputError) and isinstance(async_reply, LLMOutputError)
    assert str(sync_reply) == str(async_reply)


@pytest.mark.parametrize("awaited", [False, True])
def test_a_call_without_a_model_is_a_typed_error_before_anything_is_sent(awaited):
    """``Lattice(tree, llm=None)`` (and any step driven without a model) raised a raw AttributeError from inside the
    scorer; the driver refuses the call by name."""
    lattice = Lattice(planted_tree(), None)
    with pytest.raises(InvalidInputError, match="'lattice.slate' has no model: pass llm="):
        asyncio.run(lattice.asearch("volcano")) if awaited else lattice.search("volcano")


class WrongReplyServed(CountingServed):
    """A served model whose transport answers a plain dict instead of a ``Completion``."""

    def _send(self, request):
        self.sent += 1
        return {"choices": []}

    async def _asend(self, request):
        self.sent += 1
        return {"choices": []}


def test_a_transport_that_answers_no_completion_is_a_type_error_not_a_retry_on_both_drivers():
    def step():
        return (yield [ModelCall.chat("x", "hi")])

    for run in (lambda llm: drive(step(), llm), lambda llm: asyncio.run(adrive(step(), llm))):
        llm = WrongReplyServed(policy=CallPolicy(max_retries=3))
        with pytest.raises(TypeError, match="a transport answered dict, not a Completion"):
            run(llm)
        assert llm.sent == 1  # a wrong reply is a bug of the transport: not sent again
