"""Chroma (embedded, in memory, or a server) behind the :class:`~retrievekit.core.index.vector_store.VectorStore`
interface.

It reaches the collection through what :mod:`retrievekit.core.index.dense` already uses: the clients of
:mod:`~retrievekit.core.index.chroma_clients` and the calls of :mod:`~retrievekit.core.index.chroma_calls` (a finite
timeout on a server, bounded retries of reads, :class:`~retrievekit.core.errors.StoreUnavailableError` for a server
that is down or frozen). A :class:`~retrievekit.core.index.dense.DenseIndex`'s collection opens as one
(:meth:`ChromaStore.from_index`), and so does any Chroma collection another tool wrote (its ids, documents and
metadata are the hits).

Examples:
    >>> import numpy as np
    >>> from retrievekit.core.types import Passage
    >>> store = ChromaStore.in_memory()
    >>> rec = {"retrievekit_embedder": "toy", "retrievekit_dim": 2}
    >>> store.add([Passage(id="a", text="cats"), Passage(id="b", text="stocks")], np.eye(2), record=rec)
    >>> store.count(), store.search(np.array([1.0, 0.1]), k=1)[0].id
    (2, 'a')
    >>> store.close()
"""

from __future__ import annotations

import json
import os
import uuid
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.checks import check_k
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.chroma_calls import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S, StoreCalls
from retrievekit.core.index.chroma_clients import _chromadb, _close_client, _max_batch, _release, persistent_client
from retrievekit.core.index.store_input import check_ids, check_query_vector
from retrievekit.core.index.vector_store import (
    DIM_KEY,
    EMBEDDER_KEY,
    PROBES_KEY,
    check_vectors,
    check_where,
    object_from_stored,
    stored_metadata,
)
from retrievekit.core.types import DataObject, ScoredHit, object_from_dict

__all__ = ["ChromaStore"]

_DENSE_OBJECT = "rk_object"  # where a DenseIndex keeps each object's JSON


