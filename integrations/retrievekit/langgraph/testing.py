"""A scripted tool-calling chat model for tests and examples (no model, no network).

LangChain's fake chat models do not implement ``bind_tools``; :class:`ScriptedToolChatModel` does (it returns
itself and remembers the tool names) and replies with a fixed script of ``AIMessage`` objects or strings.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> m = ScriptedToolChatModel(replies=[AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}]), "done"])
    >>> m.invoke("hi").tool_calls[0]["name"], m.invoke("hi").content, m.invoke("again").content
    ('t', 'done', 'done')
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from retrievekit.langchain.reply_model import OneReplyChatModel

__all__ = ["ScriptedToolChatModel"]


class ScriptedToolChatModel(OneReplyChatModel):
    """Replies with ``replies`` in order (strings become plain answers); then repeats the last one forever.

    ``bind_tools`` returns ``self`` (recording the names in ``bound_tool_names``); every prompt received is kept in
    ``prompts``. Each repeated tool call gets a fresh id. Token usage is reported as ``usage_metadata``.
    ``disable_streaming=True`` so tool calls survive ``stream_mode="messages"``.

    Examples:
        >>> ScriptedToolChatModel(replies=["a", "b"]).invoke("x").content
        'a'
    """

    replies: list[Any] = Field(default_factory=list)
    position: int = 0
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tool_names: list[str] = Field(default_factory=list)
    disable_streaming: bool = True

    @property
    def _llm_type(self) -> str:
        return "retrievekit-scripted"

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Remember the tool names; return ``self``.

        Examples:
            >>> m = ScriptedToolChatModel(replies=["x"])
            >>> m.bind_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}]) is m
            True
        """
        self.bound_tool_names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> AIMessage:
        if not self.replies:
            raise ValueError("ScriptedToolChatModel has no replies")
        self.prompts.append(list(messages))
        item = self.replies[min(self.position, len(self.replies) - 1)]
        self.position += 1
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, str):
            msg = AIMessage(content=item)
        else:
            calls = [{**c, "id": c.get("id") or uuid.uuid4().hex[:8]} for c in item.tool_calls]
            if self.position > len(self.replies):
                calls = [{**c, "id": uuid.uuid4().hex[:8]} for c in calls]
            msg = AIMessage(content=item.content, tool_calls=calls, invalid_tool_calls=item.invalid_tool_calls)
        n_in = sum(len(m.text) for m in messages) // 4
        msg.usage_metadata = {"input_tokens": n_in, "output_tokens": 5, "total_tokens": n_in + 5}
        return msg
