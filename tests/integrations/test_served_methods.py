"""Every LLM method end to end through a served LLM, where users put it: llama.cpp's real server serving SmolLM2,
reached through ``OpenAILike`` inside a LlamaIndex ``RetrieverQueryEngine`` and through ``ChatOpenAI`` inside a
LangChain LCEL chain or a LangGraph run. Each run's trace shows the server answered (requests, schema-mode JSON) and
that no stage fell back because of the served path."""

from __future__ import annotations

import pytest
from _arm import QUESTION, corpus
from _corpora import FRUIT
from _llama_server import chat_openai, module_server, openai_like
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from llama_index.core import Document as LIDocument
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.index import BM25Index
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.trace import Trace

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

POLICY = CallPolicy(timeout=180, backoff=0.1)


server = module_server()


def _li_llm(server):
    from retrievekit.llama_index import LlamaIndexChatLLM

    return LlamaIndexChatLLM(openai_like(server), policy=POLICY)


def _lc_llm(server):
    from retrievekit.langchain import LangChainChatLLM

    return LangChainChatLLM(chat_openai(server), policy=POLICY)


def _engine(retriever, server, **kwargs):
    return RetrieverQueryEngine.from_args(retriever, llm=openai_like(server, max_tokens=24), **kwargs)


def _chain(retriever, server):
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nAnswer in a few words: {question}")

    def fmt(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    answer = chat_openai(server, max_tokens=24)
    return {"context": retriever | fmt, "question": RunnablePassthrough()} | prompt | answer | StrOutputParser()


def _served_cleanly(t: Trace) -> None:
    """The server answered every call and nothing fell back because of the served path."""
    kinds = [e.kind for e in t.events]
    assert t.llm_calls >= 1 and "llm.failed_requests" not in t.counters
    assert "json_failed" not in kinds and "fallback" not in kinds, [e.message for e in t.events if e.kind == "fallback"]


def _li_docs() -> list[LIDocument]:
    return [LIDocument(text=f"{p.title}: {p.text}", id_=p.id) for p in FRUIT]


def _lc_docs() -> list[Document]:
    return [Document(page_content=f"{p.title}: {p.text}", id=p.id) for p in FRUIT]


# ------------------------------------------------------------------------------------------------ LATTICE


def test_lattice_built_and_searched_through_openai_like_in_a_query_engine(server, minilm, tmp_path):
    from retrievekit.llama_index import LatticeRetriever

    r = LatticeRetriever.from_documents(
        _li_docs(),
        llm=openai_like(server),
        embedder=minilm,
        tree_dir=tmp_path / "tree",
        max_children=3,
        similarity_top_k=2,
        num_iters=2,
    )
    meta = r.lattice.tree.meta
    assert meta["llm_calls"] >= 1 and meta.get("extractive_summaries", 0) == 0  # every summary from the server
    resp = _engine(r, server).query("Which river flows into the Mediterranean?")
    assert resp.source_nodes and str(resp).strip()
    _served_cleanly(r.last_trace)
    assert r.last_trace.counters["json.json_schema"] >= 1


def test_lattice_built_and_searched_through_chat_openai_in_an_lcel_chain(server, minilm):
    from retrievekit.langchain import LatticeRetriever

    r = LatticeRetriever.from_documents(
        _lc_docs(), llm=chat_openai(server), embedder=minilm, max_children=3, k=2, num_iters=2
    )
    assert _chain(r, server).invoke("Which language is used for data science?").strip()
    _served_cleanly(r.last_trace)


# ------------------------------------------------------------------------------------------------ ARM


def test_arm_through_openai_like_in_a_query_engine(server):
    from retrievekit.llama_index import ArmRetriever

    r = ArmRetriever.from_documents(corpus(), llm=openai_like(server), similarity_top_k=3, ilp_k=4)
    resp = _engine(r, server).query(QUESTION)
    assert resp.source_nodes
    _served_cleanly(r.last_trace)


def test_arm_through_chat_openai_in_an_lcel_chain(server):
    from retrievekit.langchain import ArmRetriever

    docs = [Document(page_content=f"{p.title}: {p.text}", id=p.id) for p in FRUIT]
    r = ArmRetriever.from_documents(docs, llm=chat_openai(server), k=2, ilp_k=4)
    assert _chain(r, server).invoke("Which fruit is yellow?").strip()
    _served_cleanly(r.last_trace)


# ------------------------------------------------------------------------------------------------ One-SHOT cropping


def test_oneshot_cropping_through_openai_like_in_a_query_engine(server):
    from retrievekit.llama_index import OneShotPostprocessor, RetrieveKitRetriever

    docs = [LIDocument(text=f"{p.text} It is often discussed. People like it.", id_=p.id) for p in FRUIT]
    base = RetrieveKitRetriever.from_documents(docs, method="bm25", similarity_top_k=3)
    pp = OneShotPostprocessor(budget=400, crop=True, llm=openai_like(server))
    resp = _engine(base, server, node_postprocessors=[pp]).query("Which fruit is yellow?")
    assert resp.source_nodes
    t = pp.last_trace
    _served_cleanly(t)
    assert "oneshot.crop" in t.stage_seconds and t.counters["json.json_schema"] >= 1


def test_oneshot_cropping_through_chat_openai_in_an_lcel_chain(server):
    from langchain_classic.retrievers import ContextualCompressionRetriever

    from retrievekit.langchain import OneShotCompressor, RetrieveKitRetriever

    docs = [Document(page_content=f"{p.text} It is often discussed. People like it.", id=p.id) for p in FRUIT]
    base = RetrieveKitRetriever.from_documents(docs, method="bm25", k=3)
    comp = OneShotCompressor(budget=400, crop=True, llm=chat_openai(server))
    r = ContextualCompressionRetriever(base_compressor=comp, base_retriever=base)
    assert _chain(r, server).invoke("Which fruit is yellow?").strip()
    _served_cleanly(comp.last_trace)


# ------------------------------------------------------------------------------------------------ llm-rerank, judges


def test_llm_rerank_through_openai_like_in_a_query_engine(server):
    from retrievekit.llama_index import RetrieveKitRetriever

    r = RetrieveKitRetriever.from_documents(
        _li_docs(), method="llm-rerank", llm=openai_like(server), first_stage="bm25", calls=2, similarity_top_k=3
    )
    resp = _engine(r, server).query("Which fruit is yellow?")
    assert resp.source_nodes and resp.source_nodes[0].node.node_id in {"banana", "apple"}  # BM25 finds two fruits
    t = r.last_trace
    _served_cleanly(t)
    assert t.llm_calls == 2 and t.llm_rounds == 1  # the two slates side by side


def test_llm_rerank_through_chat_openai_in_an_lcel_chain(server):
    from retrievekit.langchain import RetrieveKitRetriever

    r = RetrieveKitRetriever.from_documents(
        _lc_docs(), method="llm-rerank", llm=chat_openai(server), first_stage="bm25", calls=2, k=3
    )
    assert _chain(r, server).invoke("Which fruit is yellow?").strip()
    _served_cleanly(r.last_trace)


def test_judge_reranker_through_openai_like_in_a_query_engine(server):
    from retrievekit.llama_index import JudgeReranker, RetrieveKitRetriever

    base = RetrieveKitRetriever.from_documents(_li_docs(), method="bm25", similarity_top_k=6)
    pp = JudgeReranker(llm=openai_like(server), top_n=2)
    resp = _engine(base, server, node_postprocessors=[pp]).query("Which fruit is yellow?")
    assert len(resp.source_nodes) == 2 and all(0.0 <= n.score <= 1.0 for n in resp.source_nodes)
    _served_cleanly(pp.last_trace)


def test_judge_compressor_through_chat_openai_in_an_lcel_chain(server):
    from langchain_classic.retrievers import ContextualCompressionRetriever

    from retrievekit.langchain import JudgeCompressor, RetrieveKitRetriever

    base = RetrieveKitRetriever.from_documents(_lc_docs(), method="bm25", k=6)
    comp = JudgeCompressor(llm=chat_openai(server), top_n=2)
    r = ContextualCompressionRetriever(base_compressor=comp, base_retriever=base)
    assert _chain(r, server).invoke("Which fruit is yellow?").strip()
    _served_cleanly(comp.last_trace)


# ------------------------------------------------------------------------------------------------ the agent


def test_agent_through_chat_openai_in_a_langgraph_run_always_searches(server):
    from retrievekit.langgraph import build_iterative_agent

    agent = build_iterative_agent(chat_openai(server, max_tokens=48), BM25Index.build(list(FRUIT)), max_turns=2)
    out = agent.invoke({"question": "Which fruit is yellow?"})
    kinds = [e["kind"] for e in out["trace"]]
    assert out["working_set"] and out["searches"] >= 1, kinds  # SmolLM2 has no native tool calls: still searched
    assert "llm_error" not in kinds and out["answer"] is not None


def test_agent_through_openai_like_in_a_query_engine(server):
    from retrievekit.llama_index import IterativeAgentRetriever

    r = IterativeAgentRetriever.from_components(openai_like(server), BM25Index.build(list(FRUIT)), max_turns=2)
    resp = _engine(r, server).query("Which fruit is yellow?")
    assert resp.source_nodes and r.last_trace.counters["iterative.retrieval_calls"] >= 1
    assert "llm_error" not in [e.kind for e in r.last_trace.events]


# ------------------------------------------------------------------------------------------------ your own LLM in bench


def test_bench_takes_a_served_llm(server, tmp_path, monkeypatch, capsys):
    import json

    from retrievekit.core import cli
    from retrievekit.core.eval.datasets import Dataset, Query

    ds = Dataset(
        name="toy",
        split="dev",
        corpus=list(FRUIT),
        queries=[Query("q1", "Which fruit is yellow?"), Query("q2", "Which river flows into the sea?")],
        qrels={"q1": {"banana": 1}, "q2": {"nile": 1}},
    )
    monkeypatch.setattr("retrievekit.core.eval.datasets.load_dataset", lambda *a, **k: ds)
    out = tmp_path / "r.json"
    args = ["bench", "--dataset", "scifact", "--data-dir", str(tmp_path), "--method", "llm-rerank", "--no-progress"]
    args += ["--llm", f"openai:smollm2@{server.url}", "--llm-timeout", "180", "--llm-max-concurrency", "2"]
    args += ["--option", "first_stage=bm25", "--option", "calls=2", "--out", str(out)]
    assert cli.main(args) == 0
    r = json.loads(out.read_text())
    assert r["n_queries"] == 2 and r["n_failed"] == 0 and r["llm"] == f"openai:smollm2@{server.url}"
    assert r["cost"]["llm_calls_per_query"] >= 1 and r["counters_per_query"]["json.json_schema"] >= 1
    assert r["fallbacks"]["llm_rerank.score"]["rate"] == 0.0 and "warnings" not in r
