"""Retrievers built ``from_documents`` return the caller's own nodes and documents, as ``llama_index.retrievers.bm25``
does: same class, relationships and excluded-metadata keys (LlamaIndex), same class, id and metadata plus the
documented additions (LangChain), and the caller's objects are never mutated. Objects the caller did not give (a
MindRef span cut out of a document) are new nodes. Self-Retrieval is covered in test_self_retrieval_integrations.
"""

from __future__ import annotations

import copy

import pytest
from _corpora import FRUIT
from _lattice import KeywordLLM
from _tiny_lm import SENTENCES, TITLES, tiny_local_lm
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from retrievekit.core.llm import LocalLM
from retrievekit.langchain import ArmRetriever as LCArm
from retrievekit.langchain import LatticeRetriever as LCLattice
from retrievekit.langchain import MindRefRetriever as LCMindRef
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import ArmRetriever as LIArm
from retrievekit.llama_index import LatticeRetriever as LILattice
from retrievekit.llama_index import MindRefRetriever as LIMindRef
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever

EXCLUDED = ["title", "source_file"]


class MyDocument(Document):
    """A caller's own LangChain document class."""


def li_docs(rows: list[tuple[str, str, str]]) -> list[LIDocument]:
    return [
        LIDocument(
            id_=i,
            text=text,
            metadata={"title": title, "source_file": f"{i}.txt"},
            excluded_llm_metadata_keys=list(EXCLUDED),
            excluded_embed_metadata_keys=["source_file"],
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"file-{i}")},
        )
        for i, text, title in rows
    ]


def lc_docs(rows: list[tuple[str, str, str]]) -> list[MyDocument]:
    return [MyDocument(page_content=text, id=i, metadata={"title": title, "lang": "en"}) for i, text, title in rows]


FRUIT_ROWS = [(p.id, p.text, p.title) for p in FRUIT]


def assert_li_caller_nodes(results, docs, *, added: set[str] = frozenset()) -> None:
    """Every hit on a given document is that document (a copy only when the method added metadata)."""
    by_id = {d.node_id: d for d in docs}
    before = {d.node_id: copy.deepcopy(d.metadata) for d in docs}
    assert results
    for nws in results:
        node, src = nws.node, by_id[nws.node.node_id]
        assert type(node) is LIDocument
        assert node.relationships == src.relationships and node.source_node.node_id == f"file-{src.node_id}"
        assert node.excluded_llm_metadata_keys == EXCLUDED and node.excluded_embed_metadata_keys == ["source_file"]
        assert node.get_content() == src.get_content() and node.metadata["source_file"] == f"{src.node_id}.txt"
        assert set(node.metadata) - set(src.metadata) == set(added) & set(node.metadata)
        if not added:
            assert node is src
        assert src.metadata == before[src.node_id]  # the caller's node is not changed


def assert_lc_caller_documents(results, docs, *, added: set[str] = frozenset()) -> None:
    by_id = {d.id: d for d in docs}
    before = {d.id: dict(d.metadata) for d in docs}
    assert results
    for doc in results:
        src = by_id[doc.id]
        assert type(doc) is MyDocument and doc is not src
        assert doc.page_content == src.page_content and doc.metadata["lang"] == "en"
        assert set(doc.metadata) - set(src.metadata) == {"score"} | (set(added) & set(doc.metadata))
        assert src.metadata == before[src.id]  # copied, not mutated


def test_baseline_retrievers_return_the_callers_objects():
    docs = li_docs(FRUIT_ROWS)
    r = LIRetriever.from_documents(docs, method="bm25", similarity_top_k=2)
    out = r.retrieve("Which river flows into the Mediterranean?")
    assert out[0].node is docs[-1]
    assert_li_caller_nodes(out, docs)
    lc = lc_docs(FRUIT_ROWS)
    got = LCRetriever.from_documents(lc, method="bm25", k=2).invoke("tallest mountain Himalayas")
    assert got[0].id == "everest" and got[0].metadata["score"] > 0
    assert_lc_caller_documents(got, lc)


