"""The two drivers of every model call: one sync, one async, each written once for every stage.

A stage is a *step* (:mod:`retrievekit.core.llm.calls`): it yields batches of
:class:`~retrievekit.core.llm.calls.ModelCall` and receives their replies. A driver sends them:

1. **One batch at a time, its calls side by side.** :func:`drive` sends a batch on up to
   :func:`~retrievekit.core.llm.concurrency.llm_concurrency` threads (only a sync client needs them; a local model
   runs one call at a time); :func:`adrive` as ``asyncio`` tasks of the caller's loop (a ``TaskGroup``) under a
   semaphore of the same size: no thread per query or per request for a served model, whose requests are awaited
   on its async transport (:func:`arun_exchange`). An in-process model or a client with no async API runs
   on the bounded pool of :mod:`retrievekit.core.llm.bridge`. The step's own code between its batches runs on the
   loop in turns (:mod:`retrievekit.core.llm.loop_turns`): with hundreds of steps in flight the loop is held a few
   milliseconds at a time, so its timers stay on time; a step whose code is heavy (a solver, an in-process model)
   asks for ``off_loop``.
2. **The guarantees apply once, here.** A call to a served model is its exchange
   (:mod:`retrievekit.core.llm.exchange`: control strings defused, the prompt's bound, token limits sent, bounded
   retries, structured output with repair, typed errors naming the endpoint), and the driver sends what it yields
   (:func:`run_exchange`, :func:`arun_exchange`): each request under one deadline and one budget of
   ``max_concurrency`` requests per model, shared by every component that uses it, straight to the model's
   transport (the edge's ``OpenAIWire``, or its client's own call).
3. **Recoverable failures are values.** A reply that stays invalid (``LLMOutputError``), a judge's bad scores or a
   model's refusal of one call's input (``ValueError``, ``InvalidInputError`` included: a text too long for a local
   model) comes back to the step as the exception, in its slot, so the step decides its fallback; a timeout or an
   unreachable server raises through the driver, and so does a call the driver cannot send (a JSON call without a
   schema, an embedding call without an embedder).
4. **Cancellation stops spending.** A cancelled :func:`adrive` cancels its calls in flight (their connections are
   closed) and the step is closed: it yields nothing more, and no request is sent after the cancel.
5. **Traces.** Each call has its own trace, merged into the caller's in call order with the batch's critical path
   (:meth:`~retrievekit.core.trace.Trace.merge_concurrent`).

Examples:
    >>> import asyncio
    >>> from retrievekit.core.llm.calls import ModelCall
    >>> from retrievekit.core.fakes import FixedReplyLLM
    >>> def shout(words):
    ...     replies = yield [ModelCall.chat("echo", w) for w in words]
    ...     return [r.text for r in replies]
    >>> drive(shout(["a", "b"]), FixedReplyLLM("ok")), asyncio.run(adrive(shout(["c"]), FixedReplyLLM("ok")))
    (['ok', 'ok'], ['ok'])
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.llm.bridge import run_in_pool
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.concurrency import llm_concurrency, map_calls
from retrievekit.core.llm.exchange import Backoff, ServedModel, check_prompt_size, is_served, served_exchange
from retrievekit.core.llm.judge_hooks import ajudge_relevance, judge_relevance
from retrievekit.core.llm.loop_turns import take_turn
from retrievekit.core.llm.per_loop import outlived_its_loop
from retrievekit.core.threads import run_with_deadline
from retrievekit.core.trace import Trace

__all__ = ["RECOVERABLE", "adrive", "arun_exchange", "asend_call", "drive", "run_exchange", "send_call"]

R = TypeVar("R")

RECOVERABLE = (LLMOutputError, ValueError)
"""Failures handed back to the step as values (it falls back); anything else raises through the driver."""


def send_call(call: ModelCall, llm: Any, trace: Trace | None = None, *, embedder: Any = None) -> Any:
    """One call, sent now through ``llm`` (or ``embedder`` for an embedding call); a recoverable failure is
    returned as the exception.

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM, OnesEmbedder
        >>> send_call(ModelCall.json("x", "Ok?", {"type": "object"}), FixedReplyLLM("no"))
        LLMOutputError('LLM reply did not match the schema after 3 attempt(s): reply contains no JSON object or array')
        >>> send_call(ModelCall.embed(["a"]), None, embedder=OnesEmbedder()).shape
        (1, 2)
    """
    _check_call(call, llm, embedder)
    try:
        if call.kind == "embed":
            return _embed(call, embedder)
        if call.kind == "judge":
            return judge_relevance(llm, call.query, list(call.texts), trace=trace, refs=call.refs)
        if call.kind in ("chat", "json") and is_served(llm):
            return run_exchange(llm, call, trace)
        if call.kind == "json":
            return llm.complete_json(
                list(call.messages), call.schema, max_tokens=call.max_tokens, trace=trace, retries=call.retries
            )
        return llm.complete(list(call.messages), max_tokens=call.max_tokens, temperature=call.temperature, trace=trace)
    except RECOVERABLE as e:  # the model's own refusal of this call (a reply, a text too long for it) included
        return e


def _check_call(call: ModelCall, llm: Any, embedder: Any) -> None:
    """A call the driver cannot send is the caller's mistake, raised before any request (not handed back as the
    model's failure): a call without a model (``llm=None``), a JSON call without a schema, an embedding call without
    an embedder, a prompt over the model's stated bound (``max_prompt_chars``: a 100k-token query is refused, not
    copied into every request)."""
    if call.kind == "json" and call.schema is None:
        raise InvalidInputError(f"the JSON call {call.purpose!r} has no schema")
    if call.kind == "embed" and embedder is None:
        raise InvalidInputError(f"the embedding call {call.purpose!r} has no embedder")
    if call.kind != "embed" and llm is None:
        raise InvalidInputError(f"the model call {call.purpose!r} has no model: pass llm= (a chat model or a judge)")
    if call.kind in ("chat", "json"):
        bound = getattr(llm, "max_prompt_chars", None)
        endpoint = str(getattr(llm, "endpoint", type(llm).__name__))
        check_prompt_size(call.messages, bound if isinstance(bound, int) else None, endpoint, call.purpose)


async def asend_call(call: ModelCall, llm: Any, trace: Trace | None = None, *, embedder: Any = None) -> Any:
    """:func:`send_call` awaited: through the model's async API where it has one (a served model:
    ``acomplete_json`` / ``acomplete``; a judge: ``ascore_relevance``; an embedder: ``aembed_documents``), else on
    the bridge's bounded pool.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> asyncio.run(asend_call(ModelCall.chat("x", "hi"), FixedReplyLLM("ok"))).text
        'ok'
    """
    _check_call(call, llm, embedder)
    try:
        if call.kind in ("json", "chat") and is_served(llm):
            return await arun_exchange(llm, call, trace)
        if call.kind in ("json", "chat") and hasattr(llm, "acomplete_json"):
            if call.kind == "json":
                return await llm.acomplete_json(
                    list(call.messages), call.schema, max_tokens=call.max_tokens, trace=trace, retries=call.retries
                )
            return await llm.acomplete(
                list(call.messages), max_tokens=call.max_tokens, temperature=call.temperature, trace=trace
            )
        if call.kind == "judge" and hasattr(llm, "ascore_relevance"):  # a served judge: its requests on this loop
            return await ajudge_relevance(llm, call.query, list(call.texts), trace=trace, refs=call.refs)
        if call.kind == "embed" and _is_query(call) and hasattr(embedder, "aembed_query"):
            return _vectors(call, [await embedder.aembed_query(call.texts[0])])
        if call.kind == "embed" and not _is_query(call) and hasattr(embedder, "aembed_documents"):
            return _vectors(call, await embedder.aembed_documents(list(call.texts)))
    except RECOVERABLE as e:
        return e
    return await run_in_pool(_send_with_trace, call, llm, trace, embedder)


def run_exchange(llm: ServedModel, call: ModelCall, trace: Trace | None = None) -> Any:
    """A chat or JSON ``call`` to the served ``llm``, sent now: each request its exchange yields
    (:func:`~retrievekit.core.llm.exchange.served_exchange`) through the model's sync transport, under one of its
    slots and a deadline of its timeout (a watchdog: a blocking client call cannot be interrupted); a failure is
    raised, typed.

    Examples:
        >>> from retrievekit.core.llm.protocol import Completion
        >>> from retrievekit.core.llm.served import ServedChatLLM
        >>> class Fixed(ServedChatLLM):
        ...     def _send(self, request):
        ...         return Completion('{"ok": true}', 3, 1)
        >>> run_exchange(Fixed(), ModelCall.json("x", "Ok?", {"type": "object"})).value
        {'ok': True}
    """
    exchange = served_exchange(llm, call, trace)
    send = llm.sync_transport()  # asked in the thread that waits (it may hand the request to the caller's loop)
    grace = llm.policy.deadline_grace
    bounded = llm.sync_bound(send)
    try:
        ask = next(exchange)
        while True:
            got: Any = None
            if isinstance(ask, Backoff):
                time.sleep(ask.seconds)
            else:
                try:
                    with llm.slots, bounded:  # a place in the model's budget, then in its client's pool
                        got = run_with_deadline(functools.partial(send, ask), ask.timeout + grace)
                except Exception as e:  # the exchange decides: a typed error or a retry
                    got = e
            ask = exchange.send(got)
    except StopIteration as done:
        return done.value
    finally:
        exchange.close()


async def arun_exchange(llm: ServedModel, call: ModelCall, trace: Trace | None = None) -> Any:
    """:func:`run_exchange` awaited: each request straight to the model's async transport under one of its slots
    (shared with its sync callers and every other loop) and ``asyncio.timeout`` (no thread); a cancellation closes the
    request in flight and sends no retry.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.llm.protocol import Completion
        >>> from retrievekit.core.llm.served import ServedChatLLM
        >>> class Fixed(ServedChatLLM):
        ...     async def _asend(self, request):
        ...         return Completion("hi", 3, 1)
        >>> asyncio.run(arun_exchange(Fixed(), ModelCall.chat("x", "Hello"))).text
        'hi'
    """
    exchange = served_exchange(llm, call, trace)
    try:
        ask = next(exchange)
        while True:
            got: Any = None
            if isinstance(ask, Backoff):
                await asyncio.sleep(ask.seconds)
            else:
                try:
                    async with llm.slots:
                        async with asyncio.timeout(ask.timeout):  # cancelling ends the wait at once
                            got = await llm.async_transport()(ask)
                except Exception as e:  # a cancellation (BaseException) is not a failure: it ends the call here
                    if outlived_its_loop():
                        return None  # closed by the collector after its loop was: ends quietly, sends nothing
                    got = e
            ask = exchange.send(got)
    except StopIteration as done:
        return done.value
    finally:
        exchange.close()


def _send_with_trace(call: ModelCall, llm: Any, trace: Trace | None, embedder: Any) -> Any:
    return send_call(call, llm, trace, embedder=embedder)


def _is_query(call: ModelCall) -> bool:
    """An embedding call whose one text is a query (purpose ``"....query"``): embedded as a query."""
    return call.purpose.endswith(".query") and len(call.texts) == 1


def _embed(call: ModelCall, embedder: Any) -> np.ndarray:
    if _is_query(call):
        return _vectors(call, [embedder.embed_query(call.texts[0])])
    return _vectors(call, embedder.embed_documents(list(call.texts)))


def _vectors(call: ModelCall, got: Any) -> np.ndarray:
    vectors = np.asarray(got, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(call.texts):
        raise InvalidInputError(
            f"the embedder gave {vectors.shape} for {len(call.texts)} text(s) ({call.purpose}): one vector per text"
        )
    return vectors


def drive(step: Step[R], llm: Any, *, trace: Trace | None = None, max_concurrency: int = 4, embedder: Any = None) -> R:
    """Run ``step`` to its result, sending each batch with :func:`send_call` (side by side, up to
    ``llm_concurrency(llm, max_concurrency)`` at once).

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> def judge():
        ...     (probs,) = yield [ModelCall.judge("pain", ["aspirin", "rest"])]
        ...     return probs
        >>> drive(judge(), WordJudge("aspirin"))
        [0.9, 0.2]
    """
    try:
        batch = next(step)
        while True:
            replies = _send_batch(batch, llm, trace, max_concurrency, embedder)
            batch = step.send(replies)
    except StopIteration as done:
        return cast(R, done.value)
    finally:
        step.close()


def _send_batch(
    batch: Sequence[ModelCall], llm: Any, trace: Trace | None, max_concurrency: int, embedder: Any
) -> list[Any]:
    if len(batch) == 1:  # no pool for one call
        return [send_call(batch[0], llm, trace, embedder=embedder)]
    return map_calls(
        lambda call, sub: send_call(call, llm, sub, embedder=embedder),
        list(batch),
        llm=llm,
        max_concurrency=max_concurrency,
        trace=trace,
    )


async def adrive(
    step: Step[R],
    llm: Any,
    *,
    trace: Trace | None = None,
    max_concurrency: int = 4,
    embedder: Any = None,
    off_loop: bool = False,
) -> R:
    """Run ``step`` to its result on the running loop, each batch's calls as tasks under a semaphore of
    ``llm_concurrency(llm, max_concurrency)`` (module docstring); cancelling the awaiting task cancels the calls
    in flight and closes the step. The step's own code between its batches runs on the loop in turns
    (:func:`~retrievekit.core.llm.loop_turns.take_turn`); with ``off_loop`` it runs on the bridge's bounded pool
    instead (a solver or an in-process model, whose pieces are longer than a turn), so the loop only sends and
    receives.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import WordJudge
        >>> def judge():
        ...     (probs,) = yield [ModelCall.judge("pain", ["aspirin"])]
        ...     return probs
        >>> asyncio.run(adrive(judge(), WordJudge("aspirin")))
        [0.9]
    """
    advance = _advance_off_loop if off_loop else _advance
    try:
        finished, got = await advance(step, None)
        while not finished:
            replies = await _asend_batch(got, llm, trace, max_concurrency, embedder)
            finished, got = await advance(step, replies)
        return cast(R, got)
    finally:
        step.close()


def _resume(step: Step[Any], replies: list[Any] | None) -> tuple[bool, Any]:
    """``(False, next batch)`` or ``(True, the step's result)``: a ``StopIteration`` never leaves this frame (it
    cannot cross a coroutine or a future)."""
    try:
        return False, (next(step) if replies is None else step.send(replies))
    except StopIteration as done:
        return True, done.value


async def _advance(step: Step[Any], replies: list[Any] | None) -> tuple[bool, Any]:
    """The step's next batch, its own code run on the loop in the loop's turns
    (:mod:`~retrievekit.core.llm.loop_turns`: many steps in flight hold the loop a few milliseconds at a time)."""
    await take_turn()
    return _resume(step, replies)


async def _advance_off_loop(step: Step[Any], replies: list[Any] | None) -> tuple[bool, Any]:
    """The step's next batch, its own code (a search, a solver, an in-process model) run on the bridge's bounded
    pool, so the loop only sends and receives. A cancellation waits for that code to end on its thread (a running
    generator cannot be closed), then goes on."""
    running = asyncio.ensure_future(run_in_pool(_resume, step, replies))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await running
        raise


async def _asend_batch(
    batch: Sequence[ModelCall], llm: Any, trace: Trace | None, max_concurrency: int, embedder: Any
) -> list[Any]:
    if len(batch) == 1:
        return [await asend_call(batch[0], llm, trace, embedder=embedder)]
    width = min(llm_concurrency(llm, max_concurrency), len(batch))
    slots = asyncio.Semaphore(width)
    subs = [trace.child() if trace is not None else Trace() for _ in batch]

    async def one(call: ModelCall, sub: Trace) -> Any:
        async with slots:
            return await asend_call(call, llm, sub, embedder=embedder)

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(c, s)) for c, s in zip(batch, subs, strict=True)]
    except BaseExceptionGroup as group_error:  # the first failure, as the sync driver raises it
        raise group_error.exceptions[0] from None
    finally:
        if trace is not None:
            trace.merge_concurrent(subs, width)
    return [t.result() for t in tasks]
