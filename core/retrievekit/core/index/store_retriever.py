"""Dense retrieval over any :class:`~retrievekit.core.index.vector_store.VectorStore`: the user's own store as the
dense side of hybrid and the first stage of ARM, llm-rerank, judge-rerank and One-SHOT's candidates.

It embeds the query, asks the store for the nearest objects, and returns them as the store keeps them (its ids,
text and metadata). The embedding model is checked against the one recorded as having written the store, once when
the retriever is made and on every hit after (each distinct record once): a store written by another model, even
one of the same name and dimension, raises :class:`~retrievekit.core.errors.EmbedderMismatchError` (an
:class:`~retrievekit.core.errors.IndexFormatError`) instead of returning wrong neighbours.

Examples:
    >>> from retrievekit.core.index.chroma_store import ChromaStore
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.fakes import WordCountEmbedder as Words  # a stand-in for all-MiniLM-L6-v2
    >>> r = StoreRetriever(ChromaStore.in_memory(), embedder=Words())
    >>> r.add([Passage(id="a", text="cats purr"), Passage(id="b", text="stock markets")])
    >>> r.search("a cat", k=1)[0].id
    'a'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.vector_store import (
    RECORD_KEYS,
    VectorStore,
    check_recorded_embedder,
    check_where,
    embedder_record,
)
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["StoreRetriever", "as_store_retriever"]


class StoreRetriever:
    """A :class:`~retrievekit.core.retriever.Retriever` over a vector store and an embedding model.

    Args:
        store: the :class:`~retrievekit.core.index.vector_store.VectorStore` (a ``ChromaStore``, or a framework's
            store wrapped by an edge: ``retrievekit.llama_index.LlamaIndexStore``, ``retrievekit.langchain.
            LangChainStore``).
        embedder: the model that wrote the store's vectors (default: all-MiniLM-L6-v2).
        where: a metadata filter applied to every search (each key equal to a value, or one of a list; checked by
            :func:`~retrievekit.core.index.store_input.check_where`, refused with ``InvalidInputError`` here).

    Examples:
        >>> from retrievekit.core.index.chroma_store import ChromaStore
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> StoreRetriever(ChromaStore.in_memory(), embedder=OnesEmbedder()).search("anything")
        []
    """

    def __init__(self, store: VectorStore, embedder: Any = None, *, where: Mapping[str, Any] | None = None) -> None:
        if not isinstance(store, VectorStore):
            raise InvalidInputError(
                f"{type(store).__name__} is not a retrievekit VectorStore; wrap a framework's store with "
                "retrievekit.llama_index.LlamaIndexStore or retrievekit.langchain.LangChainStore"
            )
        embedder = as_embedder(embedder, where=f"{store.label} embedder")  # a framework's model wrapped
        if embedder is None:
            from retrievekit.core.index.embeddings import MiniLMEmbedder

            embedder = MiniLMEmbedder.default()
        self.store, self.embedder, self.where = store, embedder, check_where(where)
        self._checked: set[str] = set()  # the records already checked (the probes are embedded once per record)
        self._check(store.recorded_embedder(), where=store.label)
        # a probe: a store of another dimension or model is refused here, before the first query
        self._hits(np.asarray(embedder.embed_query("retrievekit"), dtype=np.float32), 1)

    def __repr__(self) -> str:
        return f"StoreRetriever({self.store.label}, embedder={self.embedder.name!r})"

    def add(self, objects: Sequence[DataObject], *, batch_size: int = 256) -> None:
        """Embed objects and add them to the store (with the embedding model's record).

        Examples:
            >>> from retrievekit.core.index.chroma_store import ChromaStore
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> from retrievekit.core.types import Passage
            >>> r = StoreRetriever(ChromaStore.in_memory(), embedder=OnesEmbedder())
            >>> r.add([Passage(id="a", text="x")]); len(r)
            1
        """
        objs = check_corpus(objects)
        record = embedder_record(self.embedder)
        for start in range(0, len(objs), batch_size):
            part = objs[start : start + batch_size]
            vecs = np.asarray(self.embedder.embed_documents([o.index_text() for o in part]), dtype=np.float32)
            self.store.add(part, vecs, record=record)

    def __len__(self) -> int:
        return self.store.count()

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """The ``k`` objects nearest to the query's embedding, best first.

        Examples:
            >>> from retrievekit.core.index.chroma_store import ChromaStore
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> StoreRetriever(ChromaStore.in_memory(), embedder=OnesEmbedder()).search("")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.EmptyQueryError: query is empty (or only whitespace)
        """
        q = check_query(query)
        check_k(k)
        trace = trace if trace is not None else Trace()
        with trace.stage("dense"):
            with trace.stage("dense.embed"):
                vec = np.asarray(self.embedder.embed_query(q), dtype=np.float32)
            with trace.stage(f"dense.{self.store.kind}"):
                return self._hits(vec, k)

    def _hits(self, vec: np.ndarray, k: int) -> list[ScoredHit]:
        hits = self.store.search(vec, k, where=self.where or None)
        for h in hits:
            self._check(h.obj.metadata, where=f"{self.store.label} (object {h.id!r})")
        ranked = sorted(hits, key=lambda h: (-h.score, h.id))
        return [ScoredHit(obj=_without_record(h.obj), score=h.score, rank=r) for r, h in enumerate(ranked)]

    def _check(self, recorded: Mapping[str, Any] | None, *, where: str) -> None:
        """:func:`check_recorded_embedder` for a record this retriever has not checked yet."""
        record = {k: recorded[k] for k in RECORD_KEYS if k in recorded} if recorded else {}
        key = json.dumps(record, sort_keys=True, default=str)
        if key in self._checked:
            return
        check_recorded_embedder(record, self.embedder, where=where)
        self._checked.add(key)

    def close(self) -> None:
        """Close the store (what retrievekit opened for it; the caller's own client or engine stays open).

        Examples:
            >>> from retrievekit.core.index.chroma_store import ChromaStore
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> StoreRetriever(ChromaStore.in_memory(), embedder=OnesEmbedder()).close()
        """
        self.store.close()


def as_store_retriever(store: Any, embedder: Any = None) -> StoreRetriever:
    """A :class:`StoreRetriever` from what a caller passed as ``store=``: one already made (kept as it is, its own
    embedder), or a :class:`~retrievekit.core.index.vector_store.VectorStore` (searched through ``embedder``).

    Examples:
        >>> from retrievekit.core.index.chroma_store import ChromaStore
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> r = StoreRetriever(ChromaStore.in_memory(), embedder=OnesEmbedder())
        >>> as_store_retriever(r) is r
        True
    """
    if isinstance(store, StoreRetriever):
        return store
    return StoreRetriever(store, embedder)


def _without_record(obj: DataObject) -> DataObject:
    """The object as the caller wrote it: the embedder record (checked) taken out of its metadata."""
    if not any(k in obj.metadata for k in RECORD_KEYS):
        return obj
    return dataclasses.replace(obj, metadata={k: v for k, v in obj.metadata.items() if k not in RECORD_KEYS})
