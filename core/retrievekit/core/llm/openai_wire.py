"""The awaited transport to an OpenAI-compatible chat server: one ``POST /chat/completions`` a request, over aiohttp.

A framework's OpenAI client (LlamaIndex's ``OpenAILike``, LangChain's ``ChatOpenAI``) spends 3 to 8 ms of CPU a
request in the SDK, ``httpx``'s pool and the framework's instrumentation; at hundreds of requests in flight that, not
the server, is the limit of one process. :class:`OpenAIWire` sends the same request body (model, messages, the call's
``max_tokens`` and ``temperature``, ``response_format``, the model's extra body fields) with the same key and headers
straight over an ``aiohttp`` session: about 0.2 ms a request. One session per event loop, closed with its loop
(:class:`~retrievekit.core.llm.per_loop.PerLoop`); a cancelled request closes its connection, so the server stops
working on it.

Requests go through :class:`~retrievekit.core.llm.async_http.JsonPoster` (the one awaited HTTP client). Failures are
raised as what :func:`~retrievekit.core.llm.call_policy.classify_failure` reads: an ``HTTPStatusError`` (the status
and the headers, so 429 / 5xx are retried after ``Retry-After``), ``ConnectionError``, and a reply that is not JSON
or has no message as ``ValueError`` / ``IndexError`` / ``KeyError`` (malformed). The framework edges use
it for a plain OpenAI-family model with ``transport="auto"`` (``"framework"`` sends through the model's own async
API instead, where its callbacks see each call).

Examples:
    >>> wire = OpenAIWire("http://127.0.0.1:8080/v1", "qwen", api_key="-")
    >>> from retrievekit.core.llm.served import SendRequest
    >>> from retrievekit.core.llm.protocol import ChatMessage
    >>> body = wire.body(SendRequest([ChatMessage("user", "Hi")], 8, 0.0, 30.0, {"type": "json_object"}))
    >>> body["model"], body["max_tokens"], body["response_format"], body["messages"]
    ('qwen', 8, {'type': 'json_object'}, [{'role': 'user', 'content': 'Hi'}])
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from retrievekit.core.llm.async_http import JsonPoster
from retrievekit.core.llm.client import reply_completion, usage_pair
from retrievekit.core.llm.per_loop import PerLoop
from retrievekit.core.llm.protocol import Completion

if TYPE_CHECKING:  # pragma: no cover
    from retrievekit.core.llm.served import SendRequest

__all__ = ["OpenAIWire"]


class OpenAIWire:
    """Send chat requests to ``base_url`` + ``/chat/completions`` over one aiohttp session per event loop.

    Args:
        base_url: the OpenAI-compatible base URL (``http://host:port/v1``).
        model: the model name sent in every request.
        api_key: sent as ``Authorization: Bearer ...`` (omitted when empty).
        headers: more headers to send (the client's ``default_headers``).
        extra_body: more body fields (the client's extra keyword arguments, e.g. ``top_p``); a call's own limits
            and ``response_format`` win over them.
        max_connections: connections the loop's session may keep open (the model's slots).
        limit_field: the body field of a call's token limit, as the framework's SDK names it (``"max_tokens"``;
            LangChain's ``ChatOpenAI`` sends ``"max_completion_tokens"``).

    Examples:
        >>> OpenAIWire("http://127.0.0.1:8080/v1/", "m").url
        'http://127.0.0.1:8080/v1/chat/completions'
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_connections: int = 64,
        limit_field: str = "max_tokens",
    ) -> None:
        self.base_url = str(base_url).rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = str(model)
        self.headers = dict(headers or {})
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.extra_body = dict(extra_body or {})
        self.max_connections = max(1, int(max_connections))
        self.limit_field = limit_field
        self._posters: PerLoop[JsonPoster] = PerLoop(self._poster, JsonPoster.aclose, abandon=JsonPoster.abandon)

    def _poster(self) -> JsonPoster:
        return JsonPoster(self.base_url, max_connections=self.max_connections, headers=self.headers)

    def body(self, request: SendRequest, limits: bool = True) -> dict[str, Any]:
        """The JSON body of one request (``limits=False``: without ``max_tokens`` / ``temperature``)."""
        body: dict[str, Any] = {**self.extra_body, "model": self.model}
        body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
        if limits:
            body.update({self.limit_field: request.max_tokens, "temperature": request.temperature})
        if request.response_format is not None:
            body["response_format"] = request.response_format
        return body

    async def asend(self, request: SendRequest, *, limits: bool = True) -> Completion:
        """One request awaited (the call policy around it sets the deadline and retries); raises as the module
        docstring says."""
        poster = await self._posters.get()
        raw = await poster.post("/chat/completions", json.dumps(self.body(request, limits)).encode())
        return _completion(json.loads(raw), request)


def _completion(reply: dict[str, Any], request: SendRequest) -> Completion:
    """The reply's first choice as a :class:`Completion` (a reply without one raises ``IndexError`` / ``KeyError``:
    malformed)."""
    choice = reply["choices"][0]
    text = choice["message"].get("content") or ""
    usage = usage_pair(reply.get("usage"), "prompt_tokens", "completion_tokens") or (None, None)
    return reply_completion(str(text), usage, [m.content for m in request.messages], choice.get("finish_reason"))
