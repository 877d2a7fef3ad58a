"""The on-disk parts where users put them (issue #63): dense and hybrid on ``store="faiss"`` and a LATTICE tree opened
from its folder (its objects read from ``objects.jsonl`` per hit), inside LlamaIndex's ``RetrieverQueryEngine``
(``query`` and ``aquery``) and a LangChain chain (``invoke`` and ``ainvoke``); reopened from their folders, they
answer the same. The tree's folder is made both by the retriever and by the streamed build."""

from __future__ import annotations

import asyncio

import pytest
from _corpora import FRUIT
from _lattice import KeywordLLM
from _lcel import arun_rag_chain, run_rag_chain
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.lattice import TreeBuildConfig
from retrievekit.core.lattice.bottom_up_stream import build_bottom_up_into
from retrievekit.core.lattice.node_overlay import NodeOverlay
from retrievekit.core.lattice.stored_objects import StoredObjects
from retrievekit.langchain import LatticeRetriever as LCLattice
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import LatticeRetriever as LILattice
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever

QUESTION = "Which mountain is the highest on Earth?"
TEXTS = {p.id: p.text for p in FRUIT}


def _li_docs() -> list[LIDocument]:
    return [LIDocument(text=p.text, id_=p.id) for p in FRUIT]


def _lc_docs() -> list[Document]:
    return [Document(page_content=p.text, id=p.id) for p in FRUIT]


def _engine_answers(retriever) -> tuple[list[str], list[str]]:
    """The source nodes' ids of ``query`` and of ``aquery`` (each node's text checked against the corpus)."""
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    out = []
    for resp in (engine.query(QUESTION), asyncio.run(engine.aquery(QUESTION))):
        assert all(n.node.get_content() == TEXTS[n.node.node_id] for n in resp.source_nodes)
        out.append([n.node.node_id for n in resp.source_nodes])
    return out[0], out[1]


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_faiss_dense_and_hybrid_in_a_query_engine_and_reopened(tmp_path, minilm, method):
    built = LIRetriever.from_documents(
        _li_docs(), method=method, work_dir=tmp_path, embedder=minilm, store="faiss", similarity_top_k=2
    )
    sync_ids, async_ids = _engine_answers(built)
    assert sync_ids == async_ids and sync_ids[0] == "everest"
    assert list(tmp_path.glob("dense-faiss-*/vectors.*.faiss"))  # a faiss index in the work folder, not Chroma
    reopened = LIRetriever.from_documents(
        _li_docs(), method=method, work_dir=tmp_path, embedder=minilm, store="faiss", similarity_top_k=2
    )
    assert _engine_answers(reopened) == (sync_ids, async_ids)


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_faiss_dense_and_hybrid_in_a_langchain_chain(tmp_path, minilm, method):
    r = LCRetriever.from_documents(_lc_docs(), method=method, work_dir=tmp_path, embedder=minilm, store="faiss", k=2)
    answer, docs = run_rag_chain(r, QUESTION, "Everest.")
    aanswer, adocs = asyncio.run(arun_rag_chain(r, QUESTION, "Everest."))
    assert answer == aanswer == "Everest." and list(tmp_path.glob("dense-faiss-*/vectors.*.faiss"))
    assert [d.id for d in docs] == [d.id for d in adocs] and docs[0].id == "everest"
    assert all(d.page_content == TEXTS[d.id] for d in docs + adocs)


@pytest.mark.parametrize("made_by", ["from_documents", "build_bottom_up_into"])
def test_a_lattice_tree_opened_from_its_folder_reads_its_objects_per_hit_in_both_frameworks(tmp_path, minilm, made_by):
    tree_dir = tmp_path / "tree"
    if made_by == "from_documents":
        LILattice.from_documents(
            _li_docs(), llm=KeywordLLM(), embedder=minilm, tree_dir=tree_dir, max_children=3, num_iters=6
        )
    else:  # streamed straight into the folder: the corpus a generator, never a list
        build_bottom_up_into(tree_dir, (p for p in FRUIT), KeywordLLM(), minilm, TreeBuildConfig(max_children=3))
    li = LILattice.from_tree(tree_dir, llm=KeywordLLM(), embedder=minilm, similarity_top_k=2, num_iters=6)
    assert isinstance(li.lattice.tree.objects, StoredObjects)  # opened without reading its objects
    assert isinstance(li.lattice.tree.nodes, NodeOverlay) and not li.lattice.tree.nodes._own  # nor its nodes
    sync_ids, async_ids = _engine_answers(li)
    assert sync_ids == async_ids and sync_ids[0] == "everest"
    lc = LCLattice.from_tree(tree_dir, llm=KeywordLLM(), embedder=minilm, k=2, num_iters=6)
    answer, docs = run_rag_chain(lc, QUESTION, "Everest.")
    aanswer, adocs = asyncio.run(arun_rag_chain(lc, QUESTION, "Everest."))
    assert answer == aanswer == "Everest." and [d.id for d in docs] == [d.id for d in adocs] == sync_ids
    assert all(d.page_content == TEXTS[d.id] for d in docs + adocs)