def test_lattice_returns_the_callers_objects(minilm):
    docs = li_docs(FRUIT_ROWS)
    kw = {"llm": KeywordLLM(), "embedder": minilm, "max_children": 3, "num_iters": 4}
    out = LILattice.from_documents(docs, similarity_top_k=2, **kw).retrieve("programming language memory safety")
    assert out[0].node.node_id == "rust"
    assert_li_caller_nodes(out, docs)
    lc = lc_docs(FRUIT_ROWS)
    got = LCLattice.from_documents(lc, k=2, **{**kw, "llm": KeywordLLM()}).invoke("programming language memory safety")
    assert got[0].id == "rust"
    assert_lc_caller_documents(got, lc)


ARM_ROWS = [
    ("p", "Prime Suspect is a British police drama devised by Lynda La Plante.", "Prime Suspect"),
    ("n", "Nonso Anozie played Robert in the series Prime Suspect.", "Nonso Anozie"),
    ("w", "Wind farms turn moving air into power.", "Wind"),
]
ARM_ADDED = {"arm_links", "arm_score", "arm_votes", "arm_logprob", "arm_relevance", "arm_set", "arm_selected"}


def test_arm_returns_copies_of_the_callers_objects_with_its_metadata():
    docs = li_docs(ARM_ROWS)
    out = LIArm.from_documents(docs, llm=None, expand_ks="1").retrieve("Who devised Prime Suspect?")
    assert out and "arm_selected" in out[0].node.metadata
    assert_li_caller_nodes(out, docs, added=ARM_ADDED)
    assert all("arm_selected" not in d.metadata for d in docs)
    lc = lc_docs(ARM_ROWS)
    got = LCArm.from_documents(lc, llm=None, k=2, expand_ks="1").invoke("Who devised Prime Suspect?")
    assert got and got[0].metadata["arm_selected"]
    assert_lc_caller_documents(got, lc, added=ARM_ADDED)


@pytest.fixture(scope="module")
def tiny_lm() -> LocalLM:
    return tiny_local_lm()


MINDREF = {"title_beams": 3, "passage_beams": 2, "prefix_tokens": 4}
MINDREF_ROWS = [(f"d{i}", SENTENCES[i], TITLES[i % 6]) for i in range(4)]
MINDREF_ADDED = {"document_id", "token_start", "token_end", "char_start", "exact_substring", "title_score"}
MINDREF_ADDED |= {"passage_score", "score", "prefix", "method"}


def test_mindref_returns_whole_documents_as_the_callers_objects_and_spans_as_new_nodes(tiny_lm):
    docs = li_docs(MINDREF_ROWS)
    out = LIMindRef.from_documents(docs, llm=tiny_lm, similarity_top_k=4, **MINDREF).retrieve("solar power")
    texts = {d.node_id: d.text for d in docs}
    whole = [n for n in out if n.node.node_id in texts and n.node.get_content() == texts[n.node.node_id]]
    spans = [n for n in out if n not in whole]
    assert whole and spans  # the tiny model recalls one whole document and spans of others
    assert_li_caller_nodes(whole, docs, added=MINDREF_ADDED)
    assert all(type(n.node) is TextNode and any(n.node.get_content() in s for s in SENTENCES) for n in spans)
    lc = lc_docs(MINDREF_ROWS)
    got = LCMindRef.from_documents(lc, llm=tiny_lm, k=4, **MINDREF).invoke("solar power")
    whole_lc = [d for d in got if d.id in texts and d.page_content == texts[d.id]]
    assert whole_lc and len(whole_lc) < len(got)
    assert_lc_caller_documents(whole_lc, lc, added=MINDREF_ADDED)
    assert all(type(d) is Document for d in got if d not in whole_lc)
