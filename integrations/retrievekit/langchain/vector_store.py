"""Any LangChain ``VectorStore`` (``langchain_postgres.PGVector``, Qdrant, Elasticsearch...) behind retrievekit's
:class:`~retrievekit.core.index.vector_store.VectorStore` interface.

Hits keep the store's own document ids and metadata; scores are the store's relevance scores (its
``_select_relevance_score_fn``: ``1 - cosine distance`` for a cosine store). Every call ends within ``timeout``
seconds (:class:`~retrievekit.core.index.store_deadline.StoreDeadline`): a server that is down or paused raises
:class:`~retrievekit.core.errors.StoreUnavailableError`. LangChain's interface has no count and no listing:
``PGVector`` gets both from its own tables, ``PGVectorStore`` (langchain-postgres's newer store) and langchain-chroma's
``Chroma`` from their ``get()``, any other store from the ``count=`` and ``documents=`` callables given.
Importing this module registers the store kind ``langchain``.

Examples:
    >>> import numpy as np
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from langchain_core.documents import Document
    >>> fake = DeterministicFakeEmbedding(size=8)  # stands in for the user's embedding model
    >>> lc = InMemoryVectorStore(fake)
    >>> _ = lc.add_documents([Document(id="a", page_content="cats"), Document(id="b", page_content="stocks")])
    >>> store = LangChainStore(lc, count=lambda: len(lc.store))
    >>> store.count(), store.search(np.array(fake.embed_query("cats")), k=1)[0].id
    (2, 'a')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore as LangChainVectorStore

from retrievekit.core.checks import check_k
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.store_deadline import DEFAULT_STORE_TIMEOUT_S, StoreDeadline
from retrievekit.core.index.store_input import check_ids, check_query_vector
from retrievekit.core.index.store_kinds import register_store_kind
from retrievekit.core.index.vector_store import (
    RECORD_KEYS,
    check_vectors,
    check_where,
    object_from_stored,
    stored_metadata,
)
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["LangChainStore"]


class LangChainStore:
    """A LangChain vector store as a retrievekit :class:`~retrievekit.core.index.vector_store.VectorStore`.

    Args:
        vector_store: any LangChain ``VectorStore`` that searches by vector
            (``similarity_search_with_score_by_vector`` or ``similarity_search_by_vector``).
        timeout: seconds each call into the store may take (None: as long as its driver waits).
        count: how to count the store's documents, for stores other than ``PGVector``.
        documents: how to list the store's documents (a corpus for BM25 and ARM), for stores other than
            ``PGVector``.

    Examples:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2))).count()
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: InMemoryVectorStore cannot count its documents through LangChain's interface; pass count= (a function returning the number)
    """

    kind = "langchain"

    def __init__(
        self,
        vector_store: LangChainVectorStore,
        *,
        timeout: float | None = DEFAULT_STORE_TIMEOUT_S,
        count: Callable[[], int] | None = None,
        documents: Callable[[], Sequence[Document]] | None = None,
    ) -> None:
        if not isinstance(vector_store, LangChainVectorStore):
            raise InvalidInputError(
                f"LangChainStore takes a LangChain VectorStore, not a {type(vector_store).__name__}"
            )
        self.vector_store = vector_store
        collection = getattr(vector_store, "collection_name", None)
        self.label = type(vector_store).__name__ + (f" collection {collection!r}" if collection else "")
        self._calls = StoreDeadline(timeout, where=self.label)
        self._count, self._documents = count, documents

    def recorded_embedder(self) -> dict[str, Any] | None:
        """None: a LangChain store keeps the record on each document (checked on every hit).

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2))).recorded_embedder() is None
            True
        """
        return None

    def add(self, objects: Sequence[DataObject], vectors: np.ndarray, *, record: Mapping[str, Any]) -> None:
        """Add the objects with their vectors through the store's ``add_embeddings`` (ids and metadata kept); a
        store without it (it embeds texts itself) is written through LangChain instead.

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> from retrievekit.core.types import Passage
            >>> s = LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2)))
            >>> s.add([Passage(id="a", text="x")], np.ones((1, 2)), record={})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: InMemoryVectorStore has no add_embeddings: write its vectors through LangChain
        """
        vecs = check_vectors(objects, vectors, record.get(RECORD_KEYS[1]))
        store = self.vector_store
        if not hasattr(store, "add_embeddings"):
            raise InvalidInputError(f"{self.label} has no add_embeddings: write its vectors through LangChain")
        texts = [o.index_text() for o in objects]
        metas = [stored_metadata(o, record) for o in objects]
        ids = [o.id for o in objects]
        self._calls.run("add", lambda: store.add_embeddings(texts, vecs.tolist(), metadatas=metas, ids=ids))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the documents with these ids.

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2))).delete(["nope"])
        """
        doc_ids = check_ids(ids)
        self._calls.run("delete", lambda: self.vector_store.delete(ids=doc_ids))

    def count(self) -> int:
        """How many documents the store holds (``PGVector``: its collection's rows; ``PGVectorStore`` and ``Chroma``:
        their ``get()``; others: ``count=``).

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2)), count=lambda: 0).count()
            0
        """
        if self._count is not None:
            return int(self._calls.run("count", self._count))
        if _is_pgvector(self.vector_store):
            return int(self._calls.run("count", lambda: _pgvector_count(self.vector_store)))
        if _has_get(self.vector_store):
            return len(self._calls.run("count", lambda: self.vector_store.get(include=[]))["ids"])
        raise InvalidInputError(
            f"{type(self.vector_store).__name__} cannot count its documents through LangChain's interface; "
            "pass count= (a function returning the number)"
        )

    def documents(self) -> list[Document]:
        """Every document in the store (``PGVector``: its collection's rows; others: ``documents=``).

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2)), documents=list).documents()
            []
        """
        if self._documents is not None:
            return list(self._calls.run("list documents", self._documents))
        if _is_pgvector(self.vector_store):
            return self._calls.run("list documents", lambda: _pgvector_documents(self.vector_store))
        if _has_get(self.vector_store):
            got = self._calls.run("list documents", lambda: self.vector_store.get(include=["documents", "metadatas"]))
            rows = sorted(zip(got["ids"], got["documents"], got["metadatas"], strict=True), key=lambda r: str(r[0]))
            return [Document(id=str(i), page_content=text or "", metadata=meta or {}) for i, text, meta in rows]
        raise InvalidInputError(
            f"{type(self.vector_store).__name__} cannot list its documents through LangChain's interface; "
            "pass documents= yourself"
        )

    def search(self, vector: np.ndarray, k: int, *, where: Mapping[str, Any] | None = None) -> list[ScoredHit]:
        """The ``k`` nearest documents (the store's relevance score, best first), among those whose metadata matches.

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2))).search(np.ones(2), k=2)
            []
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2))).search(np.ones(2), k=2, where={"a": {"$ne": 1}})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: metadata filter 'a': a value must be a str, int, float or bool (or a list of str or of int), got dict {'$ne': 1}
        """
        check_k(k)
        filt = check_where(where)
        # LangChain's filter dict ($in for a list); only when set: not every store takes filter=
        extra = {"filter": {a: {"$in": b} if isinstance(b, list) else b for a, b in filt.items()}} if filt else {}
        emb = check_query_vector(vector)
        store = self.vector_store
        if hasattr(store, "similarity_search_with_score_by_vector"):
            pairs = self._calls.run("query", lambda: store.similarity_search_with_score_by_vector(emb, k=k, **extra))
            relevance = _relevance_fn(store)
            scored = [(d, relevance(float(s))) for d, s in pairs]
        else:
            docs = self._calls.run("query", lambda: store.similarity_search_by_vector(emb, k=k, **extra))
            scored = [(d, 1.0 / (r + 1)) for r, d in enumerate(docs)]  # the store's order; it gives no scores
        scored.sort(key=lambda p: -p[1])
        return [ScoredHit(obj=_object(d), score=s, rank=r) for r, (d, s) in enumerate(scored[:k])]

    def close(self) -> None:
        """Nothing to release: the store (and its engine) is the caller's.

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> LangChainStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=2))).close()
        """


