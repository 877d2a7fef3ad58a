"""The served-LLM path shared by every framework adapter: limits, timeouts, typed errors, structured output.

A served LLM (vLLM, Ollama, llama.cpp's server, a hosted API) is reached through a client library -- LangChain's
``ChatOpenAI``, LlamaIndex's ``OpenAILike`` -- wrapped by ``retrievekit.langchain.LangChainChatLLM`` or
``retrievekit.llama_index.LlamaIndexChatLLM``. Those adapters only convert messages and read replies
(:meth:`ServedChatLLM._send`: exactly one request). What this model guarantees is written once: its settings and
state are here, a call's requests and waits are its exchange (:mod:`retrievekit.core.llm.exchange`), and the drivers
send them (:func:`~retrievekit.core.llm.drivers.run_exchange`, :func:`~retrievekit.core.llm.drivers.arun_exchange`)
through the transport this model hands over (:meth:`ServedChatLLM.sync_transport`,
:meth:`ServedChatLLM.async_transport`):

1. **Limits always sent.** Every request carries its call's own ``max_tokens`` and ``temperature`` (a summary's 40
   tokens, a score reply's few), whatever the client was built with.
2. **Bounded time, typed errors.** Each request runs under a :class:`~retrievekit.core.llm.call_policy.CallPolicy`
   (per-request timeout, bounded retries with backoff on connection errors / 429 / 5xx, no retry of a timeout), and
   fails as ``LLMTimeoutError`` / ``LLMUnavailableError`` / ``LLMOutputError`` naming the endpoint.
3. **Structured output from the server.** ``complete_json`` asks the server to follow the JSON schema
   (``response_format={"type": "json_schema", ...}``) when the client can send it, so a small model answers in a
   few tokens instead of echoing a schema from its prompt. ``structured_output`` picks the mode: ``"auto"`` (the
   schema mode where the client supports it, else the prompt), ``"json_schema"``, ``"json_object"`` (JSON mode,
   schema in the prompt) or ``"prompt"`` (schema in the prompt, parse with repair). A server that refuses the
   mode (HTTP 400) is asked again with the next one, once, and the adapter remembers it (``structured_output``
   event). Replies are still parsed and validated; a retry re-sends the first prompt with a short note (it never
   grows) and, when the reply was cut at ``max_tokens``, doubles the limit (up to 4x).
4. **Bounded concurrency.** At most ``max_concurrency`` requests of one adapter are in flight at once, from all its
   threads and event loops together (:attr:`ServedChatLLM.slots`, a
   :class:`~retrievekit.core.llm.slots.SharedSlots` held by the driver while a request is in flight); methods fan
   their independent calls out up to that.

Examples:
    >>> from retrievekit.core.trace import Trace
    >>> class Recorder(ServedChatLLM):  # a stand-in client that answers every request with a fixed reply
    ...     def __init__(self):
    ...         super().__init__(structured_output="json_schema")
    ...         self.sent = []
    ...     def _send(self, request):
    ...         self.sent.append(request)
    ...         return Completion('{"ok": true}', 20, 4, finish_reason="stop")
    >>> llm, t = Recorder(), Trace()
    >>> llm.complete_json("Is it ok?", {"type": "object"}, max_tokens=8, trace=t).value
    {'ok': True}
    >>> r = llm.sent[0]
    >>> r.max_tokens, r.timeout, r.response_format["type"], r.messages[-1].content
    (8, 60.0, 'json_schema', 'Is it ok?')
    >>> t.llm_calls, t.counters["json.replies"]
    (1, 1)
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import warnings
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

from pydantic import BaseModel

from retrievekit.core.errors import InvalidInputError, LLMUnavailableError
from retrievekit.core.llm.base import (
    ChatLLMBase,
    JsonAttempts,
    build_json_messages,
    check_retries,
    count_json_call,
    json_attempts,
)
from retrievekit.core.llm.bridge import run_in_pool, send_request, usable_async_send
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.exchange import SendRequest, check_prompt_size
from retrievekit.core.llm.json_output import schema_to_json
from retrievekit.core.llm.protocol import ChatMessage, Completion, JsonResult, JsonSchemaLike, Prompt, as_messages
from retrievekit.core.llm.sdk_pool import pool_gate
from retrievekit.core.llm.slots import SharedSlots
from retrievekit.core.llm.untrusted import defuse_control_tokens
from retrievekit.core.trace import Trace

__all__ = [
    "STRUCTURED_OUTPUT_MODES",
    "TRANSPORTS",
    "SendRequest",
    "ServedChatLLM",
    "check_prompt_size",
    "check_transport",
    "response_format_for",
]

STRUCTURED_OUTPUT_MODES = ("auto", "json_schema", "json_object", "prompt")
TRANSPORTS = ("auto", "framework")
"""How an edge's adapter sends awaited requests: ``"auto"`` (straight to an OpenAI-compatible server,
:mod:`retrievekit.core.llm.openai_wire`, for a plain OpenAI-family chat model; else the model's own async API) or
``"framework"`` (always the model's own async API, where its callbacks and instrumentation see each call)."""
_DOWNGRADE = {"json_schema": "json_object", "json_object": "prompt"}


def _schema_name(schema: dict[str, Any]) -> str:
    title = schema.get("title")
    name = title if isinstance(title, str) else "reply"
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:64] or "reply"


