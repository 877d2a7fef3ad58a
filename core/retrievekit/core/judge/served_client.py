"""The served path of a :class:`~retrievekit.core.judge.served.ServedJudge`'s requests: the OpenAI SDK's sync and
async clients behind :class:`~retrievekit.core.llm.served.ServedChatLLM`.

A served judge asks its questions as :class:`~retrievekit.core.llm.calls.ModelCall` values, which the drivers
(:mod:`retrievekit.core.llm.drivers`) send to a :class:`JudgeClient`. Being a ``ServedChatLLM``, it gets the served
path's guarantees once: control strings defused and the prompt bound checked before any request, the call's own
``max_tokens`` and temperature, one :class:`~retrievekit.core.llm.call_policy.CallPolicy` (deadline, bounded retries,
typed errors naming the endpoint), structured output from the server (``response_format`` json_schema, then JSON
mode, then the prompt) and one budget of ``max_concurrency`` requests in flight from every thread and loop. What it
adds is the log-probabilities: every plain chat request (a Yes/No question) asks the server for the first answer
token's ``top_logprobs``, read into :attr:`JudgeReply.top_logprobs`. Awaited, a request goes through the one awaited
HTTP client (:class:`~retrievekit.core.llm.async_http.JsonPoster`, one per running loop, closed with it:
:class:`~retrievekit.core.llm.per_loop.PerLoop`), so no thread is started per request.

Examples:
    >>> c = JudgeClient("qwen", "http://127.0.0.1:8080/v1")
    >>> c.endpoint, c.json_mode(), c.max_concurrency
    ('http://127.0.0.1:8080/v1 (model qwen)', 'json_schema', 4)
    >>> top_logprobs_of(None) is None
    True
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import MissingDependencyError
from retrievekit.core.llm.async_http import JsonPoster
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.client import field_of
from retrievekit.core.llm.per_loop import PerLoop
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.served import SendRequest, ServedChatLLM

__all__ = ["JudgeClient", "JudgeReply", "top_logprobs_of"]


@dataclass(frozen=True)
class JudgeReply(Completion):
    """A reply of the judge's server: the completion and, for a Yes/No question, the first answer token's
    alternatives (token -> log-probability; None when the server returned none).

    Examples:
        >>> JudgeReply("Yes", 10, 1, top_logprobs={"Yes": -0.1}).top_logprobs
        {'Yes': -0.1}
    """

    top_logprobs: dict[str, float] | None = None


def top_logprobs_of(choice: Any) -> dict[str, float] | None:
    """The first answer token's ``top_logprobs`` of an OpenAI chat choice (the highest when a token is listed
    twice), or None when the reply carries none.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> alt = [NS(token="Yes", logprob=-0.2), NS(token="No", logprob=-1.9), NS(token="Yes", logprob=-3.0)]
        >>> top_logprobs_of(NS(logprobs=NS(content=[NS(top_logprobs=alt)])))
        {'Yes': -0.2, 'No': -1.9}
    """
    tokens = field_of(field_of(choice, "logprobs"), "content") or []
    alternatives = field_of(tokens[0], "top_logprobs") if tokens else None
    if not alternatives:
        return None
    out: dict[str, float] = {}
    for alt in alternatives:
        token = str(field_of(alt, "token"))
        out[token] = max(out.get(token, -math.inf), float(field_of(alt, "logprob")))
    return out


def _openai() -> Any:
    try:
        import openai
    except ImportError as e:
        raise MissingDependencyError("openai", "pip install retrievekit[serve]", str(e)) from e
    return openai


class JudgeClient(ServedChatLLM):
    """The OpenAI-compatible server a served judge asks (module docstring).

    Args:
        model: the model name the server expects.
        base_url: the OpenAI-compatible base URL (``http://host:port/v1``).
        api_key: sent as the bearer key.
        policy: timeout and retries of one request.
        max_concurrency: requests in flight at once (all threads and loops together).
        top_logprobs: alternatives asked for a Yes/No question's answer token.
        client: a ready ``openai.OpenAI`` client; then awaited requests run it on the bridge's bounded pool (its
            async twin is not known), else they go through one ``JsonPoster`` per loop.

    Examples:
        >>> JudgeClient("m", "http://127.0.0.1:1/v1/", top_logprobs=5).base_url
        'http://127.0.0.1:1/v1'
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str = "-",
        *,
        policy: CallPolicy | None = None,
        max_concurrency: int = 4,
        top_logprobs: int = 10,
        client: Any = None,
    ) -> None:
        super().__init__(policy=policy, structured_output="auto", max_concurrency=max_concurrency)
        self.model, self.base_url, self.api_key = str(model), str(base_url).rstrip("/"), api_key or "-"
        self.endpoint = f"{self.base_url} (model {self.model})"
        self.top_logprobs = int(top_logprobs)
        self._client = client
        self._lock = threading.Lock()
        self.bound_sync_calls(client)  # the SDK's sync pool: a caller's client's, or the default one's 100 places
        self._posters: PerLoop[JsonPoster] = PerLoop(self._new_poster, JsonPoster.aclose, abandon=JsonPoster.abandon)
        if client is not None:
            self._asend = None  # type: ignore[assignment]  # a caller's sync client: awaited on the bounded pool

    def __repr__(self) -> str:
        return f"JudgeClient({self.model!r}, {self.base_url!r})"

    def _supports_response_format(self) -> bool:
        return True

    def _sync_client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _openai().OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)
            return self._client

    def _new_poster(self) -> JsonPoster:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        return JsonPoster(self.base_url, max_connections=self.max_concurrency, headers=headers)

    def _body(self, request: SendRequest) -> dict[str, Any]:
        """The request body: the messages (defused by the served path), the limits, the timeout, the
        ``response_format`` of a JSON call, and ``logprobs`` for a plain question."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        body = {"model": self.model, "messages": messages, **self.client_kwargs(request, per_request_timeout=True)}
        if request.response_format is None:
            body.update(logprobs=True, top_logprobs=self.top_logprobs)
        return body

    @staticmethod
    def _read(reply: Any) -> JudgeReply:
        """The reply, an SDK object (sync) or its JSON (awaited), read alike (``field_of``); no choice or message
        raises ``IndexError`` / ``KeyError`` (malformed)."""
        choice = (field_of(reply, "choices") or [])[0]
        message, usage = field_of(choice, "message"), field_of(reply, "usage")
        if message is None:
            raise KeyError("the reply's choice has no message")
        return JudgeReply(
            field_of(message, "content") or "",
            int(field_of(usage, "prompt_tokens") or 0),
            int(field_of(usage, "completion_tokens") or 0),
            finish_reason=field_of(choice, "finish_reason"),
            top_logprobs=top_logprobs_of(choice),
        )

    def _send(self, request: SendRequest) -> Completion:
        """One request through the sync client."""
        return self._read(self._sync_client().chat.completions.create(**self._body(request)))

    async def _asend(self, request: SendRequest) -> Completion:
        """One request through the running loop's ``JsonPoster`` (no thread)."""
        poster = await self._posters.get()
        body = {k: v for k, v in self._body(request).items() if k != "timeout"}  # the policy's deadline bounds it
        return self._read(json.loads(await poster.post("/chat/completions", json.dumps(body).encode())))
