"""What the iterative agent reads from a chat model's reply: token usage, reported events, a tool call written as
text, and the first turn's forced search. Pure functions over langchain-core messages.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> usage_of(AIMessage("red"), [HumanMessage("What colour are apples?")])
    (5, 1, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from retrievekit.core.iterative.state import trace_event
from retrievekit.core.iterative.text_calls import parse_text_tool_call
from retrievekit.core.llm.tokens import estimate_tokens

__all__ = ["add_usage", "call_from_text", "forced_search", "reply_events", "usage_of"]


def usage_of(msg: BaseMessage, prompt: Sequence[BaseMessage]) -> tuple[int, int, bool]:
    """``(prompt tokens, completion tokens, estimated)``: the reply's ``usage_metadata``, else estimates.

    Examples:
        >>> m = AIMessage("x", usage_metadata={"input_tokens": 7, "output_tokens": 2, "total_tokens": 9})
        >>> usage_of(m, [])
        (7, 2, False)
    """
    usage = getattr(msg, "usage_metadata", None) or {}
    p, c = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(p, int) and isinstance(c, int):
        return p, c, False
    return sum(estimate_tokens(m.text) for m in prompt), estimate_tokens(msg.text), True


def add_usage(usage: dict[str, int] | None, p: int, c: int) -> dict[str, int]:
    """``usage`` plus one LLM call of ``p`` prompt and ``c`` completion tokens (a new dict).

    Examples:
        >>> add_usage({"llm_calls": 1, "prompt_tokens": 5, "completion_tokens": 1}, 3, 2)
        {'llm_calls': 2, 'prompt_tokens': 8, 'completion_tokens': 3}
    """
    u = dict(usage or {})
    u["llm_calls"] = u.get("llm_calls", 0) + 1
    u["prompt_tokens"] = u.get("prompt_tokens", 0) + p
    u["completion_tokens"] = u.get("completion_tokens", 0) + c
    return u


def call_from_text(reply: AIMessage, tools: Sequence[str], turn: int) -> tuple[AIMessage, list[dict[str, Any]]]:
    """A reply without tool calls whose text names one (:func:`parse_text_tool_call`) becomes that call.

    Examples:
        >>> reply, events = call_from_text(AIMessage("I know it: red."), ["chunk_search"], 1)
        >>> reply.tool_calls, events
        ([], [])
    """
    found = parse_text_tool_call(reply.text, tools)
    if found is None:
        return reply, []
    name, args = found
    call = {"name": name, "args": args, "id": f"text_call_{turn}", "type": "tool_call"}
    msg = f"the model wrote its {name} call as text; parsed it into a tool call"
    return AIMessage(content=reply.content, tool_calls=[call]), [trace_event("text_tool_call", msg, turn=turn)]


def forced_search(question: str, turn: int) -> tuple[AIMessage, list[dict[str, Any]]]:
    """The first turn's search when the model answered without searching: the question itself.

    Examples:
        >>> msg, events = forced_search("Why?", 1)
        >>> msg.tool_calls[0]["args"], events[0]["kind"]
        ({'query': 'Why?'}, 'forced_search')
    """
    call = {"name": "chunk_search", "args": {"query": question}, "id": f"forced_search_{turn}", "type": "tool_call"}
    msg = "the model answered turn 1 without searching; searched the question (the agent always searches first)"
    return AIMessage(content="", tool_calls=[call]), [trace_event("forced_search", msg, turn=turn)]


def reply_events(reply: AIMessage, turn: int, estimated: bool) -> list[dict[str, Any]]:
    """Events the chat model reported in its reply's metadata (e.g. a local model's repairs), and estimates.

    Examples:
        >>> [e["kind"] for e in reply_events(AIMessage("x"), 1, estimated=True)]
        ['token_estimate']
    """
    meta = reply.response_metadata or {}
    events = [
        trace_event(str(ev.get("kind", "llm_event")), str(ev.get("message", "")), turn=turn)
        for ev in meta.get("retrievekit_events") or []
    ]
    if meta.get("retrievekit_error"):
        events.append(trace_event("invalid_tool_call", str(meta["retrievekit_error"]), turn=turn))
    if estimated:
        events.append(
            trace_event("token_estimate", "the chat model reported no token usage; estimated len//4", turn=turn)
        )
    return events
