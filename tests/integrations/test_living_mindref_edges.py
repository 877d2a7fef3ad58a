"""MindRef as a living index through the frameworks' own update surfaces (issue #61 items 1-3).

LangChain: ``index()`` / ``aindex()`` drive ``RetrieveKitDocumentIndex(method="mindref")`` with a real
``SQLRecordManager`` on SQLite over three rounds of a changing SciFact-like source (adds, edits, deletions), for
incremental and full cleanup; LlamaIndex: :class:`MindRefIndex` follows the same rounds with ``refresh_ref_docs`` and
``delete_ref_doc`` (sync and async), persisted and reopened, and answers inside ``RetrieverQueryEngine`` (``query``,
``aquery``). After round 3 every answer (ids, passages, scores) equals MindRef built fresh over the held documents,
and no deleted document comes back. langchain-tests' ``DocumentIndexerTestSuite`` / ``AsyncDocumentIndexTestSuite``
run on ``method="mindref"``. Real components: the tiny random-weight Llama and its BPE tokenizer
(``tests/_tiny_lm.py``), MindRef's real constrained decoding, SQLite.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _living_corpus import DELETED_2, QUERIES, rounds
from _living_edges import EXPECTED, aindex_rounds, checked_rounds, li_docs, record_manager, three_rounds
from _mindref import SMALL
from _tiny_lm import tiny_local_lm
from langchain_tests.integration_tests.indexer import AsyncDocumentIndexTestSuite, DocumentIndexerTestSuite

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative import MindRef

OPTIONS = {"title_beams": 4, "title_max_new_tokens": 16, "passage_beams": 3, "prefix_tokens": 5, "passage_tokens": 12}


@pytest.fixture(scope="module")
def lm():
    return tiny_local_lm(outlines=False)


def _fresh(objects: list[Any], lm: Any) -> dict[str, list[tuple[str, str, float]]]:
    """MindRef built fresh over ``objects`` (in the index's order): its answers to :data:`QUERIES`, k=5."""
    fresh = MindRef(objects, lm, SMALL)
    return {q: [(h.id, h.obj.text, round(h.score, 9)) for h in fresh.search(q, 5)] for q in QUERIES}


# --------------------------------------------------------------------------------------------- LangChain


def _lc_answers(store: Any, k: int = 5) -> dict[str, list[tuple[str, str, float]]]:
    return {q: [(d.id, d.page_content, round(d.metadata["score"], 9)) for d in store.invoke(q, k=k)] for q in QUERIES}


@pytest.mark.parametrize("cleanup", ["incremental", "full"])
def test_index_three_rounds_mindref_langchain(tmp_path, lm, cleanup):

    from retrievekit.langchain import RetrieveKitDocumentIndex

    manager, folder = record_manager(tmp_path, f"mindref-{cleanup}"), tmp_path / "index"
    store = RetrieveKitDocumentIndex(method="mindref", path=str(folder), llm=lm, options=OPTIONS, k=5)
    for _ in checked_rounds(store, manager, cleanup):
        assert store.core.mindref.ids() == store.core.ids()  # the title trie follows every round
    held = store.core.get(store.core.ids())
    want = _fresh(held, lm)
    assert _lc_answers(store) == want
    store.close()
    with RetrieveKitDocumentIndex(method="mindref", path=str(folder), llm=lm) as back:
        assert back.core.options == OPTIONS  # reopened with its own settings
        assert _lc_answers(back) == want
        found = {i.split("#")[0] for hits in want.values() for i, _, _ in hits}
        assert found and found <= {o.id for o in held}  # nothing deleted comes back


def test_aindex_three_rounds_mindref_langchain(tmp_path, lm):

    from retrievekit.langchain import RetrieveKitDocumentIndex

    manager = record_manager(tmp_path, "async-mindref", async_mode=True)
    store = RetrieveKitDocumentIndex(method="mindref", llm=lm, options=OPTIONS, k=5)

    assert asyncio.run(aindex_rounds(store, manager)) == EXPECTED["full"]
    held = store.core.get(store.core.ids())
    assert sorted(o.text for o in held) == sorted(rounds()[-1].values())
    want = _fresh(held, lm)
    got = asyncio.run(store.ainvoke(QUERIES[1], k=5))
    assert [(d.id, d.page_content, round(d.metadata["score"], 9)) for d in got] == want[QUERIES[1]]


def test_a_chat_model_or_an_embedder_is_refused_by_name(lm):
    from langchain_core.language_models import FakeListChatModel

    from retrievekit.langchain import RetrieveKitDocumentIndex

    with pytest.raises(InvalidInputError, match="MindRef needs a scoring LM"):
        RetrieveKitDocumentIndex(method="mindref", llm=FakeListChatModel(responses=["x"]))
    with pytest.raises(InvalidInputError, match="embedder= reaches no part of a mindref"):
        RetrieveKitDocumentIndex(method="mindref", llm=lm, embedder="all-MiniLM-L6-v2")


# --------------------------------------------------------------------------------------------- LlamaIndex


def _li_answers(retriever: Any) -> dict[str, list[tuple[str, str, float]]]:
    return {
        q: [(n.node.node_id, n.node.get_content(), round(n.score, 9)) for n in retriever.retrieve(q)] for q in QUERIES
    }


def test_refresh_ref_docs_three_rounds_mindref_llama_index(tmp_path, lm):
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from retrievekit.llama_index import LatticeRetriever, MindRefIndex, MindRefRetriever

    folder = tmp_path / "mindref"
    index = MindRefIndex(path=folder, llm=lm, options=OPTIONS)
    three_rounds(index)
    held = index.core.get(index.core.ids())
    want = _fresh(held, lm)
    assert _li_answers(index.as_retriever(similarity_top_k=5)) == want
    index.persist()
    index.close()

    back = MindRefIndex.load(folder, llm=lm)
    retriever = back.as_retriever(similarity_top_k=5)
    assert isinstance(retriever, MindRefRetriever) and back.core.options == OPTIONS
    assert _li_answers(retriever) == want
    assert _li_answers(MindRefRetriever.from_index(back, similarity_top_k=5)) == want
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    ids = [n.node.node_id for n in retriever.retrieve(QUERIES[0])]
    assert ids and [n.node.node_id for n in engine.query(QUERIES[0]).source_nodes] == ids
    assert [n.node.node_id for n in asyncio.run(engine.aquery(QUERIES[0])).source_nodes] == ids
    assert {i.split("#")[0] for i in ids} <= {o.id for o in held}  # nothing deleted comes back
    assert back.refresh_ref_docs(li_docs(rounds()[-1])) == [False] * len(rounds()[-1])  # hashes persisted
    with pytest.raises(InvalidInputError, match="LatticeRetriever.from_index takes a lattice index"):
        LatticeRetriever.from_index(back)
    with pytest.raises(InvalidInputError, match="MindRefIndex is a mindref index, not 'bm25'"):
        MindRefIndex(method="bm25")


def test_llama_index_mindref_async_updates_and_retrieval(lm):
    from retrievekit.llama_index import MindRefIndex

    one, two, _ = rounds()
    index = MindRefIndex(llm=lm, options=OPTIONS)

    async def run() -> list[Any]:
        await index.arefresh_ref_docs(li_docs(one))
        await index.arefresh_ref_docs(li_docs(two))
        for key in DELETED_2:
            await index.adelete_ref_doc(key, delete_from_docstore=True)
        return await index.as_retriever(similarity_top_k=5).aretrieve(QUERIES[1])

    nodes = asyncio.run(run())
    assert sorted(index.ref_doc_info) == sorted(two)
    held = index.core.get(index.core.ids())
    assert [(n.node.node_id, n.node.get_content(), round(n.score, 9)) for n in nodes] == _fresh(held, lm)[QUERIES[1]]


# --------------------------------------------------------------------------------------------- standard suites


class TestStandardDocumentIndexMindRef(DocumentIndexerTestSuite):
    @pytest.fixture
    def index(self, tmp_path, lm):
        from retrievekit.langchain import RetrieveKitDocumentIndex

        folder = str(tmp_path / "idx")
        with RetrieveKitDocumentIndex(method="mindref", llm=lm, options=OPTIONS, path=folder) as index:
            yield index


class TestStandardAsyncDocumentIndexMindRef(AsyncDocumentIndexTestSuite):
    @pytest.fixture
    async def index(self, lm):
        from retrievekit.langchain import RetrieveKitDocumentIndex

        with RetrieveKitDocumentIndex(method="mindref", llm=lm, options=OPTIONS) as index:
            yield index
