"""The baseline retrievers where users put them: a LlamaIndex query engine and a LangChain chain."""

from __future__ import annotations

import pytest
from _corpora import FRUIT
from _lcel import run_rag_chain
from _llama_events import collected_events
from _standard_suite import StandardSuite
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.hybrid import HybridRetriever
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever
from retrievekit.llama_index import RetrieveKitTraceEvent


def test_llama_index_query_engine_uses_the_retriever():
    docs = [LIDocument(text=p.text, id_=p.id, metadata={"title": p.title}) for p in FRUIT]
    retriever = LIRetriever.from_documents(docs, method="bm25", similarity_top_k=2)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    with collected_events() as events:
        resp = engine.query("Which river flows into the Mediterranean, and which mountain is highest?")
    assert {n.node.node_id for n in resp.source_nodes} == {"nile", "everest"}
    assert "Nile" in str(resp)  # MockLLM echoes the prompt, which carries the retrieved context
    assert any(isinstance(e, RetrieveKitTraceEvent) for e in events)
    assert retriever.last_trace is not None and "bm25" in retriever.last_trace.stage_seconds


async def test_llama_index_async_retrieve():
    r = LIRetriever(BM25Index.build(FRUIT), similarity_top_k=1)
    nodes = await r.aretrieve("bananas potassium")
    assert nodes[0].node.node_id == "banana"


def test_llama_index_hybrid_from_documents_with_cache(tmp_path):
    docs = [LIDocument(text=p.text, id_=p.id) for p in FRUIT]
    r1 = LIRetriever.from_documents(docs, method="hybrid", work_dir=tmp_path, similarity_top_k=1)
    assert r1.retrieve("tallest peak")[0].node.node_id == "everest"
    cached = sorted(p.name.split("-")[0] for p in tmp_path.iterdir())
    assert cached == ["bm25", "dense"]
    r2 = LIRetriever.from_documents(docs, method="hybrid", work_dir=tmp_path, similarity_top_k=1)
    assert r2.retrieve("tallest peak")[0].node.node_id == "everest"


def test_langchain_rag_chain_with_the_retriever():
    retriever = LCRetriever(retriever=BM25Index.build(FRUIT), k=2)
    answer, docs = run_rag_chain(retriever, "Which river is in Africa? Is it near a mountain?", "The Nile.")
    seen = [d.id for d in docs]
    assert answer == "The Nile."
    assert seen[0] == "nile" and set(seen) == {"nile", "everest"}


def test_langchain_batch_and_k_override():
    retriever = LCRetriever(retriever=BM25Index.build(FRUIT), k=3)
    out = retriever.batch(["mountain", "programming language"])
    assert out[0][0].id == "everest" and {d.id for d in out[1][:2]} == {"python", "rust"}
    assert len(retriever.invoke("programming language", k=1)) == 1
    with pytest.raises(ValueError):
        retriever.invoke("   ")


class TestLangChainStandardRetriever(StandardSuite):
    """langchain-tests' standard retriever suite."""

    constructor, k = LCRetriever, 2

    def make_core(self):
        return BM25Index.build(FRUIT)


@pytest.fixture(scope="module")
def fruit_indexes(tmp_path_factory, minilm) -> None:
    """The dense index (real MiniLM, real Chroma in a tmp folder) and the hybrid over it, built once for the module."""
    dense = DenseIndex.build(FRUIT, path=tmp_path_factory.mktemp("fruit") / "dense", embedder=minilm)
    TestLangChainStandardDense.core = dense
    # build_hybrid's defaults (RRF k=60, equal weights), over the same dense index instead of a second copy
    TestLangChainStandardHybrid.core = HybridRetriever(
        [dense, BM25Index.build(FRUIT)], [0.5, 0.5], names=["dense", "bm25"]
    )


@pytest.mark.usefixtures("fruit_indexes")
class TestLangChainStandardDense(StandardSuite):
    """The standard suite over the dense baseline (default settings)."""

    core: DenseIndex
    constructor = LCRetriever


@pytest.mark.usefixtures("fruit_indexes")
class TestLangChainStandardHybrid(TestLangChainStandardDense):
    """The standard suite over the hybrid BM25 + dense baseline (default settings)."""

    core: HybridRetriever
