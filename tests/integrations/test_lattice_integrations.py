"""LatticeRetriever where users put it: a LlamaIndex query engine, a LangChain LCEL chain, the langchain-tests
standard suite; and one real search with the embedded SmolLM2 (schema-constrained JSON scores)."""

from __future__ import annotations

import pytest
from _corpora import FRUIT
from _lattice import KeywordLLM
from _lcel import run_rag_chain
from _standard_suite import StandardSuite
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.lattice import LatticeConfig, SemanticTree, create_lattice
from retrievekit.langchain import LatticeRetriever as LCLattice
from retrievekit.llama_index import LatticeRetriever as LILattice

EXTRA = [
    ("danube", "The Danube is a river in central Europe that flows into the Black Sea.", "Danube"),
    ("alps", "The Alps are a mountain range in Europe with peaks above four thousand metres.", "Alps"),
    ("java", "Java is a programming language that runs on a virtual machine.", "Java"),
    ("cherry", "Cherries are small red fruits with a stone.", "Cherry"),
]


def _li_docs() -> list[LIDocument]:
    rows = [(p.id, p.text, p.title) for p in FRUIT] + EXTRA
    return [LIDocument(text=f"{t}: {x}", id_=i) for i, x, t in rows]


def _lc_docs() -> list[Document]:
    rows = [(p.id, p.text, p.title) for p in FRUIT] + EXTRA
    return [Document(page_content=f"{t}: {x}", id=i) for i, x, t in rows]


def test_llama_index_query_engine(tmp_path, minilm):
    r = LILattice.from_documents(
        _li_docs(),
        llm=KeywordLLM(),
        embedder=minilm,
        tree_dir=tmp_path / "tree",
        max_children=3,
        similarity_top_k=2,
        num_iters=6,
    )
    engine = RetrieverQueryEngine.from_args(r, llm=MockLLM())
    resp = engine.query("Which river flows into the Mediterranean Nile?")
    assert resp.source_nodes[0].node.node_id == "nile"
    assert r.last_trace is not None and r.last_trace.llm_calls >= 2
    assert r.last_state is not None and r.last_state.expanded[0] == "root"
    again = LILattice.from_tree(tmp_path / "tree", llm=KeywordLLM(), embedder=minilm, similarity_top_k=1)
    assert again.retrieve("Nile river Mediterranean")[0].node.node_id == "nile"


def test_langchain_lcel_chain(minilm):
    r = LCLattice.from_documents(_lc_docs(), llm=KeywordLLM(), embedder=minilm, max_children=3, k=2, num_iters=6)
    answer, docs = run_rag_chain(r, "Python programming language data science", "Python.")
    seen = [d.id for d in docs]
    assert answer == "Python."
    assert seen[0] == "python" and r.last_trace is not None
    assert len(r.invoke("programming language", k=1)) == 1


class TestLatticeStandardRetriever(StandardSuite):
    """langchain-tests' standard retriever suite over a LATTICE tree (scripted scoring LLM)."""

    constructor, k = LCLattice, 2

    def make_core(self):
        return create_lattice(tree=SemanticTree.flat(list(FRUIT)), llm=KeywordLLM(), config=LatticeConfig(num_iters=3))


@pytest.mark.slow
def test_real_smollm2_search_over_a_small_tree(minilm):
    from retrievekit.core.llm import LocalLM

    lm = LocalLM.load("smollm2")
    lat = create_lattice(
        list(FRUIT), llm=lm, embedder=minilm, max_children=3, num_iters=2, score_max=9, max_concurrency=1
    )
    hits = lat.search("Which fruit is yellow and rich in potassium?", k=3)
    state = lat.last_state
    assert hits and state is not None and all(src == "llm" for *_, src in state.slates)
