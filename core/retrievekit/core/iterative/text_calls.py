"""Tool calls a model wrote as text: for served models whose chat template or server has no tool calling.

Small served models (and servers that ignore ``tool_choice``) often answer a tool-calling turn in plain text:
``chunk_search("aspirin dose")``, ``{"name": "chunk_search", "arguments": {"query": "..."}}``, llama.cpp's generic
``{"tool_call": {...}}`` or a line ``Search: ...``. :func:`parse_text_tool_call` turns such a reply into the call it
names, so the agent searches instead of answering from an empty working set. Only the agent's own tools are
recognised; anything else is left as text.

Examples:
    >>> parse_text_tool_call('chunk_search("aspirin dose")')
    ('chunk_search', {'query': 'aspirin dose'})
    >>> parse_text_tool_call('{"tool_call": {"name": "chunk_search", "arguments": {"query": "Hamlet author"}}}')
    ('chunk_search', {'query': 'Hamlet author'})
    >>> parse_text_tool_call("Shakespeare wrote Hamlet.") is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.iterative.arguments import TOOL_NAMES
from retrievekit.core.llm.json_output import parse_json_lenient

__all__ = ["parse_text_tool_call"]

_CALL_RE = re.compile(r"\b(chunk_search|chunk_delete)\s*\(\s*(?:query\s*=\s*|ids\s*=\s*)?(.*?)\s*\)", re.DOTALL)
_LINE_RE = re.compile(r"^\s*(?:search|query|chunk_search)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_ARG_KEYS = ("arguments", "args", "parameters", "input")


def _strip_quotes(text: str) -> str:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1].strip()
    return t


def _from_json(value: Any, tools: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(value, Mapping):
        return None
    inner = value.get("tool_call") or value.get("function")
    if isinstance(inner, Mapping):
        return _from_json(inner, tools)
    name = value.get("name") or value.get("tool")
    if name not in tools:
        return None
    args = next((value[k] for k in _ARG_KEYS if isinstance(value.get(k), Mapping)), None)
    if args is None and isinstance(value.get("query"), str):
        args = {"query": value["query"]}
    return (str(name), dict(args)) if isinstance(args, Mapping) else None


def _from_call(name: str, body: str) -> tuple[str, dict[str, Any]] | None:
    if name == "chunk_search":
        query = _strip_quotes(body)
        return (name, {"query": query}) if query else None
    try:
        ids = parse_json_lenient(body).value
    except LLMOutputError:
        return None
    if isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids):
        return name, {"ids": ids}
    return None


def parse_text_tool_call(text: str, tools: Sequence[str] = TOOL_NAMES) -> tuple[str, dict[str, Any]] | None:
    """The agent tool call ``text`` names, as ``(name, arguments)``, or None when it names none.

    Recognised, in this order: a JSON object naming one of ``tools`` (``{"name", "arguments"}``, ``{"tool_call":
    ...}``, ``{"function": ...}``); a call written as code (``chunk_search("q")``, ``chunk_search(query="q")``,
    ``chunk_delete(["id"])``); a line ``Search: q`` (when ``chunk_search`` is among ``tools``). The arguments are
    not validated here (the tool node does that).

    Examples:
        >>> parse_text_tool_call("I will call chunk_search(query='vitamin D bones') now.")
        ('chunk_search', {'query': 'vitamin D bones'})
        >>> parse_text_tool_call('chunk_delete(["d1", "d2"])')
        ('chunk_delete', {'ids': ['d1', 'd2']})
        >>> parse_text_tool_call("Search: capital of Peru")
        ('chunk_search', {'query': 'capital of Peru'})
        >>> parse_text_tool_call('chunk_delete(["d1"])', tools=("chunk_search",)) is None
        True
    """
    if not isinstance(text, str) or not text.strip():
        return None
    if "{" in text:
        try:
            found = _from_json(parse_json_lenient(text).value, tools)
        except LLMOutputError:
            found = None
        if found is not None:
            return found
    for m in _CALL_RE.finditer(text):
        if m.group(1) in tools:
            call = _from_call(m.group(1), m.group(2))
            if call is not None:
                return call
    if "chunk_search" in tools:
        line = _LINE_RE.search(text)
        if line is not None and _strip_quotes(line.group(1)):
            return "chunk_search", {"query": _strip_quotes(line.group(1))}
    return None
