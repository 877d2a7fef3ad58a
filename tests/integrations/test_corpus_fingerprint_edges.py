"""The two cache cases of issue 61 through the frameworks' own entry points: a ``work_dir`` entry holding another
corpus (valid manifest) and a LATTICE ``tree_dir`` holding the same ids with other texts are refused with
CorpusMismatchError naming both sizes and an example id, never served; an unchanged corpus reuses them."""

from __future__ import annotations

import pytest
from _lattice import KeywordLLM
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument

from retrievekit.core.errors import CorpusMismatchError
from retrievekit.core.index.baselines import corpus_fingerprint
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage
from retrievekit.langchain import LatticeRetriever as LCLattice
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.langchain.retriever import documents_to_objects
from retrievekit.llama_index import LatticeRetriever as LILattice
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever
from retrievekit.llama_index.retriever import nodes_to_objects

TEXTS = [f"apples and pears from the {side} orchard" for side in ("north", "south", "east")]
OTHER = [Passage(id=f"b{i}", text=f"apples of another corpus, crate {i}") for i in range(5)]


def _li(texts):
    return [LIDocument(text=t, id_=f"d{i}") for i, t in enumerate(texts)]


def _lc(texts):
    return [Document(page_content=t, id=f"d{i}") for i, t in enumerate(texts)]


def _check(got, indexed, given, example):
    msg = str(got.value)
    assert (got.value.indexed, got.value.given, got.value.example) == (indexed, given, example)
    assert f"{indexed} objects, not this corpus of {given}" in msg and repr(example) in msg


def test_llama_index_bm25_work_dir_holding_another_corpus_is_refused(tmp_path):
    docs = _li(TEXTS)
    BM25Index.build(OTHER).save(tmp_path / f"bm25-tantivy-{corpus_fingerprint(nodes_to_objects(docs))}")
    with pytest.raises(CorpusMismatchError) as got:  # served OTHER's documents before
        LIRetriever.from_documents(docs, method="bm25", work_dir=tmp_path)
    _check(got, 5, 3, "d0")


def test_langchain_hybrid_work_dir_with_same_ids_and_other_texts_is_refused(tmp_path, minilm):
    docs = _lc(TEXTS)
    fp = corpus_fingerprint(documents_to_objects(docs))
    edited = [Passage(id=f"d{i}", text=t.replace("pears", "plums")) for i, t in enumerate(TEXTS)]
    DenseIndex.build(edited, tmp_path / f"dense-{fp}", embedder=minilm).close()
    with pytest.raises(CorpusMismatchError) as got:
        LCRetriever.from_documents(docs, method="hybrid", work_dir=tmp_path, embedder=minilm)
    _check(got, 3, 3, "d0")
    assert "another text" in str(got.value)


def test_langchain_bm25_work_dir_reused_for_an_unchanged_corpus(tmp_path, monkeypatch):
    LCRetriever.from_documents(_lc(TEXTS), method="bm25", work_dir=tmp_path)
    entry = tmp_path / f"bm25-tantivy-{corpus_fingerprint(documents_to_objects(_lc(TEXTS)))}"  # the default engine
    BM25Index.build(OTHER[:2]).save(entry)  # replaced under its name: refused, not served
    with pytest.raises(CorpusMismatchError) as got:
        LCRetriever.from_documents(_lc(TEXTS), method="bm25", work_dir=tmp_path)
    _check(got, 2, 3, "d0")
    BM25Index.build(documents_to_objects(_lc(TEXTS))).save(entry)
    stamp, built, real = (entry / "manifest.json").stat().st_mtime_ns, [], BM25Index.build
    monkeypatch.setattr(BM25Index, "build", classmethod(lambda cls, *a, **k: built.append(1) or real(*a, **k)))
    r = LCRetriever.from_documents(_lc(TEXTS), method="bm25", work_dir=tmp_path, k=1)
    assert built == [] and (entry / "manifest.json").stat().st_mtime_ns == stamp
    assert r.invoke("south")[0].id == "d1"


@pytest.mark.parametrize(("edge", "docs"), [(LILattice, _li), (LCLattice, _lc)])
def test_lattice_tree_dir_with_same_ids_and_other_texts_is_refused(tmp_path, minilm, edge, docs):
    options = {"llm": KeywordLLM(), "embedder": minilm, "tree_dir": tmp_path / "t", "max_children": 2}
    edge.from_documents(docs(TEXTS), summaries="extractive", **options)
    stamp = (tmp_path / "t" / "manifest.json").stat().st_mtime_ns
    edge.from_documents(docs(TEXTS), **options)  # unchanged: loaded as it is
    assert (tmp_path / "t" / "manifest.json").stat().st_mtime_ns == stamp
    with pytest.raises(CorpusMismatchError) as got:  # served the old texts before
        edge.from_documents(docs([t.replace("pears", "plums") for t in TEXTS]), **options)
    _check(got, 3, 3, "d0")
    assert "3 objects have another text in the tree" in str(got.value)
