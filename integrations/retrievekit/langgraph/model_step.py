"""A graph node that calls the chat model once, sent by core's drivers: ``invoke`` drives it with
:func:`~retrievekit.core.llm.drivers.drive`, ``ainvoke`` awaits :func:`~retrievekit.core.llm.drivers.adrive`.

A node body is a function of the state that returns either the state update (no model call) or a :class:`NodeCall`:
the :class:`~retrievekit.core.llm.calls.ModelCall` to send, the transport it goes through
(:func:`~retrievekit.langgraph.model_policy.turn_transport`), what to make of the reply (``then``) and of a failed
call (``on_error``; None: it raises). The call is a core step (:func:`ask`), so the served path's guarantees apply
once, as for every other method: the call's ``max_tokens``, the prompt bound, defusing, one deadline, bounded
retries, typed errors and the model's one budget of requests; under ``ainvoke`` the request is awaited on the
caller's loop (no thread per request) and cancelling the run cancels it. :func:`model_node` makes the graph node
that has both forms.

Examples:
    >>> import asyncio
    >>> from retrievekit.langgraph.model_policy import turn_transport
    >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
    >>> model = turn_transport(ScriptedToolChatModel(replies=["hello"]), lambda m: m)
    >>> def greet(state):
    ...     call = ModelCall.chat("greet", state["name"])
    ...     return NodeCall(model, call, lambda reply: {"greeting": reply.content})
    >>> run_node(greet({"name": "Ada"})), asyncio.run(arun_node(greet({"name": "Ada"})))
    ({'greeting': 'hello'}, {'greeting': 'hello'})
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda

from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import ChatMessage

__all__ = ["NodeCall", "arun_node", "ask", "call_of", "model_node", "run_node"]

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


@dataclass(frozen=True)
class NodeCall:
    """A node's one model call: sent through ``llm``, its reply (an ``AIMessage``) read by ``then``; a failed call
    read by ``on_error`` (None: the typed error is raised).

    Examples:
        >>> NodeCall(None, ModelCall.chat("x", "hi"), dict).on_error is None
        True
    """

    llm: Any
    call: ModelCall
    then: Callable[[AIMessage], dict[str, Any]]
    on_error: Callable[[Exception], dict[str, Any]] | None = None


def call_of(purpose: str, prompt: Sequence[BaseMessage], *, max_tokens: int, temperature: float = 0.0) -> ModelCall:
    """The chat call of a LangChain prompt (system, human, AI and tool messages as text turns).

    Examples:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> c = call_of("agent.turn", [SystemMessage("Be brief."), HumanMessage("Hi")], max_tokens=8)
        >>> [m.role for m in c.messages], c.max_tokens
        (['system', 'user'], 8)
    """
    messages = [ChatMessage(_ROLES.get(m.type, "user"), m.text) for m in prompt]
    return ModelCall.chat(purpose, messages, max_tokens=max_tokens, temperature=temperature)


def ask(call: ModelCall) -> Generator[list[ModelCall], list[Any], AIMessage]:
    """The step of one call: its reply's ``AIMessage``; a failure handed back as a value is raised.

    Examples:
        >>> from retrievekit.langgraph.model_policy import turn_transport
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> drive(ask(ModelCall.chat("x", "hi")), turn_transport(ScriptedToolChatModel(replies=["yo"]), lambda m: m)).content
        'yo'
    """
    (reply,) = yield [call]
    if isinstance(reply, BaseException):
        raise reply
    message = getattr(reply, "message", None)
    return message if isinstance(message, AIMessage) else AIMessage(content=str(getattr(reply, "text", reply)))


def run_node(got: NodeCall | dict[str, Any]) -> dict[str, Any]:
    """The node's state update, its call (if any) sent with :func:`~retrievekit.core.llm.drivers.drive`.

    Examples:
        >>> run_node({"answer": "x"})
        {'answer': 'x'}
    """
    if not isinstance(got, NodeCall):
        return got
    try:
        reply = drive(ask(got.call), got.llm)
    except Exception as e:  # the typed error, or the partial result asked for (on_llm_error="stop")
        if got.on_error is None:
            raise
        return got.on_error(e)
    return got.then(reply)


async def arun_node(got: NodeCall | dict[str, Any]) -> dict[str, Any]:
    """:func:`run_node` awaited: the call sent with :func:`~retrievekit.core.llm.drivers.adrive` on the caller's
    loop; cancelling the awaiting task cancels the request in flight.

    Examples:
        >>> import asyncio
        >>> asyncio.run(arun_node({"answer": "x"}))
        {'answer': 'x'}
    """
    if not isinstance(got, NodeCall):
        return got
    try:
        reply = await adrive(ask(got.call), got.llm)
    except Exception as e:
        if got.on_error is None:
            raise
        return got.on_error(e)
    return got.then(reply)


def model_node(body: Callable[[Any], NodeCall | dict[str, Any]], name: str) -> Runnable[Any, Any]:
    """The graph node running ``body`` (the state to a :class:`NodeCall` or an update): :func:`run_node` when the
    graph is invoked, :func:`arun_node` when it is awaited.

    Examples:
        >>> model_node(lambda state: {"seen": state["x"]}, "noop").invoke({"x": 1})
        {'seen': 1}
    """

    def sync_node(state: Any) -> dict[str, Any]:
        return run_node(body(state))

    async def async_node(state: Any) -> dict[str, Any]:
        return await arun_node(body(state))

    return RunnableLambda(sync_node, afunc=async_node, name=name)  # public API: sync under invoke, async under ainvoke