def response_format_for(mode: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` a structured-output mode sends (None for ``"prompt"``).

    Examples:
        >>> response_format_for("json_schema", {"type": "object", "title": "Slate scores"})["json_schema"]["name"]
        'Slate_scores'
        >>> response_format_for("json_object", {}), response_format_for("prompt", {})
        ({'type': 'json_object'}, None)
    """
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": _schema_name(schema), "schema": schema}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def check_transport(transport: str) -> str:
    """``transport`` when it is one of :data:`TRANSPORTS`, else ``InvalidInputError``.

    Examples:
        >>> check_transport("auto")
        'auto'
        >>> check_transport("http")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: transport must be one of ('auto', 'framework'), got 'http'
    """
    if transport not in TRANSPORTS:
        raise InvalidInputError(f"transport must be one of {TRANSPORTS}, got {transport!r}")
    return transport


class ServedChatLLM(ChatLLMBase):
    """Base class of the adapters over a served LLM's client: subclasses implement :meth:`_send` (one request).

    Args:
        policy: timeout and retries of one request (:class:`~retrievekit.core.llm.call_policy.CallPolicy`).
        structured_output: ``"auto"`` | ``"json_schema"`` | ``"json_object"`` | ``"prompt"`` (module docstring).
        max_concurrency: requests of this adapter in flight at once (ours: 4, a small server's parallel slots).
        forward_generation_kwargs: deprecated and ignored (limits are always sent); passing it warns.

    Examples:
        >>> class Down(ServedChatLLM):
        ...     endpoint = "http://127.0.0.1:9/v1"
        ...     def _send(self, request):
        ...         raise ConnectionRefusedError("connection refused")
        >>> Down(policy=CallPolicy(max_retries=0)).complete("hi")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.LLMUnavailableError: the LLM at http://127.0.0.1:9/v1 did not answer after 1 request(s): ConnectionRefusedError: connection refused
    """

    endpoint: str = "the served LLM"
    """Where requests go (named in errors); adapters set it from their client."""

    max_prompt_chars: int = 120_000
    """The stated bound on one request's prompt (all its messages' characters; ours: 120,000, about 30,000 tokens at
    4 characters a token): a longer prompt is refused with ``InvalidInputError`` before any request is sent (a
    100k-token query is not copied into every request). Set it on the adapter to your server's context."""

    wire: Any = None
    """The :class:`~retrievekit.core.llm.openai_wire.OpenAIWire` awaited requests go through (set by an edge for a
    plain OpenAI-family chat model with ``transport="auto"``), or None: the client's own async API."""

    served_spec: Any = None
    """The :class:`~retrievekit.core.llm.served_spec.ServedLLMSpec` this client was built from (``--llm
    CLIENT:MODEL@URL``), or None: what ``--judge served`` asks the same server with."""

    def __init__(
        self,
        *,
        policy: CallPolicy | None = None,
        structured_output: str = "auto",
        max_concurrency: int = 4,
        forward_generation_kwargs: bool | None = None,
    ) -> None:
        if forward_generation_kwargs is not None:
            warnings.warn(
                f"{type(self).__name__}(forward_generation_kwargs=...) is deprecated and ignored: max_tokens and "
                "temperature are always sent",
                DeprecationWarning,
                stacklevel=3,
            )
        if structured_output not in STRUCTURED_OUTPUT_MODES:
            raise InvalidInputError(
                f"structured_output must be one of {STRUCTURED_OUTPUT_MODES}, got {structured_output!r}"
            )
        if isinstance(max_concurrency, bool) or int(max_concurrency) < 1:
            raise InvalidInputError(f"max_concurrency must be >= 1, got {max_concurrency!r}")
        self.policy = policy if policy is not None else CallPolicy()
        self.structured_output = structured_output
        self.max_concurrency = int(max_concurrency)
        self.slots = SharedSlots(self.max_concurrency)  # one budget for every thread and event loop
        self.sync_calls: threading.BoundedSemaphore | None = None  # bound_sync_calls
        self._mode_lock = threading.Lock()
        self._refused_modes: set[str] = set()
        self.limits_sent = True

    def adopt_client(self, llm: Any, *, endpoint: str, model: Any, openai: bool, sdk_client: Any = None) -> None:
        """Keep a framework adapter's client: ``llm`` as given (``self.llm``), where it sends (``endpoint``, named
        in errors), the copy that sends each request once (``model``; retrievekit retries instead) and whether it is
        of the OpenAI family (takes a per-request timeout and ``response_format``). An OpenAI-family model's sync
        calls hold a place of its SDK client's (``sdk_client``) connection pool: :meth:`bound_sync_calls`.

        Examples:
            >>> llm = ServedChatLLM(max_concurrency=256)
            >>> llm.adopt_client("client", endpoint="http://127.0.0.1:8080/v1", model="client", openai=True)
            >>> llm, llm.sync_calls is not None
            (ServedChatLLM(str), True)
        """
        self.llm = llm
        self.endpoint = endpoint
        self._model = model
        self._openai = openai
        if openai:
            self.bound_sync_calls(sdk_client)

    def bound_sync_calls(self, sdk_client: Any) -> None:
        """Send this model's sync calls through its OpenAI SDK client within the places of the client's connection
        pool: its keep-alive limit, shared with every model over the same pool
        (:func:`~retrievekit.core.llm.sdk_pool.pool_gate`). A call waits for a place; the awaited path is not bounded.

        Examples:
            >>> import openai
            >>> llm = ServedChatLLM(max_concurrency=512)
            >>> llm.bound_sync_calls(openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="-"))
            >>> llm.sync_calls._value
            100
        """
        self.sync_calls = pool_gate(sdk_client)

    def sync_bound(self, send: Callable[[SendRequest], Completion]) -> AbstractContextManager[Any]:
        """The place the sync driver holds while ``send`` (from :meth:`sync_transport`) is in flight:
        :attr:`sync_calls` for the client's own sync call, nothing for a request handed to the caller's loop.

        Examples:
            >>> llm = ServedChatLLM(max_concurrency=512)
            >>> llm.bound_sync_calls(None)  # a pool it cannot read: 100 places of its own
            >>> llm.sync_bound(llm._send) is llm.sync_calls, type(llm.sync_bound(print)).__name__
            (True, 'nullcontext')
        """
        return self.sync_calls if self.sync_calls is not None and send == self._send else contextlib.nullcontext()

    def __repr__(self) -> str:
        inner = getattr(self, "llm", None)
        return f"{type(self).__name__}({type(inner).__name__})" if inner is not None else f"{type(self).__name__}()"

    # ------------------------------------------------------------------ what adapters implement
    def _send(self, request: SendRequest) -> Completion:
        """Send exactly one request (no retries of the client's own) and return its reply; raise what the client
        raises. Implemented by the framework adapters."""
        raise NotImplementedError

    # #51 async hook (retrievekit.core.llm.bridge): the adapters over a client with an async API define it
    _asend: Callable[[SendRequest], Coroutine[Any, Any, Completion]] | None = None
    """One request through the client's async API (``await llm.achat`` / ``await llm.ainvoke``), with the same
    arguments as :meth:`_send`; used for the requests made under an ``await`` (``bridge.send_request``)."""

    def _supports_response_format(self) -> bool:
        """Whether the client can send ``response_format`` (the ``"auto"`` mode uses the schema mode then)."""
        return False

    def client_kwargs(self, request: SendRequest, *, per_request_timeout: bool) -> dict[str, Any]:
        """The keyword arguments one client call sends: the limits (unless the client refused them), the timeout
        (when the client takes one per request, as the OpenAI SDK does) and ``response_format``.

        Examples:
            >>> r = SendRequest([ChatMessage("user", "hi")], 8, 0.0, 30.0, {"type": "json_object"})
            >>> ServedChatLLM().client_kwargs(r, per_request_timeout=True)
            {'max_tokens': 8, 'temperature': 0.0, 'timeout': 30.0, 'response_format': {'type': 'json_object'}}
        """
        kwargs: dict[str, Any] = {}
        if self.limits_sent:
            kwargs.update(max_tokens=request.max_tokens, temperature=request.temperature)
        if per_request_timeout:
            kwargs["timeout"] = request.timeout
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        return kwargs

    def call_client(self, call: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        """``call(**kwargs)``; a client that refuses per-call limits (``TypeError``) is called again without them,
        and this adapter stops sending them (:meth:`refuses_limits`).

        Examples:
            >>> def chat(**kwargs):
            ...     if "max_tokens" in kwargs:
            ...         raise TypeError("chat() got an unexpected keyword argument 'max_tokens'")
            ...     return "ok"
            >>> llm = ServedChatLLM()
            >>> llm.call_client(chat, {"max_tokens": 5, "temperature": 0.0}), llm.limits_sent
            ('ok', False)
        """
        try:
            return call(**kwargs)
        except TypeError as e:
            if not self.refuses_limits(e):
                raise
            return call(**{k: v for k, v in kwargs.items() if k not in ("max_tokens", "temperature")})

    async def acall_client(self, call: Callable[..., Coroutine[Any, Any, Any]], kwargs: dict[str, Any]) -> Any:
        """``await call(**kwargs)``, the async form of :meth:`call_client`: a client that refuses per-call limits
        (``TypeError``) is called again without them, and this adapter stops sending them.

        Examples:
            >>> import asyncio
            >>> async def achat(**kwargs):
            ...     if "max_tokens" in kwargs:
            ...         raise TypeError("achat() got an unexpected keyword argument 'max_tokens'")
            ...     return "ok"
            >>> llm = ServedChatLLM()
            >>> asyncio.run(llm.acall_client(achat, {"max_tokens": 5})), llm.limits_sent
            ('ok', False)
        """
        try:
            return await call(**kwargs)
        except TypeError as e:
            if not self.refuses_limits(e):
                raise
            return await call(**{k: v for k, v in kwargs.items() if k not in ("max_tokens", "temperature")})

    def refuses_limits(self, error: TypeError) -> bool:
        """Whether a client's ``TypeError`` says it takes no ``max_tokens`` / ``temperature`` per call; if so, this
        adapter stops sending them (``limits_sent`` becomes False and every later call notes ``limit_not_sent``).

        Examples:
            >>> llm = ServedChatLLM()
            >>> llm.refuses_limits(TypeError("chat() got an unexpected keyword argument 'max_tokens'")), llm.limits_sent
            (True, False)
        """
        text = str(error)
        if "unexpected keyword" in text and ("max_tokens" in text or "temperature" in text):
            self.limits_sent = False
            return True
        return False

    # ------------------------------------------------------------------ requests (sent by the drivers)
    def sync_transport(self) -> Callable[[SendRequest], Completion]:
        """How the sync driver sends one request from this thread: the client's sync call (:meth:`_send`), or, under
        an ``await`` that waits on this thread (:mod:`retrievekit.core.llm.bridge`), the awaited transport on the
        caller's loop. Ask it in the thread that will wait for the reply.

        Examples:
            >>> class Sync(ServedChatLLM):
            ...     def _send(self, request):
            ...         return Completion("sync", 3, 1)
            >>> Sync().sync_transport()(SendRequest([ChatMessage("user", "hi")], 4, 0.0, 5.0)).text
            'sync'
        """
        awaitable = self.wire is not None or self._asend is not None
        asend = usable_async_send(self.async_transport() if awaitable else None)
        return self._send if asend is None else functools.partial(self._send_on_caller_loop, asend)

    def _send_on_caller_loop(
        self, asend: Callable[[SendRequest], Coroutine[Any, Any, Completion]], request: SendRequest
    ) -> Completion:
        return send_request(self._send, asend, request, request.timeout)

    def async_transport(self) -> Callable[[SendRequest], Coroutine[Any, Any, Completion]]:
        """How the async driver sends one request: through :attr:`wire` when the edge set one, else the client's
        async API, else (a client without one) its sync call on the bridge's bounded pool.

        Examples:
            >>> import asyncio
            >>> class Sync(ServedChatLLM):
            ...     def _send(self, request):
            ...         return Completion("sync", 3, 1)
            >>> asyncio.run(Sync().async_transport()(SendRequest([ChatMessage("user", "hi")], 4, 0.0, 5.0))).text
            'sync'
        """
        if self.wire is not None:
            return functools.partial(self.wire.asend, limits=self.limits_sent)
        if self._asend is not None:
            return self._asend
        return functools.partial(run_in_pool, self._send)

    def checked(self, messages: list[ChatMessage], max_tokens: int) -> list[ChatMessage]:
        """The messages as sent: within :attr:`max_prompt_chars`, and no text may become a control token of the
        server's chat template (``InvalidInputError`` before any request otherwise).

        Examples:
            >>> ServedChatLLM().checked([ChatMessage("user", "<|im_start|>system")], 8)[0].content != "<|im_start|>system"
            True
        """
        if isinstance(max_tokens, bool) or int(max_tokens) < 1:
            raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens!r}")
        check_prompt_size(messages, self.max_prompt_chars, self.endpoint)
        return [ChatMessage(m.role, defuse_control_tokens(m.content)) for m in messages]

    def noted(self, done: Completion, trace: Trace | None) -> Completion:
        """``done``, with the notes it leads to in ``trace`` (limits the client refused, estimated token counts).

        Examples:
            >>> ServedChatLLM().noted(Completion("hi", 2, 1), None).text
            'hi'
        """
        if not self.limits_sent and trace is not None:
            trace.count("llm.limits_not_sent")
            trace.note("limit_not_sent", f"{self.endpoint} takes no max_tokens per call; its own setting applied")
        if done.usage_estimated and trace is not None:
            trace.note("token_estimate", f"{self.endpoint} reported no token usage; estimated len(text)//4")
        return done

    def empty_noted(self, done: Completion, trace: Trace | None) -> Completion:
        """``done``; an empty reply is noted (``empty_reply``).

        Examples:
            >>> class Empty(ServedChatLLM):
            ...     def _send(self, request):
            ...         return Completion("", 5, 0)
            >>> from retrievekit.core.trace import Trace
            >>> t = Trace()
            >>> Empty().complete("hi", trace=t).text, [e.kind for e in t.events]
            ('', ['empty_reply'])
        """
        if not done.text.strip() and trace is not None:
            trace.count("llm.empty_replies")
            trace.note("empty_reply", f"{self.endpoint} sent an empty reply (finish_reason={done.finish_reason})")
        return done

    def _reply(self, prompt: Prompt, max_tokens: int, temperature: float, trace: Trace | None) -> Completion:
        """One chat call, sent by the sync driver (:func:`~retrievekit.core.llm.drivers.run_exchange`)."""
        from retrievekit.core.llm.drivers import run_exchange  # the driver sends; it imports this module

        call = ModelCall.chat("complete", prompt, max_tokens=max_tokens, temperature=temperature)
        return cast(Completion, run_exchange(self, call, trace))

    async def acomplete(
        self,
        prompt: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        trace: Trace | None = None,
    ) -> Completion:
        """:meth:`complete` awaited on the client's async API: no thread per request, cancelled with its task.

        Examples:
            >>> import asyncio
            >>> class Fixed(ServedChatLLM):
            ...     async def _asend(self, request):
            ...         return Completion("hi", 3, 1)
            >>> asyncio.run(Fixed().acomplete("Hello")).text
            'hi'
        """
        from retrievekit.core.llm.drivers import arun_exchange

        call = ModelCall.chat("complete", prompt, max_tokens=max_tokens, temperature=temperature)
        return cast(Completion, await arun_exchange(self, call, trace))

    async def acomplete_json(
        self,
        prompt: str | Sequence[ChatMessage],
        schema: type[BaseModel] | dict[str, Any],
        *,
        max_tokens: int = 256,
        trace: Trace | None = None,
        retries: int = 2,
    ) -> JsonResult:
        """:meth:`complete_json` awaited: the same structured-output modes and the same attempt loop
        (:mod:`retrievekit.core.llm.exchange`).

        Examples:
            >>> import asyncio
            >>> class Fixed(ServedChatLLM):
            ...     async def _asend(self, request):
            ...         return Completion('{"ok": true}', 3, 1)
            >>> asyncio.run(Fixed().acomplete_json("Ok?", {"type": "object"})).value
            {'ok': True}
        """
        from retrievekit.core.llm.drivers import arun_exchange

        call = ModelCall.json("complete_json", prompt, schema, max_tokens=max_tokens, retries=check_retries(retries))
        return cast(JsonResult, await arun_exchange(self, call, trace))

    # ------------------------------------------------------------------ structured output
    def json_mode(self) -> str:
        """The structured-output mode the next ``complete_json`` uses (after any refusal by the server).

        Examples:
            >>> ServedChatLLM().json_mode(), ServedChatLLM(structured_output="json_object").json_mode()
            ('prompt', 'json_object')
        """
        mode = self.structured_output
        if mode == "auto":
            mode = "json_schema" if self._supports_response_format() else "prompt"
        while mode in self._refused_modes:
            mode = _DOWNGRADE[mode]
        return mode

    def _json(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> JsonResult:
        """JSON matching ``schema``, asked for with the server's structured-output mode when there is one, sent by
        the sync driver. Raises ``LLMOutputError`` when no reply validates after ``retries`` retries."""
        from retrievekit.core.llm.drivers import run_exchange

        call = ModelCall.json("complete_json", prompt, schema, max_tokens=max_tokens, retries=retries)
        return cast(JsonResult, run_exchange(self, call, trace))

    def json_call(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> tuple[str, JsonAttempts, dict[str, Any] | None]:
        """One JSON call, sync or awaited: the structured-output mode it uses, its attempt loop
        (:func:`~retrievekit.core.llm.base.json_attempts`) and the ``response_format`` every attempt sends.

        Examples:
            >>> mode, attempts, response_format = ServedChatLLM(structured_output="json_object").json_call(
            ...     "Ok?", {"type": "object"}, 8, None, 0)
            >>> mode, response_format, next(attempts)[1]
            ('json_object', {'type': 'json_object'}, 8)
        """
        mode = self.json_mode()
        messages, response_format = self._json_request(prompt, schema, mode, trace)
        attempts = json_attempts(messages, schema, max_tokens=max_tokens, retries=retries, trace=trace, mode=mode)
        return mode, attempts, response_format

    def _json_request(
        self, prompt: Prompt, schema: JsonSchemaLike, mode: str, trace: Trace | None
    ) -> tuple[list[ChatMessage], dict[str, Any] | None]:
        """The messages and ``response_format`` of a JSON call in ``mode`` (the call counted in ``trace``)."""
        schema_json = schema_to_json(schema)
        count_json_call(trace)
        if mode == "prompt":
            return build_json_messages(prompt, schema_json), None
        if trace is not None:
            trace.count(f"json.{mode}")
        # the server enforces the schema itself in json_schema mode: the prompt need not spell it out
        messages = as_messages(prompt) if mode == "json_schema" else build_json_messages(prompt, schema_json)
        return messages, response_format_for(mode, schema_json)

    def refused_mode(self, e: LLMUnavailableError, mode: str, trace: Trace | None) -> bool:
        """Whether the server refused ``mode`` (HTTP 400/422): remembered, noted, and the next mode is used.

        Examples:
            >>> llm = ServedChatLLM(structured_output="json_schema")
            >>> llm.refused_mode(LLMUnavailableError("refused", status=400), "json_schema", None), llm.json_mode()
            (True, 'json_object')
        """
        if mode == "prompt" or e.status not in (400, 422):
            return False
        with self._mode_lock:
            self._refused_modes.add(mode)
        if trace is not None:
            trace.note(
                "structured_output",
                f"{self.endpoint} refused response_format {mode!r} (HTTP {e.status}); using {self.json_mode()!r}",
            )
        return True
