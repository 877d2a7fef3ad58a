"""Adapter: any LlamaIndex ``LLM`` as a retrievekit :class:`~retrievekit.core.llm.protocol.ChatLLM`.

Works with every LlamaIndex LLM -- ``OpenAI``, ``OpenAILike`` pointed at an OpenAI-compatible server (vLLM,
llama.cpp server, LM Studio...), ``Ollama``, ``HuggingFaceLLM``, a ``CustomLLM`` -- by simply passing it.

Examples:
    >>> from llama_index.core.llms import MockLLM
    >>> from retrievekit.core.trace import Trace
    >>> llm = LlamaIndexChatLLM(MockLLM(max_tokens=3))
    >>> t = Trace()
    >>> isinstance(llm.complete("Hello", trace=t).text, str), t.llm_calls
    (True, 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.llms import LLM

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.json_output import ChatLLMBase
from retrievekit.core.llm.protocol import ChatLLM, ChatMessage, Completion, RelevanceJudge, ScoringLM, as_messages
from retrievekit.core.llm.tokens import estimate_tokens
from retrievekit.core.trace import Trace

__all__ = ["LlamaIndexChatLLM", "as_chat_llm"]

_ROLE_MAP = {
    "system": MessageRole.SYSTEM,
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
    "tool": MessageRole.TOOL,
}


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _usage_from_response(response: Any) -> tuple[int | None, int | None]:
    """Prompt/completion token counts reported by the provider, when any."""
    extra = _get(response, "additional_kwargs") or {}
    p, c = _as_int(_get(extra, "prompt_tokens")), _as_int(_get(extra, "completion_tokens"))
    if p is not None and c is not None:
        return p, c
    raw = _get(response, "raw")
    usage = _get(raw, "usage") or _get(raw, "usage_metadata")
    for pk, ck in (("prompt_tokens", "completion_tokens"), ("input_tokens", "output_tokens")):
        p, c = _as_int(_get(usage, pk)), _as_int(_get(usage, ck))
        if p is not None and c is not None:
            return p, c
    # Ollama reports its counts at the top level of the raw reply.
    p, c = _as_int(_get(raw, "prompt_eval_count")), _as_int(_get(raw, "eval_count"))
    if p is not None and c is not None:
        return p, c
    return None, None


class LlamaIndexChatLLM(ChatLLMBase):
    """Wrap a LlamaIndex ``LLM`` so retrievekit components can use it (``complete`` + ``complete_json``).

    Args:
        llm: any ``llama_index.core.llms.LLM``; when ``None``, ``llama_index.core.Settings.llm`` is used.
            An OpenAI-compatible server works by passing e.g. ``OpenAILike(api_base=..., model=...)``.
        forward_generation_kwargs: pass ``max_tokens`` / ``temperature`` to ``llm.chat`` as keyword arguments.
            Off by default because not every LlamaIndex LLM accepts them per call; the wrapped LLM's own
            settings apply then.

    Token counts come from the provider's usage report (``additional_kwargs``, ``raw.usage``, Ollama's counts);
    when there is none they are estimated as ``len(text) // 4`` and the trace records a ``"token_estimate"`` note.

    Examples:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexChatLLM(MockLLM()).llm.__class__.__name__
        'MockLLM'
    """

    def __init__(self, llm: LLM | None = None, *, forward_generation_kwargs: bool = False) -> None:
        if llm is None:
            from llama_index.core import Settings

            llm = Settings.llm
        self.llm = llm
        self.forward_generation_kwargs = forward_generation_kwargs

    def __repr__(self) -> str:
        return f"LlamaIndexChatLLM({type(self.llm).__name__})"

    @staticmethod
    def to_llama_index_messages(prompt: str | Sequence[ChatMessage]) -> list[LIChatMessage]:
        """Convert a retrievekit prompt to LlamaIndex chat messages.

        Examples:
            >>> [m.role.value for m in LlamaIndexChatLLM.to_llama_index_messages("Hi")]
            ['user']
        """
        return [LIChatMessage(role=_ROLE_MAP[m.role], content=m.content) for m in as_messages(prompt)]

    def complete(
        self,
        prompt: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        trace: Trace | None = None,
    ) -> Completion:
        """Call ``llm.chat`` and return the reply text with token counts (recorded in ``trace``).

        Examples:
            >>> from llama_index.core.llms import MockLLM
            >>> LlamaIndexChatLLM(MockLLM(max_tokens=2)).complete("Hi").completion_tokens >= 0
            True
        """
        messages = self.to_llama_index_messages(prompt)
        kwargs: dict[str, Any] = {}
        if self.forward_generation_kwargs:
            kwargs = {"max_tokens": max_tokens, "temperature": temperature}
        response = self.llm.chat(messages, **kwargs)
        text = response.message.content or ""
        prompt_tokens, completion_tokens = _usage_from_response(response)
        if prompt_tokens is None or completion_tokens is None:
            prompt_tokens = sum(estimate_tokens(m.content or "") for m in messages)
            completion_tokens = estimate_tokens(text)
            if trace is not None:
                trace.note(
                    "token_estimate", f"{type(self.llm).__name__} reported no token usage; estimated len(text)//4"
                )
        self._record(trace, prompt_tokens, completion_tokens)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def as_chat_llm(llm: Any) -> Any:
    """The model a retrievekit method gets from a LlamaIndex user: the one ``llm=`` rule of every LlamaIndex edge.

    ``None`` stays ``None`` (the method's default model); a retrievekit model -- a
    :class:`~retrievekit.core.llm.protocol.ChatLLM`, a :class:`~retrievekit.core.llm.protocol.ScoringLM` such as
    ``LocalLM`` or a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` -- is returned as is; a LlamaIndex
    ``LLM`` (``OpenAI``, ``Ollama``, a ``CustomLLM``...) is wrapped in :class:`LlamaIndexChatLLM`. Anything else,
    a model's name included (that is ``llm_name=``), raises :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> from llama_index.core.llms import MockLLM
        >>> as_chat_llm(MockLLM())
        LlamaIndexChatLLM(MockLLM)
        >>> as_chat_llm(None) is None
        True
        >>> as_chat_llm("smollm2")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm must be a model object (a LlamaIndex LLM or a retrievekit ChatLLM/LocalLM), got str 'smollm2'; pass a registry name as llm_name=
    """
    if llm is None or isinstance(llm, LlamaIndexChatLLM):
        return llm
    if isinstance(llm, LLM):
        return LlamaIndexChatLLM(llm)
    if isinstance(llm, (ChatLLM, ScoringLM, RelevanceJudge)):
        return llm
    raise InvalidInputError(
        "llm must be a model object (a LlamaIndex LLM or a retrievekit ChatLLM/LocalLM), got "
        f"{type(llm).__name__} {str(llm)[:40]!r}; pass a registry name as llm_name="
    )
