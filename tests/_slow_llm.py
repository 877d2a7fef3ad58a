"""Scripted models that answer each call after a fixed delay, through the async API or the sync one, and count
which was used: the LlamaIndex ``SlowLLM`` (a ``CustomLLM``), the LangChain ``SlowChatModel`` and
``SlowToolChatModel`` (a ``ScriptedToolChatModel``, for the agent). Their replies come from :class:`_lattice.KeywordLLM` (LATTICE slates) or keep a
chunk's first sentence (One-SHOT cropping); the delay, and which method waited it, is the point of the async tests.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from _lattice import KeywordLLM
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms import CustomLLM
from pydantic import BaseModel, PrivateAttr

from retrievekit.langgraph.testing import ScriptedToolChatModel


class Calls:
    """Thread-safe counts of the sync and async calls of one scripted model."""

    def __init__(self) -> None:
        self.sync = 0
        self.async_ = 0
        self._lock = threading.Lock()

    def add(self, *, sync: bool) -> None:
        with self._lock:
            if sync:
                self.sync += 1
            else:
                self.async_ += 1


class Slow(BaseModel):
    """What the slow models share: the ``delay`` each call waits, ``calls`` (how many waited on each path), and the
    wait itself (``time.sleep`` on the sync path, ``await asyncio.sleep`` on the async one)."""

    delay: float = 0.3
    _calls: Calls = PrivateAttr(default_factory=Calls)

    @property
    def calls(self) -> Calls:
        return self._calls

    def _wait(self) -> None:
        self._calls.add(sync=True)
        time.sleep(self.delay)

    async def _await(self) -> None:
        self._calls.add(sync=False)
        await asyncio.sleep(self.delay)


def scripted_text(prompt: str) -> str:
    """A LATTICE slate's scores by keyword overlap (``KeywordLLM``); any other prompt keeps sentence 0."""
    if "Query:" in prompt:
        return KeywordLLM().complete(prompt).text
    return '{"keep": [0]}'


class SlowLLM(Slow, CustomLLM):
    """A LlamaIndex LLM answering each call after ``delay`` seconds: ``time.sleep`` in ``complete`` / ``chat``,
    ``await asyncio.sleep`` in ``acomplete`` / ``achat``; ``calls`` counts each kind."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="slow-scripted", is_chat_model=True)

    def _text(self, messages: Any) -> str:
        return scripted_text(str(messages[-1].content) if not isinstance(messages, str) else messages)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self._wait()
        return CompletionResponse(text=self._text(prompt))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        self._wait()
        return ChatResponse(message=ChatMessage(role="assistant", content=self._text(messages)))

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        await self._await()
        return CompletionResponse(text=self._text(prompt))

    async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        await self._await()
        return ChatResponse(message=ChatMessage(role="assistant", content=self._text(messages)))


class SlowToolChatModel(Slow, ScriptedToolChatModel):
    """A ``ScriptedToolChatModel`` whose every reply takes ``delay`` seconds: ``time.sleep`` on the sync path,
    ``await asyncio.sleep`` on the async one (``calls`` counts each)."""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self._wait()
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        await self._await()
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, stop, kwargs))])


class SlowChatModel(Slow, BaseChatModel):
    """A LangChain chat model answering :func:`scripted_text` after ``delay`` seconds: ``time.sleep`` in
    ``_generate``, ``await asyncio.sleep`` in ``_agenerate``; ``calls`` counts each kind."""

    @property
    def _llm_type(self) -> str:
        return "slow-scripted"

    def _result(self, messages: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(scripted_text(messages[-1].text)))])

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self._wait()
        return self._result(messages)

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        await self._await()
        return self._result(messages)
