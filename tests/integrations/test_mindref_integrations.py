"""MindRefRetriever for LlamaIndex and LangChain (tiny real model)."""

from __future__ import annotations

import pytest
from _standard_suite import StandardSuite
from _tiny_lm import SENTENCES, TITLES, tiny_local_lm

from retrievekit.core.generative import MindRef, MindRefConfig
from retrievekit.core.llm import LocalLM
from retrievekit.core.types import Passage
from retrievekit.langchain import MindRefRetriever as LCMindRef

CFG = {"title_beams": 3, "passage_beams": 2, "prefix_tokens": 4, "passage_tokens": 10}


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    return tiny_local_lm()


def test_llama_index(lm: LocalLM) -> None:
    from llama_index.core import Document

    from retrievekit.llama_index import MindRefRetriever

    docs = [Document(id_=f"d{i}", text=SENTENCES[i], metadata={"title": TITLES[i % 6]}) for i in range(4)]
    r = MindRefRetriever.from_documents(docs, llm=lm, **CFG)
    nodes = r.retrieve("solar power")
    assert len(nodes) == 2  # similarity_top_k (default 2)
    for n in nodes:
        assert n.node.get_content() in SENTENCES[int(n.node.node_id[1:])]
        assert n.node.metadata["title"] in TITLES
    assert r.last_trace is not None and r.last_trace.llm_calls >= 2
    r2 = MindRefRetriever.from_documents(docs, llm=lm, config=MindRefConfig(title_beams=2, title_return=1))
    assert len(r2.retrieve("wind")) == 2  # k=2 > 1 title: the second title of the same search widens it
    assert [e.kind for e in r2.last_trace.events].count("widen_to_k") == 1
    paper = MindRefConfig(title_beams=2, title_return=1, widen_to_k=False)
    r3 = MindRefRetriever.from_documents(docs, llm=lm, config=paper)
    assert len(r3.retrieve("wind")) == 1
    assert any(e.kind == "short_of_k" for e in r3.last_trace.events)  # never silently short


def test_langchain(lm: LocalLM) -> None:
    from langchain_core.documents import Document

    from retrievekit.langchain import MindRefRetriever

    docs = [Document(page_content=SENTENCES[i], metadata={"title": TITLES[i % 6]}, id=f"d{i}") for i in range(4)]
    r = MindRefRetriever.from_documents(docs, llm=lm, **CFG)
    out = r.invoke("wind farms", k=1)
    assert len(out) == 1
    assert out[0].page_content in SENTENCES[int(out[0].id[1:])]
    assert "title_score" in out[0].metadata and r.mindref.config.title_beams == 3


@pytest.fixture(scope="module")
def standard_mindref(lm: LocalLM) -> None:
    """One MindRef with the default settings for the standard suite (the module's tiny model)."""
    docs = [Passage(id=f"d{i}", title=TITLES[i], text=" ".join(SENTENCES[i : i + 3])) for i in range(6)]
    TestLangChainStandardMindRef.core = MindRef(docs, lm)  # MindRefConfig() defaults


@pytest.mark.usefixtures("standard_mindref")
class TestLangChainStandardMindRef(StandardSuite):
    """langchain-tests' standard retriever suite with MindRef's default settings (reference beams, 2 titles): ``k``
    above the 2 titles' hits is honoured by widening to the next titles of the same search."""

    core: MindRef
    constructor, query = LCMindRef, "Which power source uses sunlight?"
