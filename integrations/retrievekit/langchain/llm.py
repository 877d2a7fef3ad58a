"""Adapter: any LangChain chat model as a retrievekit :class:`~retrievekit.core.llm.protocol.ChatLLM`.

Works with every ``BaseChatModel`` -- ``ChatOpenAI`` (also pointed at an OpenAI-compatible server such as vLLM
via ``base_url=``), ``ChatOllama``, ``ChatAnthropic``, a fake model in tests -- by simply passing it.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> llm = LangChainChatLLM(FakeListChatModel(responses=['{"ok": true}']))
    >>> llm.complete_json("Is it ok?", {"type": "object"}).value
    {'ok': True}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, BaseLanguageModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.json_output import ChatLLMBase
from retrievekit.core.llm.protocol import ChatLLM, ChatMessage, Completion, RelevanceJudge, ScoringLM, as_messages
from retrievekit.core.llm.tokens import estimate_tokens
from retrievekit.core.trace import Trace

__all__ = ["LangChainChatLLM", "as_chat_llm"]


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _usage_from_message(message: Any) -> tuple[int | None, int | None]:
    """Token counts from ``usage_metadata`` (standard) or ``response_metadata['token_usage']`` (older providers)."""
    usage = getattr(message, "usage_metadata", None)
    if isinstance(usage, Mapping):
        p, c = _as_int(usage.get("input_tokens")), _as_int(usage.get("output_tokens"))
        if p is not None and c is not None:
            return p, c
    meta = getattr(message, "response_metadata", None) or {}
    token_usage = meta.get("token_usage") if isinstance(meta, Mapping) else None
    if isinstance(token_usage, Mapping):
        p, c = _as_int(token_usage.get("prompt_tokens")), _as_int(token_usage.get("completion_tokens"))
        if p is not None and c is not None:
            return p, c
    return None, None


class LangChainChatLLM(ChatLLMBase):
    """Wrap a LangChain ``BaseChatModel`` so retrievekit components can use it (``complete`` + ``complete_json``).

    Args:
        llm: any LangChain chat model. An OpenAI-compatible server works by passing
            ``ChatOpenAI(base_url=..., model=..., api_key=...)``.
        forward_generation_kwargs: pass ``max_tokens`` / ``temperature`` to ``invoke`` as keyword arguments
            (off by default: not every chat model accepts them per call; the model's own settings apply then).
        config: a LangChain ``RunnableConfig`` (callbacks, tags) passed to every ``invoke``.

    Token counts come from ``usage_metadata``; when the model reports none they are estimated as
    ``len(text) // 4`` and the trace records a ``"token_estimate"`` note.

    Examples:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from retrievekit.core.trace import Trace
        >>> t = Trace()
        >>> LangChainChatLLM(FakeListChatModel(responses=["hi there"])).complete("Hello", trace=t).text
        'hi there'
        >>> t.llm_calls, t.events[0].kind
        (1, 'token_estimate')
    """

    def __init__(
        self, llm: BaseChatModel, *, forward_generation_kwargs: bool = False, config: Mapping[str, Any] | None = None
    ) -> None:
        self.llm = llm
        self.forward_generation_kwargs = forward_generation_kwargs
        self.config = dict(config) if config is not None else None

    def __repr__(self) -> str:
        return f"LangChainChatLLM({type(self.llm).__name__})"

    @staticmethod
    def to_langchain_messages(prompt: str | Sequence[ChatMessage]) -> list[BaseMessage]:
        """Convert a retrievekit prompt to LangChain messages.

        Examples:
            >>> from retrievekit.core.llm.protocol import ChatMessage
            >>> [m.type for m in LangChainChatLLM.to_langchain_messages([ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")])]
            ['system', 'human']
        """
        out: list[BaseMessage] = []
        for m in as_messages(prompt):
            if m.role == "system":
                out.append(SystemMessage(content=m.content))
            elif m.role == "assistant":
                out.append(AIMessage(content=m.content))
            elif m.role == "tool":
                out.append(ToolMessage(content=m.content, tool_call_id="retrievekit"))
            else:
                out.append(HumanMessage(content=m.content))
        return out

    def complete(
        self,
        prompt: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        trace: Trace | None = None,
    ) -> Completion:
        """Call ``llm.invoke`` and return the reply text with token counts (recorded in ``trace``).

        Examples:
            >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
            >>> LangChainChatLLM(FakeListChatModel(responses=["ok"])).complete("Hi").text
            'ok'
        """
        messages = self.to_langchain_messages(prompt)
        kwargs: dict[str, Any] = {}
        if self.forward_generation_kwargs:
            kwargs = {"max_tokens": max_tokens, "temperature": temperature}
        response = self.llm.invoke(messages, config=self.config, **kwargs)  # type: ignore[arg-type]
        text = response.text if isinstance(response, BaseMessage) else str(response)
        prompt_tokens, completion_tokens = _usage_from_message(response)
        if prompt_tokens is None or completion_tokens is None:
            prompt_tokens = sum(estimate_tokens(m.text) for m in messages)
            completion_tokens = estimate_tokens(text)
            if trace is not None:
                trace.note(
                    "token_estimate", f"{type(self.llm).__name__} reported no token usage; estimated len(text)//4"
                )
        self._record(trace, prompt_tokens, completion_tokens)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def as_chat_llm(llm: Any) -> Any:
    """The model a retrievekit method gets from a LangChain user: the one ``llm=`` rule of every LangChain edge.

    ``None`` stays ``None`` (the method's default model); a retrievekit model -- a
    :class:`~retrievekit.core.llm.protocol.ChatLLM`, a :class:`~retrievekit.core.llm.protocol.ScoringLM` such as
    ``LocalLM`` or a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` -- is returned as is; a LangChain chat
    model (``ChatOpenAI``, ``ChatOllama``, a fake model...) or LLM is wrapped in :class:`LangChainChatLLM`. Anything
    else, a model's name included (that is ``llm_name=``), raises :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> as_chat_llm(FakeListChatModel(responses=["ok"])).complete("Hi").text
        'ok'
        >>> as_chat_llm(None) is None
        True
        >>> as_chat_llm(42)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm must be a model object (a LangChain chat model or a retrievekit ChatLLM/LocalLM), got int '42'; pass a registry name as llm_name=
    """
    if llm is None or isinstance(llm, LangChainChatLLM):
        return llm
    if isinstance(llm, BaseLanguageModel):
        return LangChainChatLLM(llm)
    if isinstance(llm, (ChatLLM, ScoringLM, RelevanceJudge)):
        return llm
    raise InvalidInputError(
        "llm must be a model object (a LangChain chat model or a retrievekit ChatLLM/LocalLM), got "
        f"{type(llm).__name__} {str(llm)[:40]!r}; pass a registry name as llm_name="
    )
