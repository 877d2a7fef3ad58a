"""A living corpus through the frameworks' own update surfaces (issue #61 item 1, bm25 / dense / hybrid).

LangChain: ``index()`` / ``aindex()`` drive :class:`RetrieveKitDocumentIndex` with a real ``SQLRecordManager`` on
SQLite over three rounds of a changing SciFact-like source (adds, edits, deletions), for incremental and full
cleanup; the counts are LangChain's, and after round 3 (and after reopening the folder) the answers equal a fresh
build over what the index should hold. LlamaIndex: :class:`RetrieveKitIndex` does the same with
``refresh_ref_docs`` and ``delete_ref_doc``, inside ``RetrieverQueryEngine`` (``query`` and ``aquery``). The
langchain-tests standard suites for a ``DocumentIndex`` and a retriever run over it. Real Chroma, real MiniLM.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _corpora import FRUIT
from _living_corpus import DELETED_2, QUERIES, rounds
from _living_edges import EXPECTED, aindex_rounds, checked_rounds, held_after, li_docs, record_manager, three_rounds
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_tests.integration_tests.indexer import AsyncDocumentIndexTestSuite, DocumentIndexerTestSuite

from retrievekit.core.index.corpus_record import corpus_record
from retrievekit.core.index.live_log import saved_record
from retrievekit.core.types import Passage

METHODS = ["bm25", "dense", "hybrid"]


def _embedder(method: str, minilm: Any) -> Any:
    return None if method == "bm25" else minilm


def _answers(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(text, round(score, 5)) for text, score in hits]


def _lc_answers(retriever: Any, query: str) -> list[tuple[str, float]]:
    return _answers([(d.page_content, d.metadata["score"]) for d in retriever.invoke(query, k=5)])


def _fresh_lc(method: str, texts: dict[str, str], minilm: Any, **options: Any) -> Any:
    from langchain_core.documents import Document

    from retrievekit.langchain import RetrieveKitRetriever

    docs = [Document(page_content=t, metadata={"source": s}, id=s) for s, t in sorted(texts.items())]
    return RetrieveKitRetriever.from_documents(docs, method=method, embedder=_embedder(method, minilm), k=5, **options)


def _check_final(index: Any, method: str, cleanup: str, minilm: Any) -> None:
    held = held_after(cleanup)
    assert sorted(d.page_content for d in index.get(index.core.ids())) == sorted(held.values())
    with _fresh_lc(method, held, minilm) as fresh:
        for q in QUERIES:
            assert _lc_answers(index, q) == _lc_answers(fresh, q), q


@pytest.mark.parametrize("cleanup", ["incremental", "full"])
@pytest.mark.parametrize("method", METHODS)
def test_index_three_rounds_langchain(tmp_path, minilm, method, cleanup):
    from retrievekit.langchain import RetrieveKitDocumentIndex

    manager = record_manager(tmp_path, f"{method}-{cleanup}")
    folder = tmp_path / "index"
    store = RetrieveKitDocumentIndex(method=method, path=str(folder), embedder=_embedder(method, minilm))
    for r in checked_rounds(store, manager, cleanup):
        # the folder's corpus record follows every change: what the index now serves, by id and text
        served = [Passage(id=d.id, text=d.page_content, metadata=d.metadata) for d in store.get(store.core.ids())]
        assert saved_record(folder / "live") == corpus_record(served)  # its change log's last line, or the manifest
        assert set(r.values()) <= {p.text for p in served}
    _check_final(store, method, cleanup, minilm)
    store.close()
    with RetrieveKitDocumentIndex(method=method, path=str(folder), embedder=_embedder(method, minilm)) as reopened:
        _check_final(reopened, method, cleanup, minilm)


@pytest.mark.parametrize("method", ["bm25", "hybrid"])
def test_index_three_rounds_langchain_on_tantivy_with_deletes_still_counted(tmp_path, minilm, method, monkeypatch):
    """The tantivy engine's BM25 part, its deleted documents left in tantivy's statistics (the compaction threshold
    raised): LangChain's counts as on bm25s, and answers a fresh tantivy build's, before and after reopening."""
    import retrievekit.core.index.bm25_engine as engine
    from retrievekit.langchain import RetrieveKitDocumentIndex

    monkeypatch.setattr(engine, "COMPACT_ABOVE", 0.9)
    manager, folder, opts = (
        record_manager(tmp_path, f"{method}-tantivy"),
        tmp_path / "index",
        {"bm25_engine": "tantivy"},
    )
    store = RetrieveKitDocumentIndex(method=method, path=str(folder), embedder=_embedder(method, minilm), options=opts)
    for _ in checked_rounds(store, manager, "incremental"):
        pass
    store.close()
    held = held_after("incremental")
    with (
        RetrieveKitDocumentIndex(method=method, path=str(folder), embedder=_embedder(method, minilm)) as reopened,
        _fresh_lc(method, held, minilm, **opts) as fresh,
    ):
        assert reopened.core._bm25.pending_deletes > 0  # the deleted and replaced documents, still counted
        for q in QUERIES:
            mine, want = _lc_answers(reopened, q), _lc_answers(fresh, q)
            assert [t for t, _ in mine] == [t for t, _ in want], q
            assert [s for _, s in mine] == pytest.approx([s for _, s in want], rel=1e-6), q


@pytest.mark.parametrize("method", METHODS)
def test_aindex_three_rounds_langchain(tmp_path, minilm, method):

    from retrievekit.langchain import RetrieveKitDocumentIndex

    manager = record_manager(tmp_path, f"async-{method}", async_mode=True)

    with RetrieveKitDocumentIndex(method=method, embedder=_embedder(method, minilm)) as store:
        assert asyncio.run(aindex_rounds(store, manager)) == EXPECTED["full"]
        _check_final(store, method, "full", minilm)
        held = held_after("full")
        with _fresh_lc(method, held, minilm) as fresh:
            got = asyncio.run(store.ainvoke(QUERIES[1], k=5))
            assert _answers([(d.page_content, d.metadata["score"]) for d in got]) == _lc_answers(fresh, QUERIES[1])


# --------------------------------------------------------------------------------------------- LlamaIndex


def _li_answers(retriever: Any, query: str) -> list[tuple[str, float]]:
    return _answers([(n.node.get_content(), n.score) for n in retriever.retrieve(query)])


def _li_check_final(index: Any, method: str, minilm: Any) -> None:
    from retrievekit.llama_index import RetrieveKitRetriever

    held = rounds()[-1]
    assert sorted(index.ref_doc_info) == sorted(held)
    fresh = RetrieveKitRetriever.from_documents(
        li_docs(held), method=method, embedder=_embedder(method, minilm), similarity_top_k=5
    )
    with fresh:
        retriever = index.as_retriever(similarity_top_k=5)
        for q in QUERIES:
            assert _li_answers(retriever, q) == _li_answers(fresh, q), q
        hit = retriever.retrieve(QUERIES[0])[0].node
        assert hit.ref_doc_id in held and hit == index.docstore.get_node(
            hit.node_id
        )  # the stored node, linked to its document


@pytest.mark.parametrize("method", METHODS)
def test_refresh_ref_docs_three_rounds_llama_index(tmp_path, minilm, method):
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from retrievekit.llama_index import RetrieveKitIndex

    folder = tmp_path / "li-index"
    index = RetrieveKitIndex(method=method, path=folder, embedder=_embedder(method, minilm))
    three_rounds(index)
    _li_check_final(index, method, minilm)

    engine = RetrieverQueryEngine.from_args(index.as_retriever(similarity_top_k=3), llm=MockLLM(max_tokens=8))
    want = [n.node.get_content() for n in index.as_retriever(similarity_top_k=3).retrieve(QUERIES[2])]
    assert [n.node.get_content() for n in engine.query(QUERIES[2]).source_nodes] == want
    assert [n.node.get_content() for n in asyncio.run(engine.aquery(QUERIES[2])).source_nodes] == want

    index.persist()
    index.close()
    reopened = RetrieveKitIndex.load(folder, embedder=_embedder(method, minilm))
    try:
        _li_check_final(reopened, method, minilm)
        final = rounds()[-1]
        assert reopened.refresh_ref_docs(li_docs(final)) == [False] * len(final)  # hashes persisted: nothing redone
    finally:
        reopened.close()


def test_llama_index_async_updates(minilm):
    from retrievekit.llama_index import RetrieveKitIndex

    one, two, _ = rounds()
    index = RetrieveKitIndex(method="hybrid", embedder=minilm)

    async def run() -> None:
        await index.arefresh_ref_docs(li_docs(one))
        await index.arefresh_ref_docs(li_docs(two))
        for key in DELETED_2:
            await index.adelete_ref_doc(key, delete_from_docstore=True)

    asyncio.run(run())
    assert sorted(index.ref_doc_info) == sorted(two)
    assert sorted(o.text for o in index.core.get(index.core.ids())) == sorted(two.values())
    index.close()


def test_a_method_retriever_refuses_a_live_index():
    from retrievekit.core.errors import InvalidInputError
    from retrievekit.llama_index import LatticeRetriever, RetrieveKitIndex

    with pytest.raises(InvalidInputError, match="LatticeRetriever.from_index"):
        LatticeRetriever.from_index(RetrieveKitIndex(method="bm25"))


# --------------------------------------------------------------------------------------------- standard suites


@pytest.fixture(scope="module")
def module_minilm():
    from retrievekit.core.index.embeddings import MiniLMEmbedder

    return MiniLMEmbedder.default()


class TestStandardDocumentIndexBM25(DocumentIndexerTestSuite):
    @pytest.fixture
    def index(self, tmp_path):
        from retrievekit.langchain import RetrieveKitDocumentIndex

        with RetrieveKitDocumentIndex(method="bm25", path=str(tmp_path / "idx")) as index:
            yield index


class TestStandardDocumentIndexHybrid(DocumentIndexerTestSuite):
    @pytest.fixture
    def index(self, tmp_path, module_minilm):
        from retrievekit.langchain import RetrieveKitDocumentIndex

        with RetrieveKitDocumentIndex(method="hybrid", embedder=module_minilm, path=str(tmp_path / "idx")) as index:
            yield index


class TestStandardAsyncDocumentIndexDense(AsyncDocumentIndexTestSuite):
    @pytest.fixture
    async def index(self, module_minilm):
        from retrievekit.langchain import RetrieveKitDocumentIndex

        with RetrieveKitDocumentIndex(method="dense", embedder=module_minilm) as index:
            yield index


def _filled_index(**params: Any) -> Any:
    from langchain_core.documents import Document

    from retrievekit.langchain import RetrieveKitDocumentIndex

    index = RetrieveKitDocumentIndex(**params)
    index.upsert([Document(id=p.id, page_content=p.text, metadata={"title": p.title}) for p in FRUIT])
    return index


class TestStandardRetrieverOverDocumentIndex(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> Any:
        return _filled_index

    @property
    def retriever_constructor_params(self) -> dict:
        return {"method": "bm25"}

    @property
    def retriever_query_example(self) -> str:
        return "fruit programming language river mountain"
