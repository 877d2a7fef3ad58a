"""A served-LLM client for retrievekit over the standard library's urllib: ``--llm plain-http:MODEL@URL``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.served import SendRequest, ServedChatLLM
from retrievekit.core.llm.served_spec import ServedLLMSpec


class HTTPStatusError(Exception):
    """An HTTP error status, carried as ``status_code`` (the call policy retries 429 and 5xx, refuses the rest)."""

    def __init__(self, status_code: int, body: str) -> None:
        super().__init__(f"HTTP {status_code}: {body[:200]}")
        self.status_code = status_code


class PlainHTTPChatLLM(ServedChatLLM):
    """POSTs each request to ``BASE_URL/chat/completions``, once (retrievekit retries)."""

    def __init__(self, spec: ServedLLMSpec) -> None:
        super().__init__(**spec.adapter_options())
        self.spec = spec
        self.endpoint = f"{spec.base_url} (model {spec.model})"  # named in every error

    def _supports_response_format(self) -> bool:
        return True  # the body below carries response_format, so "auto" asks the server for the JSON schema

    def _send(self, request: SendRequest) -> Completion:
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.response_format is not None:
            body["response_format"] = request.response_format
        http = urllib.request.Request(
            f"{self.spec.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.spec.api_key}"},
        )
        try:
            with urllib.request.urlopen(http, timeout=request.timeout) as response:
                reply = json.load(response)
        except urllib.error.HTTPError as e:
            raise HTTPStatusError(e.code, e.read().decode("utf-8", "replace")) from e
        except urllib.error.URLError as e:  # refused, unreachable: retried, then LLMUnavailableError
            raise ConnectionError(str(e.reason)) from e
        choice, usage = reply["choices"][0], reply.get("usage") or {}  # a malformed reply: LLMOutputError
        return Completion(
            choice["message"]["content"] or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason"),
            usage_estimated=not usage,
        )


def served_llm(spec: ServedLLMSpec) -> PlainHTTPChatLLM:
    """The entry point: ``--llm plain-http:MODEL@URL`` builds this adapter (nothing is sent yet)."""
    return PlainHTTPChatLLM(spec)
