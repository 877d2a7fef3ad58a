"""A chat model that records the agent's replies to a question once and replays them on later runs.

:class:`PlanReplayChatModel` wraps the agent's chat model for judge sweeps (see
:mod:`retrievekit.core.iterative.plan_cache` for what replay means and why the judge is not part of the key).
:meth:`~PlanReplayChatModel.begin` picks the question: with a recorded plan every call returns the next recorded
reply (text, tool calls, the recorded token usage) and the wrapped model is not called; without one, calls go to
the wrapped model and :meth:`~PlanReplayChatModel.finish` records what it said. ``bind_tools`` binds the wrapped
model and shares the recording, so the agent's tool-bound calls and its final-answer call form one plan.

One question at a time per instance (``retrievekit bench`` runs a shard's questions in order); not thread-safe.

Examples:
    >>> import tempfile
    >>> from langchain_core.messages import AIMessage
    >>> from retrievekit.core.iterative.plan_cache import PlanCache
    >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
    >>> cache = PlanCache(tempfile.mkdtemp(), model="scripted", settings={}, corpus_ids=[])
    >>> live = ScriptedToolChatModel(replies=["Paris"])
    >>> m = PlanReplayChatModel(inner=live, plans=cache)
    >>> m.begin("Capital of France?"); m.invoke("...").content, m.finish()
    ('Paris', False)
    >>> m.begin("Capital of France?"); m.invoke("...").content, m.finish(), live.position
    ('Paris', True, 1)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, Field

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.iterative.plan_cache import PlanCache
from retrievekit.langchain.reply_model import OneReplyChatModel

__all__ = ["PlanReplayChatModel"]


@dataclass
class _Session:
    """The question under way, shared by a model and its tool-bound copies."""

    question: str | None = None
    replay: list[dict[str, Any]] | None = None
    position: int = 0
    recorded: list[dict[str, Any]] = field(default_factory=list)


def _as_reply(msg: AIMessage) -> dict[str, Any]:
    """What is kept of a live reply: its text, its tool calls and its token usage."""
    reply: dict[str, Any] = {
        "content": msg.content if isinstance(msg.content, str) else str(msg.content),
        "tool_calls": [{"name": c["name"], "args": dict(c.get("args") or {})} for c in msg.tool_calls],
    }
    if msg.usage_metadata:
        reply["usage"] = {k: int(v) for k, v in msg.usage_metadata.items() if isinstance(v, int)}
    return reply


def _as_message(reply: dict[str, Any]) -> AIMessage:
    """A recorded reply as a new AIMessage (fresh tool-call ids, the recorded usage)."""
    calls = [{"name": c["name"], "args": c["args"], "id": uuid.uuid4().hex[:8]} for c in reply["tool_calls"]]
    msg = AIMessage(content=reply["content"], tool_calls=calls)
    usage = reply.get("usage") or {}
    if {"input_tokens", "output_tokens", "total_tokens"} <= set(usage):
        msg.usage_metadata = {k: usage[k] for k in ("input_tokens", "output_tokens", "total_tokens")}  # type: ignore[assignment]
    return msg


class PlanReplayChatModel(OneReplyChatModel):
    """Records ``inner``'s replies per question in ``plans`` and replays them when the question comes again.

    Examples:
        >>> import tempfile
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> from retrievekit.core.iterative.plan_cache import PlanCache
        >>> cache = PlanCache(tempfile.mkdtemp(), model="s", settings={}, corpus_ids=[])
        >>> PlanReplayChatModel(inner=ScriptedToolChatModel(replies=["x"]), plans=cache).replaying
        False
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel
    plans: PlanCache  # not ``cache``: that is BaseChatModel's response-cache switch
    bound: Any = None
    session: _Session = Field(default_factory=_Session)

    @property
    def _llm_type(self) -> str:
        return "retrievekit-plan-replay"

    @property
    def replaying(self) -> bool:
        """Whether the current question is answered from its recorded plan.

        Examples:
            >>> import tempfile
            >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
            >>> cache = PlanCache(tempfile.mkdtemp(), model="s", settings={}, corpus_ids=[])
            >>> cache.put("q", [{"content": "a", "tool_calls": []}])
            >>> m = PlanReplayChatModel(inner=ScriptedToolChatModel(replies=["x"]), plans=cache)
            >>> m.begin("q"); m.replaying
            True
        """
        return self.session.replay is not None

    def begin(self, question: str) -> None:
        """Start ``question``: replay its recorded plan if there is one, else record the wrapped model's replies."""
        self.session.question = question
        self.session.replay = self.plans.get(question)
        self.session.position = 0
        self.session.recorded = []

    def finish(self, *, keep: bool = True) -> bool:
        """End the question; record a live run's replies when ``keep`` (pass False for a failed run).

        Returns whether the question was replayed.
        """
        s = self.session
        replayed = s.replay is not None
        if not replayed and keep and s.recorded and s.question is not None:
            self.plans.put(s.question, s.recorded)
        s.question, s.replay, s.position, s.recorded = None, None, 0, []
        return replayed

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """A copy whose live calls go to ``inner.bind_tools(tools)``; it shares this model's recording.

        Examples:
            >>> import tempfile
            >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
            >>> cache = PlanCache(tempfile.mkdtemp(), model="s", settings={}, corpus_ids=[])
            >>> m = PlanReplayChatModel(inner=ScriptedToolChatModel(replies=["x"]), plans=cache)
            >>> m.bind_tools([]).session is m.session
            True
        """
        return self.model_copy(update={"bound": self.inner.bind_tools(tools, **kwargs)})

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> AIMessage:
        s = self.session
        if s.replay is not None:
            if s.position >= len(s.replay):
                raise LLMOutputError(
                    f"the recorded plan for {s.question!r} has {len(s.replay)} replies and the agent asked for more; "
                    "the agent's settings changed since it was recorded"
                )
            msg = _as_message(s.replay[s.position])
            s.position += 1
        else:
            live = (self.bound or self.inner).invoke(messages, stop=stop, **kwargs)
            msg = live if isinstance(live, AIMessage) else AIMessage(content=str(getattr(live, "content", live)))
            s.recorded.append(_as_reply(msg))
        return msg