class ChromaStore:
    """One Chroma collection as a :class:`~retrievekit.core.index.vector_store.VectorStore` (cosine).

    Args:
        collection: the Chroma collection.
        client: its client (closed by :meth:`close` only when ``owns_client``).
        calls: the :class:`~retrievekit.core.index.chroma_calls.StoreCalls` that run every request.
        owns_client: whether this store opened the client itself.
        drop_on_close: delete the collection at :meth:`close` (an in-memory store of its own).

    Examples:
        >>> ChromaStore.in_memory().kind
        'chroma'
    """

    kind = "chroma"

    def __init__(
        self,
        collection: Any,
        *,
        client: Any = None,
        calls: StoreCalls | None = None,
        owns_client: bool = False,
        drop_on_close: bool = False,
    ) -> None:
        self.collection = collection
        self.client = client
        self.label = f"Chroma collection {collection.name!r}"
        self._calls = calls if calls is not None else StoreCalls(client, timeout=None)
        drop = collection.name if drop_on_close else None
        self._release = weakref.finalize(self, _release, client if owns_client else None, client, drop)
        self._release.atexit = False

    # ------------------------------------------------------------------ open
    @classmethod
    def in_memory(cls, name: str = "retrievekit-store") -> ChromaStore:
        """A new collection of its own in the in-process Chroma (dropped at :meth:`close`).

        Examples:
            >>> ChromaStore.in_memory().count()
            0
        """
        client = _chromadb().EphemeralClient(settings=_chromadb().Settings(anonymized_telemetry=False))
        col = _create(client, f"{name[:490]}-{uuid.uuid4().hex[:16]}")
        return cls(col, client=client, owns_client=True, drop_on_close=True)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        client: Any = None,
        collection_name: str = "retrievekit",
        create: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
    ) -> ChromaStore:
        """A collection in an embedded Chroma folder (``path``) or on a client (``client``, e.g. a server's
        :func:`~retrievekit.core.index.chroma_clients.http_client`); ``create`` makes it when it is missing.

        Examples:
            >>> ChromaStore.open()
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: pass path= (an embedded Chroma folder) or client= (e.g. a Chroma server), one of them
        """
        if (path is None) == (client is None):
            raise InvalidInputError(
                "pass path= (an embedded Chroma folder) or client= (e.g. a Chroma server), one of them"
            )
        owns = client is None
        client = persistent_client(path) if path is not None else client
        calls = StoreCalls(client, timeout=None if owns else timeout, retries=retries)
        try:
            if create:
                col = calls.run("create collection", lambda: _create(client, collection_name, get_or_create=True))
            else:
                col = calls.run(
                    "get collection", lambda: client.get_collection(collection_name, embedding_function=None)
                )
        except ValueError as e:  # chroma raises ValueError (or its NotFoundError) for a missing collection
            if owns:
                _close_client(client)
            raise IndexFormatError(f"no Chroma collection {collection_name!r} ({type(e).__name__}: {e})") from e
        return cls(col, client=client, calls=calls, owns_client=owns)

    @classmethod
    def from_index(cls, index: Any) -> ChromaStore:
        """The collection of a :class:`~retrievekit.core.index.dense.DenseIndex` (the index keeps owning it).

        Examples:
            >>> from retrievekit.core.index.dense import DenseIndex
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> from retrievekit.core.types import Passage
            >>> idx = DenseIndex.build([Passage(id="a", text="x")], embedder=OnesEmbedder())
            >>> sorted(ChromaStore.from_index(idx).recorded_embedder())  # the index's name, dimension and probes
            ['retrievekit_dim', 'retrievekit_embedder', 'retrievekit_probes']
        """
        return cls(index.collection, client=index.client, calls=index._calls)

    # ------------------------------------------------------------------ the interface
    def recorded_embedder(self) -> dict[str, Any] | None:
        """The embedding model recorded in the collection's metadata (a DenseIndex's or this store's), or None.

        Examples:
            >>> ChromaStore.in_memory().recorded_embedder() is None
            True
        """
        meta = self.collection.metadata or {}
        if EMBEDDER_KEY in meta:
            probes = meta.get(PROBES_KEY)
            return {
                EMBEDDER_KEY: meta[EMBEDDER_KEY],
                DIM_KEY: meta.get(DIM_KEY),
                **({PROBES_KEY: probes} if probes else {}),
            }
        if "embedder" in meta and meta.get("retrievekit_format") == "dense":  # a DenseIndex's collection
            probes = meta.get("embedder_fingerprint")
            return {
                EMBEDDER_KEY: meta["embedder"],
                DIM_KEY: meta.get("dim"),
                **({PROBES_KEY: probes} if probes else {}),
            }
        return None

    def add(self, objects: Sequence[DataObject], vectors: np.ndarray, *, record: Mapping[str, Any]) -> None:
        """Add objects with their vectors; the first add records the embedding model in the collection's metadata.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> s = ChromaStore.in_memory()
            >>> s.add([Passage(id="a", text="x")], np.ones((1, 2)), record={"retrievekit_embedder": "e", "retrievekit_dim": 2})
            >>> s.recorded_embedder()
            {'retrievekit_embedder': 'e', 'retrievekit_dim': 2}
        """
        vecs = check_vectors(objects, vectors, record.get(DIM_KEY))
        col = self.collection
        if self.recorded_embedder() is None and record:
            meta = {**(col.metadata or {}), **record}
            self._calls.run("record the embedder", lambda: col.modify(metadata=meta))
        step = max(1, _max_batch(self.client))
        for start in range(0, len(objects), step):
            part = objects[start : start + step]
            batch = {
                "ids": [o.id for o in part],
                "embeddings": vecs[start : start + step].tolist(),
                "metadatas": [stored_metadata(o, record) for o in part],
                "documents": [o.index_text() for o in part],
            }
            self._calls.run("add", lambda b=batch: col.add(**b), retry=False)  # type: ignore[misc]

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the objects with these ids.

        Examples:
            >>> s = ChromaStore.in_memory(); s.delete(["nope"]); s.count()
            0
        """
        col = self.collection
        doomed = check_ids(ids)
        self._calls.run("delete", lambda: col.delete(ids=doomed), retry=False)

    def count(self) -> int:
        """The number of objects in the collection.

        Examples:
            >>> ChromaStore.in_memory().count()
            0
        """
        return int(self._calls.run("count", self.collection.count))

    def search(self, vector: np.ndarray, k: int, *, where: Mapping[str, Any] | None = None) -> list[ScoredHit]:
        """The ``k`` nearest objects by cosine similarity (ties by id), among those matching ``where``.

        Examples:
            >>> ChromaStore.in_memory().search(np.ones(2), k=3)
            []
        """
        check_k(k)
        query = check_query_vector(vector)
        chroma_where = _chroma_where(check_where(where))
        col = self.collection
        res = self._calls.run(
            "query",
            lambda: col.query(
                query_embeddings=[query],
                n_results=k,  # Chroma returns what it holds when that is fewer (counting first scans the index)
                where=chroma_where,
                include=["distances", "metadatas", "documents"],
            ),
        )
        rows = sorted(
            zip(res["distances"][0], res["ids"][0], res["metadatas"][0], res["documents"][0], strict=True),
            key=lambda r: (r[0], r[1]),
        )
        return [
            ScoredHit(obj=_object(oid, doc, meta), score=1.0 - float(dist), rank=rank)
            for rank, (dist, oid, meta, doc) in enumerate(rows)
        ]

    def close(self) -> None:
        """Release the client this store opened (and an in-memory collection of its own); a client passed in stays
        open. Safe to call twice.

        Examples:
            >>> s = ChromaStore.in_memory(); s.close(); s.close()
        """
        self._release()


def _chroma_where(filt: Mapping[str, Any]) -> dict[str, Any] | None:
    """A checked filter in Chroma's own ``where`` (``$in`` for a list, ``$and`` of several keys); Chroma takes the
    values as data."""
    parts = [{key: {"$in": value} if isinstance(value, list) else value} for key, value in filt.items()]
    return None if not parts else parts[0] if len(parts) == 1 else {"$and": parts}


def _create(client: Any, name: str, *, get_or_create: bool = False) -> Any:
    config = {"hnsw": {"space": "cosine"}}
    make = client.get_or_create_collection if get_or_create else client.create_collection
    return make(name, configuration=config, embedding_function=None)


def _object(oid: str, document: str | None, meta: Mapping[str, Any] | None) -> DataObject:
    """A hit's object: a DenseIndex's stored JSON, else the row as the store keeps it."""
    raw = (meta or {}).get(_DENSE_OBJECT)
    if isinstance(raw, str):
        return object_from_dict(json.loads(raw))
    return object_from_stored(oid, document, meta)
