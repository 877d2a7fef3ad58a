"""Adapter: any LlamaIndex ``LLM`` as a retrievekit :class:`~retrievekit.core.llm.protocol.ChatLLM`.

Works with every LlamaIndex LLM -- ``OpenAI``, ``OpenAILike`` pointed at an OpenAI-compatible server (vLLM,
llama.cpp server, LM Studio...), ``Ollama``, ``HuggingFaceLLM``, a ``CustomLLM`` -- by simply passing it. Limits,
timeouts, retries, typed errors and structured output are the served path's (:mod:`retrievekit.core.llm.served`);
this module only converts messages and reads replies.

Examples:
    >>> from llama_index.core.llms import MockLLM
    >>> from retrievekit.core.trace import Trace
    >>> llm = LlamaIndexChatLLM(MockLLM(max_tokens=3))
    >>> t = Trace()
    >>> isinstance(llm.complete("Hello", trace=t).text, str), t.llm_calls
    (True, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage as LIChatMessage
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.llms import LLM

from retrievekit.core.errors import MissingDependencyError
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.client import field_of, instance_of_optional, reply_completion, usage_pair
from retrievekit.core.llm.openai_wire import OpenAIWire
from retrievekit.core.llm.per_loop import PerLoop, shards_for
from retrievekit.core.llm.protocol import ChatMessage, Completion, as_messages
from retrievekit.core.llm.resolve import adapt_llm, register_llm_adapter
from retrievekit.core.llm.served import SendRequest, ServedChatLLM, check_transport
from retrievekit.core.llm.served_spec import ServedLLMSpec
from retrievekit.llama_index.settings import user_settings_llm

__all__ = ["LlamaIndexChatLLM", "as_chat_llm", "served_llm"]

_ROLE_MAP = {
    "system": MessageRole.SYSTEM,
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
    "tool": MessageRole.TOOL,
}


def _usage_from_response(response: Any) -> tuple[int | None, int | None]:
    """Prompt/completion token counts reported by the provider, when any."""
    raw = field_of(response, "raw")
    usage = field_of(raw, "usage") or field_of(raw, "usage_metadata")
    return (
        usage_pair(field_of(response, "additional_kwargs"), "prompt_tokens", "completion_tokens")
        or usage_pair(usage, "prompt_tokens", "completion_tokens")
        or usage_pair(usage, "input_tokens", "output_tokens")
        or usage_pair(raw, "prompt_eval_count", "eval_count")  # Ollama reports them at the top level
        or (None, None)
    )


def _openai_family(llm: Any) -> bool:
    """Whether ``llm`` is a ``llama_index.llms.openai.OpenAI`` (``OpenAILike``, ``AzureOpenAI`` and their kin)."""
    return instance_of_optional(llm, "llama_index.llms.openai", "OpenAI")


def _single_request_copy(llm: Any) -> Any:
    """A copy of an OpenAI-family LLM that sends each request once (no client or tenacity retries: retrievekit
    retries instead) and sets no ``max_tokens`` of its own (each call sends its own limit), with its async client
    built; others as they are."""
    if not _openai_family(llm):
        return llm
    copy = llm.model_copy(update={"max_retries": 0, "max_tokens": None})
    for private in ("_client", "_aclient"):  # rebuilt with max_retries=0
        if hasattr(copy, private):
            setattr(copy, private, None)
    _ = copy._get_aclient().chat.completions  # built here, not on the event loop: its first use imports ~1 s
    return copy


_NOT_CHAT_COMPLETIONS = ("o1", "o3", "o4", "gpt-5")  # LlamaIndex sends these max_completion_tokens instead


def _wire_for(llm: Any, slots: int) -> OpenAIWire | None:
    """The direct transport for a plain ``OpenAI`` / ``OpenAILike`` chat model (no client, API version, audio,
    logprobs or reasoning settings of its own that only the SDK sends), else None.

    Examples:
        >>> from llama_index.llms.openai_like import OpenAILike
        >>> _wire_for(OpenAILike(model="m", api_base="http://127.0.0.1:8080/v1", api_key="-", is_chat_model=True), 4).url
        'http://127.0.0.1:8080/v1/chat/completions'
        >>> _wire_for(OpenAILike(model="m", api_base="http://127.0.0.1:8080/v1", api_key="-"), 4) is None  # completions
        True
    """
    if type(llm).__name__ not in ("OpenAI", "OpenAILike") or not _openai_family(llm) or not llm.api_base:
        return None
    plain = not (llm.api_version or llm.modalities or llm.audio_config or llm.logprobs or llm.reasoning_effort)
    plain = plain and not getattr(getattr(llm, "callback_manager", None), "handlers", None)  # they see achat only
    if not plain or not llm.metadata.is_chat_model or str(llm.model).startswith(_NOT_CHAT_COMPLETIONS):
        return None
    key, extra = llm.api_key or "", dict(llm.additional_kwargs or {})
    return OpenAIWire(
        llm.api_base, llm.model, api_key=key, headers=llm.default_headers, extra_body=extra, max_connections=slots
    )


def _endpoint_of(llm: Any) -> str:
    model = getattr(llm, "model", None)
    base = getattr(llm, "api_base", None) or getattr(llm, "base_url", None)
    where = str(base) if base else type(llm).__name__
    return f"{where} (model {model})" if model else where


def _finish_reason(response: Any) -> str | None:
    choices = field_of(field_of(response, "raw"), "choices")
    if isinstance(choices, Sequence) and choices:
        reason = field_of(choices[0], "finish_reason")
        return str(reason) if reason is not None else None
    return None


class LlamaIndexChatLLM(ServedChatLLM):
    """Wrap a LlamaIndex ``LLM`` so retrievekit components can use it (``complete`` + ``complete_json``).

    Args:
        llm: any ``llama_index.core.llms.LLM``; when ``None``, ``llama_index.core.Settings.llm`` is used.
            An OpenAI-compatible server works by passing e.g.
            ``OpenAILike(api_base=..., model=..., api_key=..., is_chat_model=True)``.
        policy: timeout and retries of one request (:class:`~retrievekit.core.llm.call_policy.CallPolicy`); by
            default the LLM's own ``timeout`` and ``max_retries``. retrievekit does the retrying: an ``OpenAILike``
            is used through a copy that sends each request once.
        structured_output: how ``complete_json`` asks for JSON: ``"auto"`` (the server's JSON-schema mode for an
            ``OpenAI`` / ``OpenAILike`` chat model, else the schema in the prompt), ``"json_schema"``,
            ``"json_object"``, ``"prompt"`` (:mod:`retrievekit.core.llm.served`).
        max_concurrency: requests in flight at once through this adapter (ours: 4).
        transport: how awaited requests are sent: ``"auto"`` (straight to the server for a plain ``OpenAI`` /
            ``OpenAILike`` chat model without callback handlers of its own, :mod:`retrievekit.core.llm.openai_wire`: about 0.2 ms of CPU a request against
            several through the SDK; the model's own ``achat`` otherwise) or ``"framework"`` (always ``achat``, where
            LlamaIndex's instrumentation and callbacks see each call). Sync calls always use ``chat``.
        forward_generation_kwargs: deprecated and ignored: every call's ``max_tokens`` and ``temperature`` are
            always sent now (an LLM that refuses them per call gets none, and each call notes ``limit_not_sent``).

    Token counts come from the provider's usage report (``additional_kwargs``, ``raw.usage``, Ollama's counts);
    when there is none they are estimated as ``len(text) // 4`` and the trace records a ``"token_estimate"`` note.

    Examples:
        >>> from llama_index.core.llms import MockLLM
        >>> LlamaIndexChatLLM(MockLLM()).llm.__class__.__name__
        'MockLLM'
    """

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        policy: CallPolicy | None = None,
        structured_output: str = "auto",
        max_concurrency: int = 4,
        forward_generation_kwargs: bool | None = None,
        transport: str = "auto",
    ) -> None:
        check_transport(transport)
        if llm is None:
            from llama_index.core import Settings

            llm = Settings.llm
        super().__init__(
            policy=policy or CallPolicy.from_client(getattr(llm, "timeout", None), getattr(llm, "max_retries", None)),
            structured_output=structured_output,
            max_concurrency=max_concurrency,
            forward_generation_kwargs=forward_generation_kwargs,
        )
        model = _single_request_copy(llm)
        sdk = model._get_client() if _openai_family(llm) and hasattr(model, "_get_client") else None
        self.adopt_client(llm, endpoint=_endpoint_of(llm), model=model, openai=_openai_family(llm), sdk_client=sdk)
        self._loop_models: PerLoop[Any] = PerLoop(
            self._loop_model, _close_loop_model, shards=shards_for(self.max_concurrency) if self._openai else 1
        )
        self.transport = transport
        self.wire = _wire_for(llm, self.max_concurrency) if transport == "auto" else None

    def _loop_model(self) -> Any:
        """The copy of the model whose async client belongs to the running loop (an OpenAI-family model's client is
        bound to the loop it was first used on); other models are shared."""
        if not self._openai:
            return self._model
        copy = self._model.model_copy()
        copy._aclient = None
        return copy

    @staticmethod
    def to_llama_index_messages(prompt: str | Sequence[ChatMessage]) -> list[LIChatMessage]:
        """Convert a retrievekit prompt to LlamaIndex chat messages.

        Examples:
            >>> [m.role.value for m in LlamaIndexChatLLM.to_llama_index_messages("Hi")]
            ['user']
        """
        return [LIChatMessage(role=_ROLE_MAP[m.role], content=m.content) for m in as_messages(prompt)]

    def _supports_response_format(self) -> bool:
        # the completions endpoint (OpenAILike(is_chat_model=False)) takes no response_format
        return self._openai and bool(getattr(self.llm.metadata, "is_chat_model", False))

    def _send(self, request: SendRequest) -> Completion:
        """One ``llm.chat`` with the request's limits, timeout and ``response_format``.

        Examples:
            >>> from llama_index.core.llms import MockLLM
            >>> llm = LlamaIndexChatLLM(MockLLM(max_tokens=2))
            >>> llm._send(SendRequest([ChatMessage("user", "Hi")], 2, 0.0, 60.0)).completion_tokens >= 0
            True
        """
        messages = self.to_llama_index_messages(request.messages)
        kwargs = self.client_kwargs(request, per_request_timeout=self._openai)
        return _completion(self.call_client(lambda **kw: self._model.chat(messages, **kw), kwargs), messages)

    async def _asend(self, request: SendRequest) -> Completion:  # type: ignore[override]
        """One ``await llm.achat`` with the same arguments as :meth:`_send` (the path of requests made under an
        ``await``: :mod:`retrievekit.core.llm.bridge`).

        Examples:
            >>> import asyncio
            >>> from llama_index.core.llms import MockLLM
            >>> llm = LlamaIndexChatLLM(MockLLM(max_tokens=2))
            >>> asyncio.run(llm._asend(SendRequest([ChatMessage("user", "Hi")], 2, 0.0, 60.0))).completion_tokens >= 0
            True
        """
        messages = self.to_llama_index_messages(request.messages)
        kwargs = self.client_kwargs(request, per_request_timeout=self._openai)
        model = await self._loop_models.get()
        return _completion(await self.acall_client(lambda **kw: model.achat(messages, **kw), kwargs), messages)


async def _close_loop_model(model: Any) -> None:
    """Close the async client of a loop's copy of the model (at that loop's shutdown)."""
    client = getattr(model, "_aclient", None)
    if client is not None:
        await client.close()


def _completion(response: Any, messages: Sequence[LIChatMessage]) -> Completion:
    """A LlamaIndex ``ChatResponse`` as a :class:`~retrievekit.core.llm.protocol.Completion`."""
    text = response.message.content or ""
    prompt_texts = [m.content or "" for m in messages]
    return reply_completion(text, _usage_from_response(response), prompt_texts, _finish_reason(response))


_ADAPTER = register_llm_adapter(LLM, LlamaIndexChatLLM, "a LlamaIndex LLM")
"""How every ``llm=`` in retrievekit wraps a LlamaIndex LLM (:func:`~retrievekit.core.llm.resolve.resolve_llm`)."""


def as_chat_llm(llm: Any) -> Any:
    """The model a retrievekit method gets from a LlamaIndex user: the one ``llm=`` rule of every LlamaIndex edge.

    ``None`` is the LLM the user set in ``Settings.llm`` (wrapped), else stays ``None`` (the method's embedded default
    model: :mod:`retrievekit.llama_index.settings`); a retrievekit model -- a
    :class:`~retrievekit.core.llm.protocol.ChatLLM`, a :class:`~retrievekit.core.llm.protocol.ScoringLM` such as
    ``LocalLM`` or a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` -- is returned as is; a LlamaIndex
    ``LLM`` (``OpenAI``, ``Ollama``, a ``CustomLLM``...) is wrapped in :class:`LlamaIndexChatLLM`. Anything else,
    a model's name included (that is for :func:`~retrievekit.core.llm.resolve.resolve_llm`), raises :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> from llama_index.core.llms import MockLLM
        >>> as_chat_llm(MockLLM())
        LlamaIndexChatLLM(MockLLM)
        >>> as_chat_llm(None) is None
        True
        >>> as_chat_llm("qwen0.5b")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm must be a model object (a LlamaIndex LLM or a retrievekit ChatLLM/LocalLM), got str 'qwen0.5b'; a model's name is loaded by resolve_llm
    """
    if llm is None:
        llm = user_settings_llm()  # Settings.llm when the user set it
    return adapt_llm(llm, _ADAPTER)


def served_llm(spec: ServedLLMSpec) -> LlamaIndexChatLLM:
    """``--llm openai-like:MODEL@URL``: LlamaIndex's ``OpenAILike`` (a chat model) against that server, wrapped
    (entry point ``retrievekit.llms: openai-like``).

    Examples:
        >>> from retrievekit.core.llm.served_spec import parse_served_spec
        >>> served_llm(parse_served_spec("openai-like:smollm2@http://127.0.0.1:8080/v1")).endpoint
        'http://127.0.0.1:8080/v1 (model smollm2)'
    """
    try:
        from llama_index.llms.openai_like import OpenAILike
    except ImportError as e:
        raise MissingDependencyError(
            "llama-index-llms-openai-like", "pip install llama-index-llms-openai-like", str(e)
        ) from e
    llm = OpenAILike(
        model=spec.model, api_base=spec.base_url, api_key=spec.api_key, is_chat_model=True, **spec.client_limits()
    )
    return spec.adapted(LlamaIndexChatLLM, llm)
