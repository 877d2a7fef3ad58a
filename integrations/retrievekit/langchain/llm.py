"""Adapter: any LangChain chat model as a retrievekit :class:`~retrievekit.core.llm.protocol.ChatLLM`.

Works with every ``BaseChatModel`` -- ``ChatOpenAI`` (also pointed at an OpenAI-compatible server such as vLLM
via ``base_url=``), ``ChatOllama``, ``ChatAnthropic``, a fake model in tests -- by simply passing it. Limits,
timeouts, retries, typed errors and structured output are the served path's (:mod:`retrievekit.core.llm.served`);
this module only converts messages and reads replies.

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

from retrievekit.core.errors import MissingDependencyError
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.client import field_of, instance_of_optional, reply_completion, usage_pair
from retrievekit.core.llm.openai_wire import OpenAIWire
from retrievekit.core.llm.per_loop import PerLoop, shards_for
from retrievekit.core.llm.protocol import ChatMessage, Completion, as_messages
from retrievekit.core.llm.resolve import adapt_llm, register_llm_adapter
from retrievekit.core.llm.served import SendRequest, ServedChatLLM, check_transport
from retrievekit.core.llm.served_spec import ServedLLMSpec

__all__ = ["LangChainChatLLM", "as_chat_llm", "served_llm"]


def _usage_from_message(message: Any) -> tuple[int | None, int | None]:
    """Token counts from ``usage_metadata`` (standard) or ``response_metadata['token_usage']`` (older providers)."""
    token_usage = field_of(getattr(message, "response_metadata", None), "token_usage")
    return (
        usage_pair(getattr(message, "usage_metadata", None), "input_tokens", "output_tokens")
        or usage_pair(token_usage, "prompt_tokens", "completion_tokens")
        or (None, None)
    )


def _openai_family(llm: Any) -> bool:
    """Whether ``llm`` is a ``langchain_openai`` chat model (``ChatOpenAI``, ``AzureChatOpenAI`` and their kin)."""
    return instance_of_optional(llm, "langchain_openai.chat_models.base", "BaseChatOpenAI")


def _single_request_copy(llm: Any) -> Any:
    """A copy of an OpenAI-family model whose client sends each request once (retrievekit retries instead); other
    models are used as they are."""
    root, root_async = getattr(llm, "root_client", None), getattr(llm, "root_async_client", None)
    if not _openai_family(llm) or root is None:
        return llm
    update: dict[str, Any] = {"max_retries": 0, "root_client": root.with_options(max_retries=0)}
    update["client"] = update["root_client"].chat.completions
    if root_async is not None:
        update["root_async_client"] = root_async.with_options(max_retries=0)
        update["async_client"] = update["root_async_client"].chat.completions
    return llm.model_copy(update=update)


def _cut_reply(error: BaseException) -> Completion | None:
    """The reply inside the OpenAI SDK's ``LengthFinishReasonError`` (a ``response_format`` reply cut at
    ``max_tokens``), as a ``finish_reason="length"`` completion; None for any other error."""
    if type(error).__name__ != "LengthFinishReasonError":
        return None
    done = getattr(error, "completion", None)
    choices = getattr(done, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    usage = getattr(done, "usage", None)
    return Completion(
        text=str(getattr(message, "content", "") or ""),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        finish_reason="length",
    )


_SDK_ONLY = ("http_async_client", "openai_proxy", "default_query", "logprobs", "stop", "reasoning", "reasoning_effort")
_SDK_ONLY += ("use_responses_api", "disabled_params", "include", "service_tier", "verbosity", "logit_bias")
_SDK_ONLY += ("callbacks",)  # the model's own callbacks see its calls only through ainvoke
_BODY_FIELDS = ("top_p", "frequency_penalty", "presence_penalty", "seed")


def _wire_for(llm: Any, slots: int) -> OpenAIWire | None:
    """The direct transport for a plain ``ChatOpenAI`` pointed at a base URL (no client, proxy, query, logprobs or
    reasoning settings of its own that only the SDK sends), else None.

    Examples:
        >>> from langchain_openai import ChatOpenAI
        >>> _wire_for(ChatOpenAI(model="m", base_url="http://127.0.0.1:8080/v1", api_key="-"), 4).url
        'http://127.0.0.1:8080/v1/chat/completions'
    """
    if type(llm).__name__ != "ChatOpenAI" or not _openai_family(llm) or not llm.openai_api_base:
        return None
    if any(getattr(llm, name, None) for name in _SDK_ONLY) or getattr(llm, "n", None) not in (None, 1):
        return None
    if str(llm.model_name).startswith(("o1", "o3", "o4", "gpt-5")):  # the SDK sends max_completion_tokens
        return None
    extra = {**(llm.model_kwargs or {}), **(llm.extra_body or {})}
    extra.update({f: getattr(llm, f) for f in _BODY_FIELDS if getattr(llm, f, None) is not None})
    headers = dict(llm.default_headers or {})
    if llm.openai_organization:
        headers["OpenAI-Organization"] = llm.openai_organization
    key = llm.openai_api_key.get_secret_value() if llm.openai_api_key else ""
    return OpenAIWire(
        llm.openai_api_base,
        llm.model_name,
        api_key=key,
        headers=headers,
        extra_body=extra,
        max_connections=slots,
        limit_field="max_completion_tokens",  # as ChatOpenAI sends it
    )


def _tracing() -> bool:
    """Whether LangSmith tracing is on (``LANGSMITH_TRACING`` / ``LANGCHAIN_TRACING_V2``): then every call goes through
    ``ainvoke``, where the tracer sees it."""
    try:
        from langsmith.utils import tracing_is_enabled
    except ImportError:  # pragma: no cover - langsmith comes with langchain-core
        return False
    return bool(tracing_is_enabled())


def _endpoint_of(llm: Any) -> str:
    model = getattr(llm, "model_name", None) or getattr(llm, "model", None)
    base = getattr(llm, "openai_api_base", None) or getattr(llm, "base_url", None)
    if _openai_family(llm) and not base:
        base = "https://api.openai.com/v1"
    where = str(base) if base else type(llm).__name__
    return f"{where} (model {model})" if model else where


class LangChainChatLLM(ServedChatLLM):
    """Wrap a LangChain ``BaseChatModel`` so retrievekit components can use it (``complete`` + ``complete_json``).

    Args:
        llm: any LangChain chat model. An OpenAI-compatible server (vLLM, Ollama, llama.cpp's server) works by
            passing ``ChatOpenAI(base_url=..., model=..., api_key=...)``.
        config: a LangChain ``RunnableConfig`` (callbacks, tags) passed to every ``invoke``.
        policy: timeout and retries of one request (:class:`~retrievekit.core.llm.call_policy.CallPolicy`); by
            default the model's own ``timeout`` and ``max_retries`` (60 s and 2 when unset). retrievekit does the
            retrying: a ``ChatOpenAI`` is used through a copy whose client sends each request once.
        structured_output: how ``complete_json`` asks for JSON: ``"auto"`` (the server's JSON-schema mode for
            ``ChatOpenAI`` and its kin, else the schema in the prompt), ``"json_schema"``, ``"json_object"``,
            ``"prompt"`` (:mod:`retrievekit.core.llm.served`).
        max_concurrency: requests in flight at once through this adapter (ours: 4).
        forward_generation_kwargs: deprecated and ignored: every call's ``max_tokens`` and ``temperature`` are
            always sent now (a model that refuses them per call gets none, and each call notes ``limit_not_sent``).
        transport: how awaited requests are sent: ``"auto"`` (straight to the server for a plain ``ChatOpenAI`` with
            a ``base_url``, no callbacks of its own or in ``config``, and LangSmith tracing off, :mod:`retrievekit.core.llm.openai_wire`: about 0.2 ms of CPU a
            request against several through the SDK; the model's own ``ainvoke`` otherwise) or ``"framework"``
            (always ``ainvoke``, where LangChain's callbacks and tracers see each call). Sync calls always ``invoke``.

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
        self,
        llm: BaseChatModel,
        *,
        config: Mapping[str, Any] | None = None,
        policy: CallPolicy | None = None,
        structured_output: str = "auto",
        max_concurrency: int = 4,
        forward_generation_kwargs: bool | None = None,
        transport: str = "auto",
    ) -> None:
        check_transport(transport)
        super().__init__(
            policy=policy
            or CallPolicy.from_client(getattr(llm, "request_timeout", None), getattr(llm, "max_retries", None)),
            structured_output=structured_output,
            max_concurrency=max_concurrency,
            forward_generation_kwargs=forward_generation_kwargs,
        )
        self.config = dict(config) if config is not None else None
        model = _single_request_copy(llm)
        sdk = getattr(model, "root_client", None)
        self.adopt_client(llm, endpoint=_endpoint_of(llm), model=model, openai=_openai_family(llm), sdk_client=sdk)
        self._loop_models: PerLoop[Any] = PerLoop(
            self._loop_model, _close_loop_model, shards=shards_for(self.max_concurrency) if self._openai else 1
        )
        self.transport = transport
        plain = transport == "auto" and not (self.config or {}).get("callbacks") and not _tracing()
        self.wire = _wire_for(llm, self.max_concurrency) if plain else None

    def _loop_model(self) -> Any:
        """The copy of the model whose async client belongs to the running loop (an OpenAI client is bound to the
        loop it was first used on); other models are shared, and so is a model built with the user's own
        ``http_async_client`` (its hooks, proxy and TLS settings are kept: the user owns that client's loop)."""
        root = getattr(self._model, "root_async_client", None)
        if not self._openai or root is None or getattr(self.llm, "http_async_client", None) is not None:
            return self._model
        import openai

        fresh = root.copy(max_retries=0, http_client=openai.DefaultAsyncHttpxClient())
        return self._model.model_copy(update={"root_async_client": fresh, "async_client": fresh.chat.completions})

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

    def _supports_response_format(self) -> bool:
        return self._openai

    def _send(self, request: SendRequest) -> Completion:
        """One ``invoke`` with the request's limits, timeout and ``response_format``.

        Examples:
            >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
            >>> llm = LangChainChatLLM(FakeListChatModel(responses=["ok"]))
            >>> llm._send(SendRequest([ChatMessage("user", "Hi")], 8, 0.0, 60.0)).text
            'ok'
        """
        messages = self.to_langchain_messages(request.messages)
        kwargs = self.client_kwargs(request, per_request_timeout=self._openai)
        try:
            response = self.call_client(lambda **kw: self._model.invoke(messages, config=self.config, **kw), kwargs)
        except Exception as e:
            return _cut_or_raise(e)
        return _completion(response, messages)

    async def _asend(self, request: SendRequest) -> Completion:  # type: ignore[override]
        """One ``await model.ainvoke`` with the same arguments as :meth:`_send` (the path of requests made under an
        ``await``: :mod:`retrievekit.core.llm.bridge`).

        Examples:
            >>> import asyncio
            >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
            >>> llm = LangChainChatLLM(FakeListChatModel(responses=["ok"]))
            >>> asyncio.run(llm._asend(SendRequest([ChatMessage("user", "Hi")], 8, 0.0, 60.0))).text
            'ok'
        """
        messages = self.to_langchain_messages(request.messages)
        kwargs = self.client_kwargs(request, per_request_timeout=self._openai)
        model = await self._loop_models.get()
        try:
            response = await self.acall_client(lambda **kw: model.ainvoke(messages, config=self.config, **kw), kwargs)
        except Exception as e:
            return _cut_or_raise(e)
        return _completion(response, messages)


async def _close_loop_model(model: Any) -> None:
    """Close the async client of a loop's copy of the model (at that loop's shutdown)."""
    client = getattr(model, "root_async_client", None)
    if client is not None:
        await client.close()


def _cut_or_raise(error: Exception) -> Completion:
    """The reply the OpenAI SDK raises instead of returning a structured reply cut at ``max_tokens``; any other
    error is raised again."""
    cut = _cut_reply(error)
    if cut is None:
        raise error
    return cut


def _completion(response: Any, messages: Sequence[BaseMessage]) -> Completion:
    """A LangChain reply as a :class:`~retrievekit.core.llm.protocol.Completion`."""
    text = response.text if isinstance(response, BaseMessage) else str(response)
    meta = getattr(response, "response_metadata", None) or {}
    finish = meta.get("finish_reason") if isinstance(meta, Mapping) else None
    return reply_completion(text, _usage_from_message(response), [m.text for m in messages], finish)


_ADAPTER = register_llm_adapter(BaseLanguageModel, LangChainChatLLM, "a LangChain chat model")
"""How every ``llm=`` in retrievekit wraps a LangChain chat model (:func:`~retrievekit.core.llm.resolve.resolve_llm`)."""


def as_chat_llm(llm: Any) -> Any:
    """The model a retrievekit method gets from a LangChain user: the one ``llm=`` rule of every LangChain edge.

    ``None`` stays ``None`` (the method's default model); a retrievekit model -- a
    :class:`~retrievekit.core.llm.protocol.ChatLLM`, a :class:`~retrievekit.core.llm.protocol.ScoringLM` such as
    ``LocalLM`` or a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` -- is returned as is; a LangChain chat
    model (``ChatOpenAI``, ``ChatOllama``, a fake model...) or LLM is wrapped in :class:`LangChainChatLLM`. Anything
    else, a model's name included (that is for :func:`~retrievekit.core.llm.resolve.resolve_llm`), raises :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> as_chat_llm(FakeListChatModel(responses=["ok"])).complete("Hi").text
        'ok'
        >>> as_chat_llm(None) is None
        True
        >>> as_chat_llm(42)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm must be a model object (a LangChain chat model or a retrievekit ChatLLM/LocalLM), got int '42'; a model's name is loaded by resolve_llm
    """
    return adapt_llm(llm, _ADAPTER)


def served_llm(spec: ServedLLMSpec) -> LangChainChatLLM:
    """``--llm openai:MODEL@URL``: LangChain's ``ChatOpenAI`` against that server, wrapped (entry point
    ``retrievekit.llms: openai``).

    Examples:
        >>> from retrievekit.core.llm.served_spec import parse_served_spec
        >>> served_llm(parse_served_spec("openai:smollm2@http://127.0.0.1:8080/v1")).endpoint
        'http://127.0.0.1:8080/v1 (model smollm2)'
    """
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as e:
        raise MissingDependencyError("langchain-openai", "pip install langchain-openai", str(e)) from e
    chat = ChatOpenAI(
        base_url=spec.base_url,
        api_key=spec.api_key,  # type: ignore[arg-type]
        model=spec.model,
        **spec.client_limits(),
    )
    return spec.adapted(LangChainChatLLM, chat)
