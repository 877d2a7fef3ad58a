"""One-SHOT in LlamaIndex (RetrieverQueryEngine + MockLLM, events) and LangChain (compressor in a chain)."""

from __future__ import annotations

from typing import Any

import pytest
from _llama_events import collected_events
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from langchain_core.runnables import RunnableLambda
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.protocol import JsonResult
from retrievekit.core.oneshot import OneShotConfig
from retrievekit.langchain import OneShotCompressor
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import OneShotPostprocessor, RetrieveKitRetriever


def _nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_="a", text="Apples are red fruits. They grow on trees."), score=2.0),
        NodeWithScore(node=TextNode(id_="b", text="Bananas are yellow. " * 10), score=1.5),
        NodeWithScore(node=TextNode(id_="a", text="Apples are red fruits. They grow on trees."), score=0.3),
        NodeWithScore(node=TextNode(id_="c", text="Cherries are small."), score=None),
    ]


def test_postprocessor_in_query_engine_with_mockllm(small_corpus):
    with collected_events() as events:
        from llama_index.core import Document as LIDocument

        retriever = RetrieveKitRetriever.from_documents(
            [LIDocument(text=p.text, id_=p.id) for p in small_corpus], method="bm25", similarity_top_k=6
        )
        pp = OneShotPostprocessor(budget=25)
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=5), node_postprocessors=[pp])
        response = engine.query("Which fruit is yellow?")
    assert str(response).strip()
    assert response.source_nodes and response.source_nodes[0].node.node_id == "banana"
    assert pp.last_result is not None and pp.last_result.tokens_used <= 25
    names = [type(e).__name__ for e in events]
    assert "ReRankStartEvent" in names and "ReRankEndEvent" in names and "RetrieveKitTraceEvent" in names


def test_postprocessor_handles_duplicates_missing_scores_and_no_query():
    pp = OneShotPostprocessor(budget=1000)
    out = pp.postprocess_nodes(_nodes())  # no query: selection still works
    assert [n.node.node_id for n in out].count("a") == 1
    assert {n.node.node_id for n in out} == {"a", "b", "c"}
    assert any(e.kind == "oneshot.scores" for e in pp.last_trace.events)
    assert pp.postprocess_nodes([], query_str="q") == []


def test_postprocessor_crops_with_a_retrievekit_chat_llm_and_adds_neighbours():
    class KeepFirst:
        def complete(self, *a: Any, **k: Any) -> Any: ...

        def complete_json(self, prompt: Any, schema: Any, **k: Any) -> JsonResult:
            return JsonResult(value={"keep": [0]}, raw='{"keep": [0]}')

    corpus = [
        TextNode(id_=f"n{i}", text=f"Clause {i} applies. It has detail {i}.", metadata={"DocumentID": 1, "order": i})
        for i in range(4)
    ]
    pp = OneShotPostprocessor(config=OneShotConfig(budget=200, filter=True, crop=True), llm=KeepFirst(), corpus=corpus)
    out = pp.postprocess_nodes([NodeWithScore(node=corpus[2], score=1.0)], query_str="clause two?")
    ids = [n.node.node_id for n in out]
    assert ids[0] == "n2" and {"n1", "n3"} <= set(ids)
    assert out[0].node.get_content() == "Clause 2 applies."
    assert corpus[2].text == "Clause 2 applies. It has detail 2."  # the caller's node is not mutated


class ListRetriever(LCBaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.docs)


def test_compressor_in_a_langchain_chain(small_corpus):
    base = LCRetriever.from_documents(
        [Document(page_content=p.text, id=p.id) for p in small_corpus], method="bm25", k=6
    )
    comp = OneShotCompressor(budget=25)
    chain = RunnableLambda(lambda q: comp.compress_documents(base.invoke(q), q))
    docs = chain.invoke("Which fruit is yellow?")
    assert docs and docs[0].id == "banana"
    assert sum(d.metadata["oneshot_tokens"] for d in docs) <= 25
    assert comp.last_trace is not None and comp.last_trace.events[-1].kind == "oneshot.select"


def test_compressor_handles_bad_input():
    comp = OneShotCompressor(budget=3)
    docs = [
        Document(page_content="far too long for three tokens here", id="x", metadata={"score": "high"}),
        Document(page_content="far too long for three tokens here", id="x"),
    ]
    assert comp.compress_documents(docs, "q") == []
    assert any(e.kind == "oneshot.budget" for e in comp.last_trace.events)
    assert OneShotCompressor().compress_documents([], "q") == []