def _relevance_fn(store: Any) -> Callable[[float], float]:
    """The store's own distance-to-relevance conversion (identity for a store that already returns similarities)."""
    try:
        fn = store._select_relevance_score_fn()
    except (NotImplementedError, ValueError, AttributeError):
        return lambda s: s
    if type(store).__name__ == "InMemoryVectorStore":  # it returns cosine similarities already
        return lambda s: s
    return fn  # type: ignore[no-any-return]


def _object(doc: Document) -> DataObject:
    if not doc.id:
        raise InvalidInputError("the store returned a document without an id; retrievekit needs the store's ids")
    return object_from_stored(str(doc.id), doc.page_content, doc.metadata)


def _is_pgvector(store: Any) -> bool:
    return all(hasattr(store, a) for a in ("get_collection", "EmbeddingStore", "_make_sync_session"))


def _has_get(store: Any) -> bool:
    """A store with a Chroma-style ``get()`` returning ``{"ids", "documents", "metadatas"}`` (langchain-postgres's
    ``PGVectorStore``, langchain-chroma's ``Chroma``)."""
    return callable(getattr(store, "get", None)) and type(store).__name__ in {"PGVectorStore", "Chroma"}


def _pgvector_rows(store: Any) -> Any:
    with store._make_sync_session() as session:
        collection = store.get_collection(session)
        if collection is None:
            return []
        rows = session.query(store.EmbeddingStore).filter(store.EmbeddingStore.collection_id == collection.uuid)
        return [(r.id, r.document, r.cmetadata) for r in rows.all()]


def _pgvector_count(store: Any) -> int:
    with store._make_sync_session() as session:
        collection = store.get_collection(session)
        if collection is None:
            return 0
        query = session.query(store.EmbeddingStore).filter(store.EmbeddingStore.collection_id == collection.uuid)
        return int(query.count())


def _pgvector_documents(store: Any) -> list[Document]:
    rows = sorted(_pgvector_rows(store), key=lambda r: str(r[0]))
    return [Document(id=str(i), page_content=text or "", metadata=meta or {}) for i, text, meta in rows]


def _open(*, vector_store: Any, timeout: float | None = DEFAULT_STORE_TIMEOUT_S, **kwargs: Any) -> LangChainStore:
    return LangChainStore(vector_store, timeout=timeout, **kwargs)


register_store_kind("langchain", _open)
