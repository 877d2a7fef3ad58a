"""The agent's chat model as the model core's drivers send its calls through: one transport per binding.

Every model call of the iterative agent (the tool-calling turns and the answer) is a
:class:`~retrievekit.core.llm.calls.ModelCall` sent by :func:`~retrievekit.core.llm.drivers.drive` (``invoke``) or
:func:`~retrievekit.core.llm.drivers.adrive` (``ainvoke``) through a transport made here from the user's chat model:

* a served model (``ChatOpenAI``, ``ChatOllama``, any LangChain chat model) becomes a :class:`ServedTurns`, a view of
  the model's one adapter (:class:`~retrievekit.langchain.llm.LangChainChatLLM`, shared by every component that uses
  the same model object) that binds the agent's tools on each request. So the served path applies once: the call's
  ``max_tokens``, the prompt bound (``max_prompt_chars``), defused control strings, one deadline, bounded retries,
  typed errors naming the endpoint, the model's one budget of requests in flight, and under ``ainvoke`` the model's
  async client awaited on the caller's loop (no thread per request; a cancelled run sends nothing more);
* a local model (:class:`~retrievekit.langchain.local_chat.LocalToolChatModel`, or a plan replay over one) makes no
  request and becomes a :class:`LocalTurns`, called as it is (on the bridge's bounded pool when awaited).

What the step receives is a :class:`TurnReply`: a :class:`~retrievekit.core.llm.protocol.Completion` that also
carries the model's ``AIMessage`` (its tool calls, usage and metadata).

Examples:
    >>> from retrievekit.core.llm.calls import ModelCall
    >>> from retrievekit.core.llm.drivers import drive
    >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
    >>> def ask():
    ...     (reply,) = yield [ModelCall.chat("agent.answer", "Colour of apples?")]
    ...     return reply.message.content
    >>> drive(ask(), turn_transport(ScriptedToolChatModel(replies=["red"]), lambda m: m))
    'red'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.protocol import Completion, Prompt
from retrievekit.core.llm.served import SendRequest
from retrievekit.core.trace import Trace
from retrievekit.langchain.llm import LangChainChatLLM, _completion, as_chat_llm

__all__ = [
    "AGENT_TURN_MAX_TOKENS",
    "ANSWER_MAX_TOKENS",
    "LocalTurns",
    "ServedTurns",
    "TurnReply",
    "is_local_model",
    "turn_limits",
    "turn_transport",
]

AGENT_TURN_MAX_TOKENS = 256
"""``max_tokens`` of a tool-calling turn sent to a served model that sets none of its own (a call and a short note)."""

ANSWER_MAX_TOKENS = 256
"""``max_tokens`` of the answer call sent to a served model that sets none of its own (the prompt asks for a short
answer)."""

Bind = Callable[[Any], Any]
"""How a transport binds the chat model before a request (to the tools, forcing one, or not at all)."""


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
class TurnReply(Completion):
    """A chat model's reply to an agent call: the completion (text, tokens) and the ``AIMessage`` itself.

    Examples:
        >>> TurnReply("red", 5, 1, message=AIMessage("red")).message.content
        'red'
    """

    message: Any = None


def _turn_reply(response: Any, messages: Sequence[BaseMessage]) -> TurnReply:
    done = _completion(response, messages)
    message = response if isinstance(response, AIMessage) else AIMessage(content=done.text)
    return TurnReply(
        done.text, done.prompt_tokens, done.completion_tokens, done.finish_reason, done.usage_estimated, message
    )


class ServedTurns(LangChainChatLLM):
    """A view of a served chat model's one adapter that binds the agent's tools on each request.

    It shares the adapter's budget of requests in flight, its per-loop async clients and what it learned of the
    server; ``policy`` replaces the adapter's call policy for the agent's calls only. Every request goes through the
    bound model's own client (``invoke`` / ``ainvoke``), which sends the tools.

    Examples:
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> base = LangChainChatLLM(ScriptedToolChatModel(replies=["ok"]))
        >>> view = ServedTurns(base, lambda m: m)
        >>> view.complete("hi").message.content, view.slots is base.slots
        ('ok', True)
    """

    def __init__(self, base: LangChainChatLLM, bind: Bind, policy: CallPolicy | None = None) -> None:
        self.__dict__.update(base.__dict__)  # the same slots, per-loop clients and refused modes: one adapter
        self._base, self._bind = base, bind  # the base kept alive: every component using the model shares it
        self.wire = None  # a direct transport an edge may set sends no tools: the bound model's own client does
        if policy is not None:
            self.policy = policy

    def _send(self, request: SendRequest) -> Completion:
        """One ``invoke`` of the bound model with the request's limits and timeout."""
        messages = self.to_langchain_messages(request.messages)
        kwargs = self.client_kwargs(request, per_request_timeout=self._openai)
        runnable = self._bind(self._model)
        response = self.call_client(lambda **kw: runnable.invoke(messages, config=self.config, **kw), kwargs)
        return _turn_reply(response, messages)

    async def _asend(self, request: SendRequest) -> Completion:  # type: ignore[override]
        """One ``await ainvoke`` of the bound model, through the running loop's own copy of the client."""
        messages = self.to_langchain_messages(request.messages)
        kwargs = self.client_kwargs(request, per_request_timeout=self._openai)
        runnable = self._bind(await self._loop_models.get())
        response = await self.acall_client(lambda **kw: runnable.ainvoke(messages, config=self.config, **kw), kwargs)
        return _turn_reply(response, messages)


class LocalTurns(ChatLLMBase):
    """An in-process chat model (already bound) as the drivers' model: each call is one ``invoke``, called as it is.

    Examples:
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> LocalTurns(ScriptedToolChatModel(replies=["ok"])).complete("hi").message.content
        'ok'
    """

    def __init__(self, runnable: Any) -> None:
        self.runnable = runnable

    def _reply(self, prompt: Prompt, max_tokens: int, temperature: float, trace: Trace | None) -> Completion:
        messages = LangChainChatLLM.to_langchain_messages(prompt)
        done = _turn_reply(self.runnable.invoke(messages), messages)
        self._record(trace, done.prompt_tokens, done.completion_tokens)
        return done


def turn_transport(chat: Any, bind: Bind, policy: CallPolicy | None = None) -> Any:
    """The model the drivers send one kind of agent call through: ``chat`` bound by ``bind`` -- a :class:`LocalTurns`
    for a local model (bound once), else a :class:`ServedTurns` over the model's one adapter (bound per request).

    Examples:
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> type(turn_transport(ScriptedToolChatModel(replies=["x"]), lambda m: m)).__name__
        'ServedTurns'
    """
    if is_local_model(chat):
        return LocalTurns(bind(chat))
    base = as_chat_llm(chat)
    if not isinstance(base, LangChainChatLLM):  # a shared adapter of another kind: the agent's own
        base = LangChainChatLLM(chat)
    return ServedTurns(base, bind, policy)


def turn_limits(chat: Any, limit: int) -> tuple[int, float]:
    """``(max_tokens, temperature)`` of an agent call: the model's own when it sets them, else ``limit`` and 0.

    Examples:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> turn_limits(FakeListChatModel(responses=["ok"]), 64)
        (64, 0.0)
    """
    own, temperature = getattr(chat, "max_tokens", None), getattr(chat, "temperature", None)
    tokens = own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else limit
    number = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
    return int(tokens), float(temperature) if number else 0.0