def test_compressor_in_contextual_compression_retriever(small_corpus):
    # langchain-classic (in the `langchain` extra) holds LangChain 1.x's ContextualCompressionRetriever
    ccr = ContextualCompressionRetriever(
        base_compressor=OneShotCompressor(budget=5),
        base_retriever=ListRetriever(
            docs=[Document(page_content="a b c", id="1"), Document(page_content="d e f", id="2")]
        ),
    )
    assert [d.id for d in ccr.invoke("q")] == ["1"]
    comp = OneShotCompressor(budget=25)
    base = LCRetriever.from_documents(
        [Document(page_content=p.text, id=p.id) for p in small_corpus], method="bm25", k=6
    )
    docs = ContextualCompressionRetriever(base_compressor=comp, base_retriever=base).invoke("Which fruit is yellow?")
    assert docs and docs[0].id == "banana"
    assert sum(d.metadata["oneshot_tokens"] for d in docs) <= 25
    assert comp.last_trace is not None and comp.last_trace.events[-1].kind == "oneshot.select"


# ------------------------------------------------------------- settings: one source of truth for both edges
def _docs() -> list[Document]:
    return [
        Document(page_content="one two three", id="a", metadata={"score": 0.9}),
        Document(page_content="four five six seven", id="b", metadata={"score": 0.8}),
    ]


def _kept(edge: Any) -> list[str]:
    """The ids of :func:`_docs` that a postprocessor or a compressor keeps."""
    if isinstance(edge, OneShotCompressor):
        return [d.id for d in edge.compress_documents(_docs(), "q")]
    nodes = [NodeWithScore(node=TextNode(id_=d.id, text=d.page_content), score=0.5) for d in _docs()]
    return [n.node.node_id for n in edge.postprocess_nodes(nodes)]


@pytest.mark.parametrize("edge", [OneShotPostprocessor, OneShotCompressor])
def test_settings_scalar_only_config_only_and_both(edge):
    pp = edge(budget=6, k_max=1)
    assert pp.config == OneShotConfig(budget=6, k_max=1) and (pp.budget, pp.k_max) == (6, 1)
    assert edge().config == OneShotConfig()

    cfg = OneShotConfig(budget=6, filter=True, min_relevance=0.1)
    pp = edge(config=cfg)
    assert pp.config is cfg and (pp.budget, pp.filter) == (6, True)
    assert _kept(pp) == ["a"]

    # both: an explicitly given scalar wins over the config's field; the other fields keep the config's values
    pp = edge(budget=100, k_max=None, filter=False, config=OneShotConfig(budget=6, k_max=1, filter=True))
    assert pp.config == OneShotConfig(budget=100, k_max=None, filter=False)
    assert (pp.budget, pp.k_max, pp.filter) == (100, None, False)
    pp = edge(budget=4000, config=OneShotConfig(budget=6, min_relevance=0.1))  # = default, still wins
    assert pp.config == OneShotConfig(budget=4000, min_relevance=0.1)
    pp = edge(budget=7, config=cfg)
    assert pp.config == OneShotConfig(budget=7, filter=True, min_relevance=0.1)
    assert _kept(pp) == ["a", "b"]

    with pytest.raises(ValueError, match="budget must be a positive int"):  # the compressor's: in a ValidationError
        edge(budget=0, config=cfg)


@pytest.mark.parametrize("edge", [OneShotPostprocessor, OneShotCompressor])
def test_both_edges_read_a_config_mapping_by_one_rule(edge):
    assert edge(config={"budget": 6, "filter": "true"}).config == OneShotConfig(budget=6, filter=True)
    with pytest.raises(InvalidInputError, match="unknown OneShotConfig option.*bogus"):
        edge(config={"bogus": 6})  # was silently dropped by the compressor's pydantic field
    with pytest.raises(InvalidInputError, match="config must be a OneShotConfig or a mapping"):
        edge(config=6)


def test_both_edges_resolve_the_same_settings():
    cfg = OneShotConfig(budget=50, k_max=4, tokenizer="regex", crop_max_chunks=2)
    for kwargs in ({}, {"budget": 9}, {"k_max": None, "filter": True}, {"tokenizer": "regex", "crop": False}):
        assert OneShotPostprocessor(config=cfg, **kwargs).config == OneShotCompressor(config=cfg, **kwargs).config
        assert OneShotPostprocessor(config=cfg, **kwargs).config == cfg.with_overrides(**kwargs)
