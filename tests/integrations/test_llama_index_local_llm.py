"""LocalLlamaIndexLLM: the local model as a LlamaIndex LLM inside a real query engine (tiny random-weight model)."""

from __future__ import annotations

from typing import Any

import pytest
from _corpora import FRUIT
from _llama_events import collected_events
from _tiny_lm import tiny_local_lm
from llama_index.core import Document
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm import LocalLM
from retrievekit.core.trace import Trace
from retrievekit.llama_index import LlamaIndexChatLLM, LocalLlamaIndexLLM, RetrieveKitRetriever


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    return tiny_local_lm()


def test_query_engine_answers_with_the_local_model(lm: LocalLM) -> None:
    docs = [Document(text=p.text, id_=p.id) for p in FRUIT]
    retriever = RetrieveKitRetriever.from_documents(docs, method="bm25", similarity_top_k=2)
    llm = LocalLlamaIndexLLM(lm, max_new_tokens=12)
    question = "Which river flows into the Mediterranean, and which mountain is highest?"
    with collected_events() as events:
        response = RetrieverQueryEngine.from_args(retriever, llm=llm).query(question)
    # the source nodes are the retriever's hits
    assert [n.node.node_id for n in response.source_nodes] == [n.node.node_id for n in retriever.retrieve(question)]
    assert {n.node.node_id for n in response.source_nodes} == {"nile", "everest"}
    # the answer is what the local model generates (greedy) for the chat the engine sent, context included
    sent = [e for e in events if type(e).__name__ == "LLMChatStartEvent"]
    assert len(sent) == 1
    messages = sent[0].messages
    assert "The Nile is a major river" in messages[-1].content and "Mount Everest" in messages[-1].content
    expected = lm.complete(LocalLlamaIndexLLM.to_messages(messages), max_tokens=12).text
    assert str(response) == expected and expected.strip()
    assert llm.last_trace is not None and llm.last_trace.llm_calls == 1
    assert 1 <= llm.last_trace.completion_tokens <= 12


def test_complete_chat_stream_and_settings(lm: LocalLM) -> None:
    llm = LocalLlamaIndexLLM(lm, max_new_tokens=6)
    meta = llm.metadata
    assert meta.is_chat_model and meta.model_name == "tiny" and meta.num_output == 6
    assert meta.context_window == 1024  # the tiny model's max_position_embeddings
    assert LocalLlamaIndexLLM(lm, context_window=512).metadata.context_window == 512
    done = llm.complete("Solar panels")
    assert done.text == lm.complete("Solar panels", max_tokens=6).text
    assert done.additional_kwargs["completion_tokens"] <= 6
    assert [r.delta for r in llm.stream_complete("Solar panels")] == [done.text]
    chat = llm.chat([ChatMessage(role=MessageRole.USER, content="Solar panels")])
    assert chat.message.content == done.text  # one user turn through the same chat template
    assert [r.message.content for r in llm.stream_chat([ChatMessage(role="user", content="Solar panels")])] == [
        done.text
    ]
    longer = llm.complete("Solar panels", max_new_tokens=20)  # a per-call override
    assert longer.text == lm.complete("Solar panels", max_tokens=20).text
    assert 6 < longer.additional_kwargs["completion_tokens"] <= 20
    roles = LocalLlamaIndexLLM.to_messages(
        [ChatMessage(role="developer", content="a"), ChatMessage(role="chatbot", content="b")]
    )
    assert [m.role for m in roles] == ["system", "assistant"]
    # wrapped back for retrievekit components, the exact token counts travel (no len//4 estimate)
    trace = Trace()
    LlamaIndexChatLLM(llm).complete("Wind farms", trace=trace)
    assert trace.completion_tokens == llm.last_trace.completion_tokens
    assert not [e for e in trace.events if e.kind == "token_estimate"]
    # every call so far is in usage: complete, stream_complete, chat, stream_chat, the override, the wrapped one
    assert llm.usage.llm_calls == 6 and llm.usage.completion_tokens >= longer.additional_kwargs["completion_tokens"]
    llm.reset_usage()
    assert llm.usage.llm_calls == 0


def test_a_registry_name_is_loaded_lazily(lm: LocalLM, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_load(name: str = "smollm2", **kw: Any) -> LocalLM:
        calls.append(name)
        return lm

    monkeypatch.setattr(LocalLM, "load", staticmethod(fake_load))
    llm = LocalLlamaIndexLLM("smollm2", max_new_tokens=4)
    assert calls == [] and llm.model_name == "smollm2"  # constructing loads nothing
    assert llm.complete("Wind farms").text == lm.complete("Wind farms", max_tokens=4).text
    assert llm.complete("Wind farms").text and calls == ["smollm2"]  # loaded once, on first use
    assert LocalLlamaIndexLLM(model_name="qwen0.5b").model_name == "qwen0.5b"


def test_bad_settings_are_refused_up_front(lm: LocalLM) -> None:
    with pytest.raises(InvalidInputError, match="unknown local model 'gpt-9'"):
        LocalLlamaIndexLLM("gpt-9")
    with pytest.raises(InvalidInputError, match="max_new_tokens"):
        LocalLlamaIndexLLM(lm, max_new_tokens=0)
    with pytest.raises(InvalidInputError, match="registry name or a LocalLM"):
        LocalLlamaIndexLLM(42)
    with pytest.raises(InvalidInputError, match="max_new_tokens"):
        LocalLlamaIndexLLM(lm).complete("x", max_new_tokens=-1)
