"""LlamaIndex and LangChain chat models as retrievekit ChatLLMs: replies, token counts, JSON retry paths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.llm.protocol import ChatLLM, ChatMessage
from retrievekit.core.trace import Trace

pytest.importorskip("llama_index.core")
pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    FakeListChatModel,
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage as LIChatMessage  # noqa: E402
from llama_index.core.base.llms.types import ChatResponse  # noqa: E402
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402

from retrievekit.langchain.llm import LangChainChatLLM  # noqa: E402
from retrievekit.llama_index.llm import LlamaIndexChatLLM  # noqa: E402


class Verdict(BaseModel):
    relevant: bool
    reason: str


class ScriptedLLM(CustomLLM):
    """A LlamaIndex CustomLLM that replies from a script and remembers the prompts."""

    replies: list[str] = []
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.replies.pop(0))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
        yield self.complete(prompt, formatted=formatted, **kwargs)


class UsageLLM(ScriptedLLM):
    """Reports OpenAI-style usage in ``raw`` like llama-index-llms-openai does."""

    def chat(self, messages: Sequence[LIChatMessage], **kwargs: Any) -> ChatResponse:
        text = self.replies.pop(0)
        return ChatResponse(
            message=LIChatMessage(role="assistant", content=text),
            raw={"usage": {"prompt_tokens": 42, "completion_tokens": 7}},
        )


# --------------------------------------------------------------------------- LlamaIndex


def test_llama_index_complete_estimates_tokens_and_notes_it() -> None:
    llm = LlamaIndexChatLLM(ScriptedLLM(replies=["Paris"], prompts=[]))
    assert isinstance(llm, ChatLLM)
    t = Trace()
    c = llm.complete([ChatMessage("system", "Be brief."), ChatMessage("user", "Capital of France?")], trace=t)
    assert c.text == "Paris"
    assert t.llm_calls == 1 and t.prompt_tokens == c.prompt_tokens > 0 and t.completion_tokens == c.completion_tokens
    assert [e.kind for e in t.events] == ["token_estimate"]
    assert "Capital of France?" in llm.llm.prompts[0]  # type: ignore[attr-defined]


def test_llama_index_usage_from_raw() -> None:
    t = Trace()
    c = LlamaIndexChatLLM(UsageLLM(replies=["ok"], prompts=[])).complete("hi", trace=t)
    assert (c.prompt_tokens, c.completion_tokens) == (42, 7)
    assert (t.prompt_tokens, t.completion_tokens) == (42, 7) and t.events == []


def test_llama_index_complete_json_repair_and_retry() -> None:
    scripted = ScriptedLLM(
        replies=["I think it is relevant.", "```json\n{'relevant': True, 'reason': 'mentions aspirin',}\n```"],
        prompts=[],
    )
    t = Trace()
    r = LlamaIndexChatLLM(scripted).complete_json("Is the passage relevant?", Verdict, trace=t)
    assert r.value == Verdict(relevant=True, reason="mentions aspirin")
    assert r.attempts == 2 and r.repaired
    assert [e.kind for e in t.events if e.kind.startswith("json")] == ["json_retry", "json_repair"]
    assert t.llm_calls == 2
    assert '"relevant"' in scripted.prompts[0]  # the schema is in the prompt
    assert "not valid" in scripted.prompts[1]  # the retry carries the error


def test_llama_index_complete_json_gives_up_with_llm_output_error() -> None:
    t = Trace()
    llm = LlamaIndexChatLLM(ScriptedLLM(replies=["no", "still no", '{"relevant": "maybe"}'], prompts=[]))
    with pytest.raises(LLMOutputError) as info:
        llm.complete_json("q", Verdict, trace=t, retries=2)
    assert info.value.raw == '{"relevant": "maybe"}'
    assert [e.kind for e in t.events if e.kind.startswith("json")] == ["json_retry", "json_retry", "json_failed"]
    assert t.llm_calls == 3


def test_llama_index_always_sends_the_calls_own_limits() -> None:
    seen: list[dict[str, Any]] = []

    class Spy(ScriptedLLM):
        def chat(self, messages: Sequence[LIChatMessage], **kwargs: Any) -> ChatResponse:
            seen.append(dict(kwargs))
            return ChatResponse(message=LIChatMessage(role="assistant", content="x"))

    LlamaIndexChatLLM(Spy(replies=[], prompts=[])).complete("hi", max_tokens=9)
    with pytest.warns(DeprecationWarning, match="forward_generation_kwargs"):
        off = LlamaIndexChatLLM(Spy(replies=[], prompts=[]), forward_generation_kwargs=False)
    off.complete("hi", max_tokens=7)
    assert seen == [{"max_tokens": 9, "temperature": 0.0}, {"max_tokens": 7, "temperature": 0.0}]


def test_llama_index_llm_that_refuses_limits_is_noted_on_every_call() -> None:
    class NoKwargs(ScriptedLLM):
        def chat(self, messages: Sequence[LIChatMessage]) -> ChatResponse:  # type: ignore[override]
            return ChatResponse(message=LIChatMessage(role="assistant", content="x"))

    llm, t = LlamaIndexChatLLM(NoKwargs(replies=[], prompts=[])), Trace()
    assert llm.complete("hi", max_tokens=5, trace=t).text == "x"
    llm.complete("hi again", max_tokens=5, trace=t)
    assert not llm.limits_sent and t.counters["llm.limits_not_sent"] == 2
    assert [e.kind for e in t.events].count("limit_not_sent") == 2


# --------------------------------------------------------------------------- LangChain


def test_langchain_complete_and_estimate() -> None:
    llm = LangChainChatLLM(FakeListChatModel(responses=["Paris"]))
    assert isinstance(llm, ChatLLM)
    t = Trace()
    c = llm.complete([ChatMessage("system", "Be brief."), ChatMessage("user", "Capital?")], trace=t)
    assert c.text == "Paris" and t.llm_calls == 1 and c.completion_tokens == 1
    assert [e.kind for e in t.events] == ["token_estimate"]


def test_langchain_usage_metadata_is_recorded() -> None:
    msg = AIMessage(content="ok", usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15})
    t = Trace()
    c = LangChainChatLLM(FakeMessagesListChatModel(responses=[msg])).complete("hi", trace=t)
    assert (c.prompt_tokens, c.completion_tokens) == (12, 3)
    assert (t.prompt_tokens, t.completion_tokens) == (12, 3) and t.events == []


def test_langchain_complete_json_retry_then_success() -> None:
    fake = FakeListChatModel(responses=['{"relevant": true}', '{"relevant": true, "reason": "ok"}'])
    t = Trace()
    r = LangChainChatLLM(fake).complete_json("q", Verdict, trace=t)
    assert r.value == Verdict(relevant=True, reason="ok") and r.attempts == 2 and not r.repaired
    assert [e.kind for e in t.events if e.kind.startswith("json")] == ["json_retry"]


def test_langchain_complete_json_gives_up() -> None:
    fake = FakeListChatModel(responses=["nope", "no JSON either"])
    t = Trace()
    with pytest.raises(LLMOutputError, match="after 2 attempt"):
        LangChainChatLLM(fake).complete_json("q", {"type": "object", "required": ["a"]}, trace=t, retries=1)
    assert [e.kind for e in t.events if e.kind.startswith("json")] == ["json_retry", "json_failed"]


def test_langchain_message_conversion() -> None:
    msgs = LangChainChatLLM.to_langchain_messages(
        [ChatMessage("system", "s"), ChatMessage("user", "u"), ChatMessage("assistant", "a"), ChatMessage("tool", "t")]
    )
    assert [m.type for m in msgs] == ["system", "human", "ai", "tool"]
