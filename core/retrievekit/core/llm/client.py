"""What the framework adapters over a client (LangChain's, LlamaIndex's) share, written once.

An adapter (``retrievekit.langchain.LangChainChatLLM``, ``retrievekit.llama_index.LlamaIndexChatLLM``) converts
messages and reads its framework's reply; the rest of its reply handling is here (how a framework's model becomes
an adapter is :func:`~retrievekit.core.llm.resolve.register_llm_adapter`):

1. :func:`usage_count` -- a token count read from a provider's usage report, or ``None``;
2. :func:`reply_completion` -- the reply as a :class:`~retrievekit.core.llm.protocol.Completion`, with the
   provider's counts or, when it reports none, an estimate (flagged ``usage_estimated``);

Examples:
    >>> reply_completion("four words long reply", (None, None), ["a prompt of some length"], "stop").usage_estimated
    True
    >>> usage_count("12"), usage_count(True), usage_count(None)
    (12, None, None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.tokens import estimate_tokens

__all__ = ["field_of", "instance_of_optional", "reply_completion", "usage_count", "usage_pair"]


def instance_of_optional(obj: Any, module: str, name: str) -> bool:
    """Whether ``obj`` is an instance of ``module.name``, a class from an optional package (``False`` when that
    package is not installed, so nothing is imported that the caller did not already have).

    Examples:
        >>> instance_of_optional({}, "collections", "OrderedDict"), instance_of_optional({}, "no_such_package", "X")
        (False, False)
    """
    import importlib

    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return isinstance(obj, cls)


def usage_count(value: Any) -> int | None:
    """A token count from a usage report (an int or a numeric string), else ``None`` (missing, a bool, garbage).

    Examples:
        >>> usage_count(7), usage_count("x")
        (7, None)
    """
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def field_of(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` otherwise, ``None`` when missing (provider replies mix both).

    Examples:
        >>> field_of({"a": 1}, "a"), field_of(None, "a"), field_of(3, "real")
        (1, None, 3)
    """
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def usage_pair(source: Any, prompt_key: str, completion_key: str) -> tuple[int, int] | None:
    """``(prompt, completion)`` token counts read from ``source`` under the two keys, or ``None`` unless both are
    there (so a caller tries the places a provider may report them, in order, with ``or``).

    Examples:
        >>> usage_pair({"input_tokens": 9, "output_tokens": 2}, "input_tokens", "output_tokens")
        (9, 2)
        >>> usage_pair({"prompt_tokens": 9}, "prompt_tokens", "completion_tokens") is None
        True
    """
    p, c = usage_count(field_of(source, prompt_key)), usage_count(field_of(source, completion_key))
    return (p, c) if p is not None and c is not None else None


def reply_completion(
    text: str, usage: tuple[int | None, int | None], prompt_texts: Sequence[str], finish_reason: Any
) -> Completion:
    """The reply as a completion: the provider's ``(prompt, completion)`` token counts, or, when either is missing,
    ``len(text) // 4`` estimates of both (``usage_estimated=True``, which the trace notes as ``token_estimate``).

    Examples:
        >>> c = reply_completion("ok", (12, 1), ["Hi"], None)
        >>> c.prompt_tokens, c.completion_tokens, c.usage_estimated, c.finish_reason
        (12, 1, False, None)
    """
    prompt_tokens, completion_tokens = usage
    estimated = prompt_tokens is None or completion_tokens is None
    if prompt_tokens is None or completion_tokens is None:
        prompt_tokens = sum(estimate_tokens(t or "") for t in prompt_texts)
        completion_tokens = estimate_tokens(text)
    return Completion(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        finish_reason=str(finish_reason) if finish_reason is not None else None,
        usage_estimated=estimated,
    )
