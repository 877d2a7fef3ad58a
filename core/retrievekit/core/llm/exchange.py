"""One model call to a served LLM as values: every request it sends and every wait, written once for both drivers.

A served call is more than one request: a JSON call runs the attempt loop (ask, parse with repair, validate, ask
again with a short note), each request runs under the model's call policy (a deadline, bounded retries with
backoff, typed errors), and a server that refuses a structured-output mode is asked again with the next one. This
module writes that whole exchange once, free of I/O, as a generator; a driver
(:mod:`retrievekit.core.llm.drivers`) only sends what it yields:

1. **Checked before any request.** The call's token limit, the prompt's size against the model's stated bound
   (``max_prompt_chars``) and every control string of the chat-template families defused
   (:meth:`~retrievekit.core.llm.served.ServedChatLLM.checked`).
2. **Requests as values.** It yields each :class:`~retrievekit.core.llm.served.SendRequest` and receives the
   reply, or the exception the transport raised (a timeout included); it yields a :class:`Backoff` between
   retries and receives ``None`` once the driver has waited.
3. **Policy once.** A failed request becomes the typed error or the next retry
   (:func:`~retrievekit.core.llm.call_policy.failed_request`); the JSON loop is
   :func:`~retrievekit.core.llm.base.json_attempts`; a refused mode is remembered by the model.

The driver holds the model's slots around each request and bounds its time (``asyncio.timeout`` awaited; a watchdog
for a sync client), so neither the exchange nor the model's own code is on the stack while a request is in flight.

Examples:
    >>> from retrievekit.core.llm.calls import ModelCall
    >>> from retrievekit.core.llm.protocol import Completion
    >>> from retrievekit.core.llm.served import ServedChatLLM
    >>> steps = served_exchange(ServedChatLLM(), ModelCall.json("x", "Ok?", {"type": "object"}), None)
    >>> request = next(steps)
    >>> request.max_tokens, request.messages[-1].role
    (256, 'user')
    >>> try:
    ...     steps.send(Completion('{"ok": true}', 4, 2))
    ... except StopIteration as done:
    ...     print(done.value.value)
    {'ok': True}
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from retrievekit.core.errors import InvalidInputError, LLMUnavailableError
from retrievekit.core.llm.base import JsonAttempts, check_retries
from retrievekit.core.llm.call_policy import CallPolicy, failed_request
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.protocol import ChatMessage, Completion, JsonResult, JsonSchemaLike, Prompt
from retrievekit.core.trace import Trace

__all__ = [
    "Backoff",
    "Exchange",
    "SendRequest",
    "ServedModel",
    "check_prompt_size",
    "is_served",
    "served_exchange",
]


@dataclass(frozen=True)
class SendRequest:
    """One request to the server, as the adapter must send it.

    Attributes:
        messages: the conversation.
        max_tokens: the reply's limit (always sent).
        temperature: sampling temperature (always sent).
        timeout: seconds the client may wait for this request (pass it to the client per request).
        response_format: the OpenAI-style ``response_format`` to send, or None.

    Examples:
        >>> SendRequest([ChatMessage("user", "hi")], 16, 0.0, 60.0).response_format is None
        True
    """

    messages: list[ChatMessage]
    max_tokens: int
    temperature: float
    timeout: float
    response_format: dict[str, Any] | None = None


def check_prompt_size(messages: Sequence[ChatMessage], bound: int | None, endpoint: str, purpose: str = "") -> None:
    """Refuse a prompt longer than ``bound`` characters (all messages) with ``InvalidInputError``, before any request.

    Examples:
        >>> check_prompt_size([ChatMessage("user", "x" * 10)], 5, "http://127.0.0.1:8080/v1")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a prompt of 10 characters is over the bound of 5 of the LLM at http://127.0.0.1:8080/v1 (max_prompt_chars); shorten the query or the passages, or raise the bound to the server's context
    """
    size = sum(len(m.content) for m in messages)
    if bound is not None and size > int(bound):
        what = f" ({purpose})" if purpose else ""
        raise InvalidInputError(
            f"a prompt of {size} characters{what} is over the bound of {int(bound)} of the LLM at {endpoint} "
            "(max_prompt_chars); shorten the query or the passages, or raise the bound to the server's context"
        )


class ServedModel(Protocol):
    """What an exchange and the drivers read of a served model
    (:class:`~retrievekit.core.llm.served.ServedChatLLM` is the one implementation).

    Examples:
        >>> from retrievekit.core.llm.served import ServedChatLLM
        >>> is_served(ServedChatLLM())
        True
    """

    endpoint: str
    policy: CallPolicy
    slots: Any

    def checked(self, messages: list[ChatMessage], max_tokens: int) -> list[ChatMessage]: ...
    def noted(self, done: Completion, trace: Trace | None) -> Completion: ...
    def empty_noted(self, done: Completion, trace: Trace | None) -> Completion: ...
    def json_call(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> tuple[str, JsonAttempts, dict[str, Any] | None]: ...
    def refused_mode(self, e: LLMUnavailableError, mode: str, trace: Trace | None) -> bool: ...
    def sync_transport(self) -> Callable[[SendRequest], Completion]: ...
    def sync_bound(self, send: Callable[[SendRequest], Completion]) -> AbstractContextManager[Any]: ...
    def async_transport(self) -> Callable[[SendRequest], Coroutine[Any, Any, Completion]]: ...


def is_served(llm: object) -> bool:
    """Whether ``llm`` is a served model whose calls the drivers send as exchanges (it hands over its transports).

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> is_served(FixedReplyLLM("ok"))
        False
    """
    return callable(getattr(llm, "async_transport", None)) and callable(getattr(llm, "json_call", None))


@dataclass(frozen=True)
class Backoff:
    """A wait between two attempts of one request, in seconds (the driver sleeps, then sends ``None`` back).

    Examples:
        >>> Backoff(0.25).seconds
        0.25
    """

    seconds: float


Exchange: TypeAlias = Generator["SendRequest | Backoff", "Completion | BaseException | None", Any]
"""A served call as values: yields requests and waits, receives replies (or the transport's exception), returns a
``Completion`` (chat) or a ``JsonResult`` (JSON)."""


def served_exchange(llm: ServedModel, call: ModelCall, trace: Trace | None) -> Exchange:
    """The requests of one chat or JSON ``call`` to the served ``llm`` (module docstring).

    Examples:
        >>> from retrievekit.core.llm.served import ServedChatLLM
        >>> steps = served_exchange(ServedChatLLM(), ModelCall.chat("x", "hi", max_tokens=5), None)
        >>> next(steps).max_tokens
        5
    """
    if call.kind == "json":
        result: JsonResult = yield from _json_exchange(llm, call, trace)
        return result
    done: Completion = yield from _requests(llm, list(call.messages), call.max_tokens, call.temperature, None, trace)
    return llm.empty_noted(done, trace)


def _json_exchange(llm: ServedModel, call: ModelCall, trace: Trace | None) -> Exchange:
    """The JSON attempt loop in the model's structured-output mode; a mode the server refuses (HTTP 400/422) is
    remembered and the call starts again in the next one."""
    retries, schema = check_retries(call.retries), call.schema
    if schema is None:
        raise InvalidInputError(f"the JSON call {call.purpose!r} has no schema")
    while True:
        mode, attempts, response_format = llm.json_call(list(call.messages), schema, call.max_tokens, trace, retries)
        try:
            ask = next(attempts)
            while True:
                done = yield from _requests(llm, ask[0], ask[1], 0.0, response_format, trace)
                ask = attempts.send(done)
        except StopIteration as finished:
            result: JsonResult = finished.value
            return result
        except LLMUnavailableError as e:
            if not llm.refused_mode(e, mode, trace):
                raise


def _requests(
    llm: ServedModel,
    messages: list[ChatMessage],
    max_tokens: int,
    temperature: float,
    response_format: dict[str, Any] | None,
    trace: Trace | None,
) -> Exchange:
    """One request under the model's call policy: sent, and on a failure either the typed error raised or a
    :class:`Backoff` and the request sent again."""
    sent = llm.checked(messages, max_tokens)
    policy = llm.policy
    attempts = int(policy.max_retries) + 1
    for attempt in range(1, attempts + 1):
        got = yield SendRequest(sent, int(max_tokens), float(temperature), policy.timeout, response_format)
        if isinstance(got, Completion):
            if trace is not None:
                trace.record_llm_call(prompt_tokens=got.prompt_tokens, completion_tokens=got.completion_tokens)
            return llm.noted(got, trace)
        if not isinstance(got, Exception):  # the drivers send a reply or the transport's exception, nothing else
            raise TypeError(f"a transport answered {type(got).__name__}, not a Completion")
        yield Backoff(failed_request(got, attempt, attempts, policy, endpoint=llm.endpoint, trace=trace))
    raise AssertionError("unreachable")  # pragma: no cover
