"""The judge as a LlamaIndex node postprocessor (RetrieverQueryEngine) and a LangChain document compressor (LCEL),
and judged methods (LATTICE slates, One-SHOT cropping) inside a LlamaIndex query engine and an LCEL chain."""

from __future__ import annotations

from typing import Any

import pytest
from _corpora import FRUIT
from _judges import OverlapJudge
from _lcel import run_rag_chain
from _llama_events import collected_events
from _tiny_lm import build_tiny_lm
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.judge import Judge
from retrievekit.core.lattice import Lattice, LatticeConfig, SemanticTree
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.types import Passage
from retrievekit.langchain import JudgeCompressor
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import JudgeReranker, RetrieveKitRetriever


class YellowJudge:
    """A stand-in judge: the ranking it gives is what the edges must reproduce."""

    def score_relevance(self, query: str, candidates: list[str], *, trace: Any = None) -> list[float]:
        if trace is not None:
            trace.record_llm_call(prompt_tokens=len(candidates), completion_tokens=0)
        return [0.95 if "yellow" in c else 0.05 for c in candidates]


def test_reranker_in_query_engine(small_corpus):
    with collected_events() as events:
        from llama_index.core import Document as LIDocument

        retriever = RetrieveKitRetriever.from_documents(
            [LIDocument(text=p.text, id_=p.id) for p in small_corpus], method="bm25", similarity_top_k=6
        )
        pp = JudgeReranker(judge=YellowJudge(), top_n=2)
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=5), node_postprocessors=[pp])
        response = engine.query("Which fruits are there?")
    assert response.source_nodes[0].node.node_id == "banana"
    assert response.source_nodes[0].score == pytest.approx(0.95)
    assert "first_stage_score" in response.source_nodes[0].node.metadata
    assert len(response.source_nodes) <= 2 and pp.last_trace is not None and pp.last_trace.llm_calls == 1
    names = [type(e).__name__ for e in events]
    assert "ReRankStartEvent" in names and "ReRankEndEvent" in names and "RetrieveKitTraceEvent" in names


def test_reranker_with_a_real_tiny_judge_and_bad_input():
    model, tok = build_tiny_lm()
    pp = JudgeReranker(judge=Judge(model, tok), top_n=3)
    nodes = [NodeWithScore(node=TextNode(id_=str(i), text=f"text {i}"), score=float(i)) for i in range(4)]
    out = pp.postprocess_nodes(nodes, query_str="text 2")
    assert len(out) == 3 and all(0.0 < n.score < 1.0 for n in out)
    assert nodes[0].node.metadata == {}  # the caller's nodes are not mutated
    assert pp.postprocess_nodes([], query_str="q") == []
    with pytest.raises(InvalidInputError):
        pp.postprocess_nodes(nodes)
    with pytest.raises(InvalidInputError):
        JudgeReranker(judge=YellowJudge(), top_n=0)


def test_compressor_in_a_langchain_chain(small_corpus):
    base = LCRetriever.from_documents(
        [Document(page_content=p.text, id=p.id) for p in small_corpus], method="bm25", k=6
    )
    comp = JudgeCompressor(judge=YellowJudge(), top_n=2)
    chain = RunnableLambda(lambda q: comp.compress_documents(base.invoke(q), q))
    docs = chain.invoke("Which fruits are there?")
    assert docs[0].id == "banana" and docs[0].metadata["relevance_score"] == pytest.approx(0.95)
    assert len(docs) <= 2 and comp.last_trace is not None and comp.last_trace.llm_calls == 1
    assert comp.compress_documents([], "q") == []
    with pytest.raises(ValueError):
        JudgeCompressor(judge=object())


def test_compressor_in_contextual_compression_retriever(small_corpus):
    base = LCRetriever.from_documents(
        [Document(page_content=p.text, id=p.id) for p in small_corpus], method="bm25", k=6
    )
    comp = JudgeCompressor(judge=YellowJudge(), top_n=2)
    docs = ContextualCompressionRetriever(base_compressor=comp, base_retriever=base).invoke("Which fruits are there?")
    assert docs[0].id == "banana" and docs[0].metadata["relevance_score"] == pytest.approx(0.95)
    assert len(docs) <= 2 and comp.last_trace is not None and comp.last_trace.llm_calls == 1


# ---------------------------------------------------------------------- judged methods where users put them
def test_llama_index_query_engine_with_judged_lattice_and_judged_cropping():
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from retrievekit.llama_index import LatticeRetriever, OneShotPostprocessor

    judge = OverlapJudge()
    docs = [*FRUIT, Passage(id="nile2", text="The Nile is long. Cairo lies on the Nile river.", title="Nile facts")]
    lat = Lattice(SemanticTree.flat(docs), judge, LatticeConfig(num_iters=3))
    crop = OneShotPostprocessor(config=OneShotConfig(budget=500, crop=True, crop_judge_threshold=0.5), llm=judge)
    engine = RetrieverQueryEngine.from_args(
        LatticeRetriever(lat, similarity_top_k=2), llm=MockLLM(), node_postprocessors=[crop]
    )
    resp = engine.query("Which city lies on the Nile river?")
    ids = [n.node.node_id for n in resp.source_nodes]
    assert "nile2" in ids
    nile2 = next(n for n in resp.source_nodes if n.node.node_id == "nile2")
    assert nile2.node.get_content() == "Cairo lies on the Nile river."  # the judge's sentence, exact span
    assert judge.chat_calls == 0 and len(judge.judge_calls) >= 2  # slates + one crop, no prompt


def test_langchain_lcel_chain_with_judged_lattice():
    from retrievekit.langchain import LatticeRetriever

    judge = OverlapJudge()
    r = LatticeRetriever(retriever=Lattice(SemanticTree.flat(list(FRUIT)), judge), k=1)
    answer, docs = run_rag_chain(r, "Rust systems programming language memory safety", "Rust.")
    seen = [d.id for d in docs]
    assert answer == "Rust."
    assert seen == ["rust"] and r.last_trace.counters["lattice.judge_slates"] >= 1
