"""MindRefRetriever for LlamaIndex and LangChain (tiny real model)."""

from __future__ import annotations

import pytest
from _tiny_lm import SENTENCES, TITLES, build_tiny_lm

from retrievekit.core.generative import MindRefConfig
from retrievekit.core.llm import LocalLM

CFG = {"title_beams": 3, "passage_beams": 2, "prefix_tokens": 4, "passage_tokens": 10}


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    model, tok = build_tiny_lm()
    return LocalLM(model, tok, name="tiny")


def test_llama_index(lm: LocalLM) -> None:
    from llama_index.core import Document

    from retrievekit.llama_index import MindRefRetriever

    docs = [Document(id_=f"d{i}", text=SENTENCES[i], metadata={"title": TITLES[i % 6]}) for i in range(4)]
    r = MindRefRetriever.from_documents(docs, lm=lm, **CFG)
    nodes = r.retrieve("solar power")
    assert 1 <= len(nodes) <= 2
    for n in nodes:
        assert n.node.get_content() in SENTENCES[int(n.node.node_id[1:])]
        assert n.node.metadata["title"] in TITLES
    assert r.last_trace is not None and r.last_trace.llm_calls >= 2
    r2 = MindRefRetriever.from_documents(docs, lm=lm, config=MindRefConfig(title_beams=2, title_return=1))
    assert len(r2.retrieve("wind")) == 1


def test_langchain(lm: LocalLM) -> None:
    from langchain_core.documents import Document

    from retrievekit.langchain import MindRefRetriever

    docs = [Document(page_content=SENTENCES[i], metadata={"title": TITLES[i % 6]}, id=f"d{i}") for i in range(4)]
    r = MindRefRetriever.from_documents(docs, lm=lm, **CFG)
    out = r.invoke("wind farms", k=1)
    assert len(out) == 1
    assert out[0].page_content in SENTENCES[int(out[0].id[1:])]
    assert "title_score" in out[0].metadata and r.mindref.config.title_beams == 3
