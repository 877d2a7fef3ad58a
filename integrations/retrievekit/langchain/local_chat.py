"""A LangChain chat model over the local transformers backend that always emits *valid* tool calls.

Small local models (SmolLM2-135M, Qwen2.5-0.5B) do not produce native tool calls. :class:`LocalToolChatModel`
turns every bound tool into one branch of a JSON schema -- ``{"tool": "<name>", <the tool's arguments>}`` -- adds a
``{"tool": "final_answer", "answer": "..."}`` branch, and generates under that schema with Outlines
(:meth:`~retrievekit.core.llm.local.LocalLM.complete_json`). The reply is therefore always one well-formed call of a
bound tool (or a final answer), which becomes an ``AIMessage`` with ``tool_calls`` (or with ``content``).
Strings and arrays get length caps so a call cannot run past ``max_tokens``.

Without bound tools it is a plain chat model (greedy ``LocalLM.complete``).

Examples:
    >>> from langchain_core.tools import tool
    >>> from retrievekit.core.llm.base import ChatLLMBase
    >>> from retrievekit.core.llm.protocol import Completion
    >>> @tool
    ... def lookup(word: str) -> str:
    ...     '''Look a word up.'''
    ...     return word
    >>> class Scripted(ChatLLMBase):  # a stand-in for LocalLM.load(DEFAULT_MODEL), whose output the schema constrains
    ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
    ...         return Completion('{"tool": "lookup", "word": "Rome"}')
    >>> msg = LocalToolChatModel(llm=Scripted()).bind_tools([lookup]).invoke("Who founded Rome?")
    >>> msg.tool_calls[0]["name"], msg.tool_calls[0]["args"]
    ('lookup', {'word': 'Rome'})
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.llm.protocol import ChatMessage
from retrievekit.core.trace import Trace
from retrievekit.langchain.reply_model import OneReplyChatModel

__all__ = ["FINAL_ANSWER", "LocalToolChatModel", "tool_call_schema"]

FINAL_ANSWER = "final_answer"
"""Name of the schema branch that carries a final answer instead of a tool call."""


def _tighten(schema: dict[str, Any], *, max_string: int, max_items: int) -> dict[str, Any]:
    """Copy of a JSON schema with caps on unbounded strings/arrays and no extra properties (bounded output)."""
    s = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        # descriptions/titles go into the prompt preamble, not into the grammar (small models copy them verbatim)
        node.pop("description", None)
        node.pop("title", None)
        t = node.get("type")
        if t == "string" and "enum" not in node and "const" not in node:
            node["maxLength"] = min(int(node.get("maxLength", max_string)), max_string)
        if t == "array":
            node["maxItems"] = min(int(node.get("maxItems", max_items)), max_items)
        if t == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        for key in ("properties", "$defs", "definitions"):
            for sub in (node.get(key) or {}).values():
                walk(sub)
        for key in ("items", "additionalProperties"):
            walk(node.get(key))
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key) or []:
                walk(sub)

    walk(s)
    return s


def tool_call_schema(
    tools: Sequence[dict[str, Any]],
    *,
    allow_final_answer: bool = True,
    max_string: int = 80,
    max_items: int = 5,
    answer_max_length: int = 100,
) -> dict[str, Any]:
    """The JSON schema for "one call of one of ``tools`` (OpenAI tool dicts), or a final answer".

    Each branch is flat: ``{"tool": {"const": name}, **parameters}``. A single branch is returned as is
    (no ``anyOf``).

    Examples:
        >>> t = {"type": "function", "function": {"name": "chunk_search", "parameters": {
        ...     "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
        >>> s = tool_call_schema([t])
        >>> [b["properties"]["tool"]["const"] for b in s["anyOf"]]
        ['chunk_search', 'final_answer']
        >>> s["anyOf"][0]["properties"]["query"]["maxLength"]
        80
    """
    branches: list[dict[str, Any]] = []
    for t in tools:
        fn = t.get("function", t)
        name = str(fn["name"])
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        props = dict(params.get("properties") or {})
        if "tool" in props:
            raise ValueError(f"tool {name!r} has a parameter named 'tool', which the call schema reserves")
        branch: dict[str, Any] = {
            "type": "object",
            "properties": {"tool": {"const": name}, **props},
            "required": ["tool", *[r for r in params.get("required") or [] if r != "tool"]],
        }
        if params.get("$defs"):
            branch["$defs"] = params["$defs"]
        branches.append(_tighten(branch, max_string=max_string, max_items=max_items))
    if allow_final_answer:
        branches.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"const": FINAL_ANSWER},
                    "answer": {"type": "string", "minLength": 1, "maxLength": answer_max_length},
                },
                "required": ["tool", "answer"],
                "additionalProperties": False,
            }
        )
    if not branches:
        raise ValueError("no tools bound and final answers disallowed: nothing the model could reply")
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _content_text(message: BaseMessage) -> str:
    text = message.text if hasattr(message, "text") else str(message.content)
    return text if isinstance(text, str) else str(text)


class LocalToolChatModel(OneReplyChatModel):
    """LangChain chat model over a retrievekit ``LocalLM`` with schema-constrained tool calling.

    Args:
        llm: a :class:`~retrievekit.core.llm.local.LocalLM` (or anything with ``complete``/``complete_json``).
        max_tokens: generation cap for a tool call, raised to what the capped schema can need (see
            :meth:`call_token_cap`); generation stops at the end of the JSON anyway.
        answer_max_tokens: generation cap for a plain (no tools bound) reply.
        max_string: maximum length of a string argument; ``max_items``: of an array argument.
        answer_max_length: maximum length of a ``final_answer``.

    ``bind_tools(tools, tool_choice=...)`` returns a copy bound to those tools; ``tool_choice`` ``"any"``,
    ``"required"`` or a tool name removes the final-answer branch (a tool call is forced). Every reply carries
    ``usage_metadata``; fallbacks inside ``LocalLM`` (e.g. Outlines unavailable) are listed in
    ``response_metadata["retrievekit_events"]``. If even the fallback fails, the reply is an empty ``AIMessage``
    with ``response_metadata["retrievekit_error"]`` -- never an exception inside a graph.

    Examples:
        >>> from retrievekit.core.llm import LocalLM
        >>> LocalToolChatModel(llm=LocalLM.load(DEFAULT_MODEL)).invoke("What is the capital of France?").content  # doctest: +SKIP
        'The capital of France is Paris.'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Any = Field(exclude=True)
    max_tokens: int = 96
    answer_max_tokens: int = 32
    max_string: int = 80
    max_items: int = 5
    answer_max_length: int = 100
    bound_tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: str | None = None

    @property
    def _llm_type(self) -> str:
        return "retrievekit-local-tool-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"llm": str(getattr(self.llm, "name", type(self.llm).__name__)), "tools": self._tool_names()}

    def _tool_names(self) -> list[str]:
        return [str(t.get("function", t).get("name")) for t in self.bound_tools]

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a copy of this model bound to ``tools`` (LangChain tools, pydantic models, functions, dicts).

        Examples:
            >>> from langchain_core.tools import tool
            >>> @tool
            ... def lookup(word: str) -> str:
            ...     '''Look a word up.'''
            ...     return word
            >>> LocalToolChatModel(llm=None).bind_tools([lookup]).bound_tools[0]["function"]["name"]
            'lookup'
        """
        converted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice in ("auto", "none", None):
            choice = None if tool_choice != "none" else "none"
        elif tool_choice in ("any", "required"):
            choice = "any"
        elif isinstance(tool_choice, str):
            if tool_choice not in [c["function"]["name"] for c in converted]:
                raise ValueError(f"tool_choice {tool_choice!r} is not one of the bound tools")
            choice = tool_choice
        else:
            raise ValueError(f"unsupported tool_choice {tool_choice!r}")
        return self.model_copy(update={"bound_tools": converted, "tool_choice": choice})

    def call_schema(self) -> dict[str, Any]:
        """The JSON schema replies are constrained to, given the bound tools and ``tool_choice``.

        Examples:
            >>> "anyOf" in LocalToolChatModel(llm=None).call_schema()
            False
        """
        tools = self.bound_tools
        if self.tool_choice not in (None, "any", "none"):
            tools = [t for t in tools if t["function"]["name"] == self.tool_choice]
        return tool_call_schema(
            tools,
            allow_final_answer=self.tool_choice is None,
            max_string=self.max_string,
            max_items=self.max_items,
            answer_max_length=self.answer_max_length,
        )

    def call_token_cap(self, requested: int | None = None) -> int:
        """Generation cap for one call: ``max_tokens``, raised to what the schema's longest valid reply can need.

        Every token is at least one character, so ``answer_max_length`` / ``max_string * max_items`` characters plus
        JSON syntax bound a complete reply; a lower cap could cut a call off (and force the slow repair fallback).

        Examples:
            >>> LocalToolChatModel(llm=None, max_tokens=64).call_token_cap()
            448
        """
        needed = 48 + max(self.answer_max_length, self.max_string * self.max_items)
        return max(int(requested if requested is not None else self.max_tokens), needed)

    def _tools_preamble(self) -> str:
        lines = ["Reply with one JSON object: a tool call or the final answer. Tools:"]
        for t in self.bound_tools:
            fn = t["function"]
            args = ", ".join((fn.get("parameters") or {}).get("properties") or {})
            lines.append(f"- {fn['name']}({args}): {fn.get('description', '')}")
        if self.tool_choice is None:
            lines.append(f"- {FINAL_ANSWER}(answer): the final answer, a few words.")
        return "\n".join(lines)

    def _to_chat(self, messages: Sequence[BaseMessage], *, with_tools: bool) -> list[ChatMessage]:
        out: list[ChatMessage] = []
        for m in messages:
            if m.type == "system":
                out.append(ChatMessage("system", _content_text(m)))
            elif m.type == "ai":
                calls = getattr(m, "tool_calls", None) or []
                if calls:
                    text = " ".join(json.dumps({"tool": c["name"], **c["args"]}, ensure_ascii=False) for c in calls)
                else:
                    text = _content_text(m)
                out.append(ChatMessage("assistant", text))
            elif isinstance(m, ToolMessage) or m.type == "tool":
                out.append(ChatMessage("user", f"Tool result: {_content_text(m)}"))
            else:
                out.append(ChatMessage("user", _content_text(m)))
        if with_tools:
            preamble = self._tools_preamble()
            if out and out[0].role == "system":
                out[0] = ChatMessage("system", out[0].content + "\n\n" + preamble)
            else:
                out.insert(0, ChatMessage("system", preamble))
        if not out:
            out.append(ChatMessage("user", ""))
        return out

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> AIMessage:
        trace = Trace()
        with_tools = bool(self.bound_tools) and self.tool_choice != "none"
        prompt = self._to_chat(messages, with_tools=with_tools)
        meta: dict[str, Any] = {"model": self._identifying_params["llm"]}
        if not with_tools:
            completion = self.llm.complete(prompt, max_tokens=int(kwargs.get("max_tokens", self.answer_max_tokens)))
            trace.record_llm_call(completion.prompt_tokens, completion.completion_tokens)
            message = AIMessage(content=completion.text)
        else:
            try:
                result = self.llm.complete_json(
                    prompt, self.call_schema(), max_tokens=self.call_token_cap(kwargs.get("max_tokens")), trace=trace
                )
                value = dict(result.value)
                name = str(value.pop("tool"))
                meta["raw"] = result.raw
                if name == FINAL_ANSWER:
                    message = AIMessage(content=str(value.get("answer", "")))
                else:
                    call = {"name": name, "args": value, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
                    message = AIMessage(content="", tool_calls=[call])
            except LLMOutputError as e:
                meta["retrievekit_error"] = f"no valid tool call: {e}"
                message = AIMessage(content="")
        if trace.events:
            meta["retrievekit_events"] = [{"kind": ev.kind, "message": ev.message} for ev in trace.events]
        message.response_metadata = meta
        message.usage_metadata = {
            "input_tokens": trace.prompt_tokens,
            "output_tokens": trace.completion_tokens,
            "total_tokens": trace.prompt_tokens + trace.completion_tokens,
        }
        return message
