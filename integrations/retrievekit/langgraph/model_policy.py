"""The agent's chat model under retrievekit's call policy: one limit, one deadline, bounded retries, typed errors.

Every model call of the iterative agent (the tool-calling turns and the answer) goes through
:func:`~retrievekit.core.llm.call_policy.call_with_policy`, like every other method's served calls: the request is
sent once per attempt (an OpenAI-family client is used through a copy whose own retries are off), carries the call's
``max_tokens`` and the policy's ``timeout``, is retried only on a connection error, HTTP 429 or 5xx, and fails as
:class:`~retrievekit.core.errors.LLMTimeoutError`, :class:`~retrievekit.core.errors.LLMUnavailableError` or
:class:`~retrievekit.core.errors.LLMOutputError` naming the endpoint. Under ``ainvoke`` the request awaits the
model's async client on the caller's loop (:func:`~retrievekit.core.llm.bridge.send_request`), within the same
deadline.

A local model (:class:`~retrievekit.langchain.local_chat.LocalToolChatModel`, or a plan replay over one) makes no
request, and is called as it is.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from retrievekit.core.llm.call_policy import CallPolicy
    >>> model = PolicedModel(FakeListChatModel(responses=["hi"]), CallPolicy(timeout=5), "fake")
    >>> model.invoke("hello").content
    'hi'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.runnables import Runnable, RunnableConfig

from retrievekit.core.llm.bridge import run_off_loop, send_request
from retrievekit.core.llm.call_policy import CallPolicy, call_with_policy
from retrievekit.langchain.llm import _endpoint_of, _openai_family

__all__ = ["AGENT_TURN_MAX_TOKENS", "ANSWER_MAX_TOKENS", "PolicedModel", "is_local_model", "policed_calls"]

AGENT_TURN_MAX_TOKENS = 256
"""``max_tokens`` of a tool-calling turn sent to a served model that sets none of its own (a call and a short note)."""

ANSWER_MAX_TOKENS = 256
"""``max_tokens`` of the answer call sent to a served model that sets none of its own (the prompt asks for a short
answer)."""


def is_local_model(chat: Any) -> bool:
    """Whether ``chat`` runs in-process (a ``LocalToolChatModel``, or a plan replay over one): it makes no request,
    so no request policy applies.

    Examples:
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> is_local_model(ScriptedToolChatModel(replies=["x"]))
        False
    """
    from retrievekit.langchain.local_chat import LocalToolChatModel

    inner = getattr(chat, "inner", None)
    return isinstance(chat, LocalToolChatModel) or (inner is not None and is_local_model(inner))


@dataclass(frozen=True)
class PolicedModel:
    """A bound chat model whose ``invoke`` / ``ainvoke`` run one call under ``policy``.

    Attributes:
        runnable: the model (bound to the tools or not), already sending each request once.
        policy: the call's limits (:class:`~retrievekit.core.llm.call_policy.CallPolicy`).
        endpoint: where the model is served, named in every error.
        call_kwargs: keyword arguments of every call (``max_tokens``); ``timeout`` is added with the policy's
            per-request timeout when ``send_timeout``.
        send_timeout: whether the client takes a per-request ``timeout`` (the OpenAI SDK does).

    Examples:
        >>> import asyncio
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from retrievekit.core.llm.call_policy import CallPolicy
        >>> model = PolicedModel(FakeListChatModel(responses=["ok"]), CallPolicy(timeout=5), "fake")
        >>> asyncio.run(model.ainvoke("hello")).content
        'ok'
    """

    runnable: Runnable[Any, Any]
    policy: CallPolicy
    endpoint: str
    call_kwargs: Mapping[str, Any] = field(default_factory=dict)
    send_timeout: bool = False

    def _kwargs(self, timeout: float) -> dict[str, Any]:
        kwargs = dict(self.call_kwargs)
        if self.send_timeout:
            kwargs["timeout"] = timeout
        return kwargs

    def invoke(self, prompt: Any, config: RunnableConfig | None = None) -> Any:
        """One call under the policy (the async client on the caller's loop under ``ainvoke``, else the sync one).

        Examples:
            >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
            >>> from retrievekit.core.llm.call_policy import CallPolicy
            >>> PolicedModel(FakeListChatModel(responses=["ok"]), CallPolicy(), "fake").invoke("hi").content
            'ok'
        """

        def send(timeout: float) -> Any:
            kwargs = self._kwargs(timeout)

            async def asend(p: Any) -> Any:
                return await self.runnable.ainvoke(p, config, **kwargs)

            return send_request(lambda p: self.runnable.invoke(p, config, **kwargs), asend, prompt, timeout)

        return cast(Any, call_with_policy)(send, self.policy, endpoint=self.endpoint)

    async def ainvoke(self, prompt: Any, config: RunnableConfig | None = None) -> Any:
        """:meth:`invoke` off the event loop; the request itself awaits the model's async client.

        Examples:
            >>> import asyncio
            >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
            >>> from retrievekit.core.llm.call_policy import CallPolicy
            >>> asyncio.run(PolicedModel(FakeListChatModel(responses=["ok"]), CallPolicy(), "x").ainvoke("hi")).content
            'ok'
        """
        return await run_off_loop(self.invoke, prompt, config)


def policed_calls(chat: Any, policy: CallPolicy | None) -> Callable[[Any, int], Any]:
    """How the agent calls ``chat`` once bound: ``wrap(runnable, max_tokens)`` gives a :class:`PolicedModel` under
    ``policy`` (default: the model's own ``timeout`` and ``max_retries``), sending ``max_tokens`` (the model's own,
    else the given one) and the per-request timeout to an OpenAI-family model; a local model is called as it is.

    Examples:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> wrap = policed_calls(FakeListChatModel(responses=["ok"]), None)
        >>> m = wrap(FakeListChatModel(responses=["ok"]), 64)
        >>> m.policy.timeout, dict(m.call_kwargs), m.endpoint
        (60.0, {}, 'FakeListChatModel')
    """
    if is_local_model(chat):
        return lambda runnable, _limit: runnable
    openai = _openai_family(chat)
    policy = policy or CallPolicy.from_client(
        getattr(chat, "request_timeout", None), getattr(chat, "max_retries", None)
    )
    own, endpoint = getattr(chat, "max_tokens", None), _endpoint_of(chat)

    def wrap(runnable: Any, limit: int) -> Any:
        kwargs = {"max_tokens": own or limit} if openai else {}
        return PolicedModel(runnable, policy, endpoint, kwargs, send_timeout=openai)

    return wrap
