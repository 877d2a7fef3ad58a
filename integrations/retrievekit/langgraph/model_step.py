"""A graph node that calls the chat model once, written once and run both ways: ``invoke`` and ``ainvoke``.

A node body is a generator: it prepares the prompt, ``yield`` s ``(model, prompt)`` and receives the reply (or, when
the call failed, the exception is thrown into it at the ``yield``), then returns the state update. :func:`run_step`
drives it with ``model.invoke``; :func:`arun_step` with ``await model.ainvoke``, so a graph run with ``ainvoke`` /
``astream`` reaches a served model through its async client and never blocks the event loop on it. A body that
needs no model call returns without yielding. :func:`model_node` makes the graph node that has both forms.

Examples:
    >>> import asyncio
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> model = FakeListChatModel(responses=["hello"])
    >>> def greet(state):
    ...     reply = yield model, [("user", state["name"])]
    ...     return {"greeting": reply.content}
    >>> run_step(greet({"name": "Ada"}), None), asyncio.run(arun_step(greet({"name": "Ada"}), None))
    ({'greeting': 'hello'}, {'greeting': 'hello'})
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

__all__ = ["ModelStep", "arun_step", "model_node", "run_step"]

ModelStep = Generator[tuple[Any, Any], Any, dict[str, Any]]
"""A node body: yields ``(model, prompt)`` once (or never), receives the reply, returns the state update."""


def _resume(step: ModelStep, reply: Any, error: Exception | None) -> dict[str, Any]:
    try:
        if error is not None:
            step.throw(error)
        else:
            step.send(reply)
    except StopIteration as done:
        return done.value
    raise RuntimeError("a model step calls the model once: it yielded twice")


def run_step(step: ModelStep, config: RunnableConfig | None) -> dict[str, Any]:
    """Drive ``step`` with ``model.invoke(prompt, config)``.

    Examples:
        >>> def no_call(state):
        ...     return {"answer": state["answer"]}
        ...     yield  # a generator that returns before any model call
        >>> run_step(no_call({"answer": "x"}), None)
        {'answer': 'x'}
    """
    try:
        model, prompt = next(step)
    except StopIteration as done:
        return done.value
    try:
        reply = model.invoke(prompt, config)
    except Exception as e:  # handed to the body, which records it
        return _resume(step, None, e)
    return _resume(step, reply, None)


async def arun_step(step: ModelStep, config: RunnableConfig | None) -> dict[str, Any]:
    """Drive ``step`` with ``await model.ainvoke(prompt, config)``.

    Examples:
        >>> import asyncio
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> def echo(state):
        ...     reply = yield FakeListChatModel(responses=["hi"]), "hello"
        ...     return {"reply": reply.content}
        >>> asyncio.run(arun_step(echo({}), None))
        {'reply': 'hi'}
    """
    try:
        model, prompt = next(step)
    except StopIteration as done:
        return done.value
    try:
        reply = await model.ainvoke(prompt, config)
    except Exception as e:
        return _resume(step, None, e)
    return _resume(step, reply, None)


def model_node(body: Callable[[Any], ModelStep], name: str) -> Runnable[Any, Any]:
    """The graph node running ``body`` (a :data:`ModelStep` generator function of the state): ``run_step`` when the
    graph is invoked, ``arun_step`` when it is awaited.

    Examples:
        >>> def body(state):
        ...     return {"seen": state["x"]}
        ...     yield
        >>> model_node(body, "noop").invoke({"x": 1})
        {'seen': 1}
    """

    def sync_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return run_step(body(state), config)

    async def async_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await arun_step(body(state), config)

    return RunnableLambda(sync_node, afunc=async_node, name=name)  # public API: sync under invoke, async under ainvoke
