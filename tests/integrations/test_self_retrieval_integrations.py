"""SelfRetrievalRetriever in a LlamaIndex RetrieverQueryEngine, a LangChain LCEL chain and langchain-tests' suite
(a tiny model trained for a few steps on the 20-document corpus of tests/_self_retrieval.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from _lcel import run_rag_chain
from _self_retrieval import DOCS, train_small
from _standard_suite import StandardSuite
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.errors import ModelMismatchError
from retrievekit.core.generative.self_retrieval import SelfRetrieval
from retrievekit.core.index.baselines import corpus_fingerprint
from retrievekit.core.types import DataObject
from retrievekit.langchain import SelfRetrievalRetriever as LCSelfRetrieval
from retrievekit.langchain import documents_to_objects
from retrievekit.llama_index import SelfRetrievalRetriever as LISelfRetrieval
from retrievekit.llama_index import nodes_to_objects

_RUN: dict[str, Path] = {}
LI_DOCS = [LIDocument(id_=d.id, text=d.text, metadata={"title": d.title}) for d in DOCS]
LC_DOCS = [Document(page_content=d.text, metadata={"title": d.title}, id=d.id) for d in DOCS]


def model_dir(corpus: list[DataObject]) -> Path:
    """One trained model per corpus (a few steps: mechanics, not quality). A model is tied to the exact corpus
    objects it was trained on, so framework users train on the converted documents."""
    key = corpus_fingerprint(corpus)
    if key not in _RUN:
        out = Path(tempfile.mkdtemp(prefix="sr-int-")) / "run"
        train_small(out, steps=3, corpus=corpus)
        _RUN[key] = out
    return _RUN[key]


def test_llama_index_query_engine() -> None:
    r = LISelfRetrieval.from_documents(LI_DOCS, model_dir=model_dir(nodes_to_objects(LI_DOCS)), similarity_top_k=3)
    engine = RetrieverQueryEngine.from_args(r, llm=MockLLM())
    resp = engine.query("Which animal has red fur?")
    assert 1 <= len(resp.source_nodes) <= 3
    texts = {d.id: d.text for d in DOCS}
    with pytest.raises(ModelMismatchError):  # trained on other objects (core Passages with a title field)
        LISelfRetrieval.from_documents(LI_DOCS, model_dir=model_dir(list(DOCS)))
    for n in resp.source_nodes:
        assert n.node.get_content() == texts[n.node.node_id] and n.node.metadata["exact"]
    assert r.last_trace is not None and r.last_trace.llm_calls >= 2


def test_langchain_lcel_chain() -> None:
    retriever = LCSelfRetrieval.from_documents(LC_DOCS, model_dir=model_dir(documents_to_objects(LC_DOCS)), k=3)
    answer, seen = run_rag_chain(retriever, "Which animal has red fur?", "The cat.")
    assert answer == "The cat."
    assert len(seen) == 3 and all("rejection_ce" in d.metadata for d in seen)
    assert len(retriever.invoke("x", k=1)) == 1 and retriever.self_retrieval.config.tau == 0.4
    with pytest.raises(ValueError):
        retriever.invoke("   ")


class TestLangChainStandardSelfRetrieval(StandardSuite):
    constructor, query, k = LCSelfRetrieval, "Which animal has blue fur?", 3

    def make_core(self):
        return SelfRetrieval.from_model_dir(model_dir(list(DOCS)), DOCS)


def test_whole_document_passages_are_the_callers_objects() -> None:
    """A passage that is a whole given document comes back as the caller's node / document (a copy carrying the
    scores), with its class, relationships and excluded-metadata keys; the caller's objects are not changed."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    class MyDocument(Document):
        pass

    li = [
        LIDocument(
            id_=d.id,
            text=d.text,
            metadata={"title": d.title},
            excluded_llm_metadata_keys=["title"],
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"file-{d.id}")},
        )
        for d in DOCS
    ]
    r = LISelfRetrieval.from_documents(li, model_dir=model_dir(nodes_to_objects(li)), similarity_top_k=3)
    by_id = {d.node_id: d for d in li}
    out = r.retrieve("Which animal has red fur?")
    assert out
    for n in out:
        src = by_id[n.node.node_id]
        assert type(n.node) is LIDocument and n.node.relationships == src.relationships
        assert n.node.excluded_llm_metadata_keys == ["title"] and n.node.metadata["exact"]
        assert src.metadata == {"title": src.metadata["title"]}  # not mutated
    lc = [MyDocument(page_content=d.page_content, metadata=dict(d.metadata), id=d.id) for d in LC_DOCS]
    got = LCSelfRetrieval.from_documents(lc, model_dir=model_dir(documents_to_objects(lc)), k=2).invoke("red fur")
    assert got and all(type(d) is MyDocument and "rejection_ce" in d.metadata for d in got)
    assert all(set(d.metadata) == {"title"} for d in lc)
