"""One interface to the vector stores retrievekit searches: the embedded Chroma, a Chroma server, or a framework's
store (any LlamaIndex ``BasePydanticVectorStore`` / ``VectorStoreIndex``, any LangChain ``VectorStore``: pgvector,
Qdrant, Elasticsearch...), wrapped by the edges.

A :class:`VectorStore` holds vectors with the objects they embed. It adds, deletes, searches by vector (with an
equality filter on metadata), counts and closes; it never embeds (the :class:`~retrievekit.core.index.store_retriever.
StoreRetriever` over it does). A store answers with the objects as the store keeps them: the store's own ids, text
and metadata. Objects that retrievekit wrote carry a record of the embedding model that wrote them
(:func:`embedder_record`: its name, dimension and probe fingerprint), and a store written by another model is
refused (:func:`check_recorded_embedder`, through :func:`~retrievekit.core.index.fingerprint.check_embedder`, the
check every dense index makes).

Examples:
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> embedder_record(OnesEmbedder())
    {'retrievekit_embedder': 'ones', 'retrievekit_dim': 2, 'retrievekit_probes': '[[0.707, 0.707], [0.707, 0.707], [0.707, 0.707]]'}
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.fingerprint import check_embedder, embedder_fingerprint, recorded_fingerprint
from retrievekit.core.index.store import object_json
from retrievekit.core.index.store_input import check_storable, check_where
from retrievekit.core.types import DataObject, Passage, ScoredHit, object_from_dict

__all__ = [
    "RECORD_KEYS",
    "EMBEDDER_KEY",
    "DIM_KEY",
    "OBJECT_KEY",
    "PROBES_KEY",
    "VectorStore",
    "check_recorded_embedder",
    "check_vectors",
    "check_where",
    "embedder_record",
    "object_from_stored",
    "stored_metadata",
]

EMBEDDER_KEY = "retrievekit_embedder"
"""Metadata key: the name of the embedding model that wrote an object (or a Chroma collection)."""
DIM_KEY = "retrievekit_dim"
"""Metadata key: that model's dimension."""
PROBES_KEY = "retrievekit_probes"
"""Metadata key: that model's probe fingerprint (:mod:`~retrievekit.core.index.fingerprint`), as JSON."""
RECORD_KEYS = (EMBEDDER_KEY, DIM_KEY, PROBES_KEY)
"""The keys of an :func:`embedder_record`."""
OBJECT_KEY = "retrievekit_object"
"""Metadata key: the whole object retrievekit wrote, as JSON (a table keeps its rows)."""


@runtime_checkable
class VectorStore(Protocol):
    """What retrievekit needs from a vector store. ``kind`` names the implementation (``chroma``, ``llama-index``,
    ``langchain``); ``label`` names the store (a collection, a table) in messages.

    Calls to a server end within the store's timeout: a server that is down or paused raises
    :class:`~retrievekit.core.errors.StoreUnavailableError`.

    Examples:
        >>> from retrievekit.core.index.chroma_store import ChromaStore
        >>> isinstance(ChromaStore.in_memory(), VectorStore)
        True
    """

    kind: str
    label: str

    def add(self, objects: Sequence[DataObject], vectors: np.ndarray, *, record: Mapping[str, Any]) -> None:
        """Store ``objects`` with their ``vectors`` (one row each); ``record`` is :func:`embedder_record`."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the objects with these ids (ids not in the store are ignored)."""
        ...

    def search(self, vector: np.ndarray, k: int, *, where: Mapping[str, Any] | None = None) -> list[ScoredHit]:
        """The ``k`` nearest objects to ``vector`` (cosine similarity, best first), among those whose metadata
        matches every ``where`` item (:func:`~retrievekit.core.index.store_input.check_where`: equal to a value, or
        one of a list). A search never writes."""
        ...

    def count(self) -> int:
        """How many objects the store holds."""
        ...

    def recorded_embedder(self) -> dict[str, Any] | None:
        """The embedding model recorded for the whole store (a Chroma collection's metadata), or None."""
        ...

    def close(self) -> None:
        """Release what retrievekit opened for this store (never the caller's own client or engine)."""
        ...


def embedder_record(embedder: Any) -> dict[str, Any]:
    """What retrievekit records of the embedding model that writes a store: its ``name``, ``dim`` and probe
    fingerprint (:func:`~retrievekit.core.index.fingerprint.embedder_fingerprint`, as JSON: store metadata holds
    scalars).

    Examples:
        >>> import numpy as np
        >>> class E:
        ...     name, dim = "minilm", 2
        ...     def embed_documents(self, texts): return np.ones((len(texts), 2))
        >>> sorted(embedder_record(E()).items())[:2]
        [('retrievekit_dim', 2), ('retrievekit_embedder', 'minilm')]
    """
    fp = embedder_fingerprint(embedder)
    return {EMBEDDER_KEY: fp["name"], DIM_KEY: fp["dim"], PROBES_KEY: json.dumps(fp["probes"])}


def check_recorded_embedder(recorded: Mapping[str, Any] | None, embedder: Any, *, where: str) -> None:
    """Refuse to search a store through another embedding model than the one recorded as having written it.

    ``recorded`` is an :func:`embedder_record` (or an object's metadata holding one); None or a mapping without the
    keys (a store written by another tool) passes. The check is
    :func:`~retrievekit.core.index.fingerprint.check_embedder`'s: another dimension, or probe vectors unlike the
    recorded ones, raise :class:`~retrievekit.core.errors.EmbedderMismatchError` naming both models; a record
    without probes (written before fingerprints) is checked by name and dimension, with an
    :class:`~retrievekit.core.errors.UnverifiedIndexWarning`.

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> check_recorded_embedder(embedder_record(OnesEmbedder()), OnesEmbedder(), where="t")
        >>> check_recorded_embedder({"retrievekit_embedder": "bge", "retrievekit_dim": 2}, OnesEmbedder(), where="table docs")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderMismatchError: table docs was written with the embedding model 'bge' (dim 2), but the model given is 'ones' (dim 2); pass the model that built it, or rebuild the index
    """
    if not recorded or EMBEDDER_KEY not in recorded:
        return
    found = recorded_fingerprint(
        recorded.get(EMBEDDER_KEY), recorded.get(DIM_KEY), recorded.get(PROBES_KEY), where="the store"
    )
    check_embedder(found, embedder, where=where, written="written with the embedding model")


def check_vectors(objects: Sequence[DataObject], vectors: Any, dim: int | None = None) -> np.ndarray:
    """``vectors`` as a float32 array with one finite row per object (of ``dim`` columns when given), for objects a
    store can hold (:func:`~retrievekit.core.index.store_input.check_storable`: no NUL byte in an id, a text or
    metadata): what every store's ``add`` checks before writing.

    Examples:
        >>> check_vectors([Passage(id="a", text="x")], [[1.0, 0.0]]).shape
        (1, 2)
        >>> check_vectors([Passage(id="a", text="x")], [[1.0, 0.0]], dim=3)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: vectors must have shape (1, 3), got (1, 2)
        >>> check_vectors([Passage(id="a\\x00", text="x")], [[1.0, 0.0]])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: object id: a string may not hold a NUL byte
    """
    check_storable(objects)
    arr = np.asarray(vectors, dtype=np.float32)
    want = (len(objects), arr.shape[-1] if dim is None and arr.ndim == 2 else dim)
    if arr.ndim != 2 or arr.shape != want:
        raise InvalidInputError(f"vectors must have shape {want}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise InvalidInputError("vectors must be finite numbers")
    return arr


def stored_metadata(obj: DataObject, record: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata retrievekit writes beside an object's vector: the object's own metadata (values a store can
    filter on: str, int, float, bool), the embedder record, and the whole object as JSON.

    Examples:
        >>> sorted(stored_metadata(Passage(id="a", text="x", metadata={"year": 2020}), {"retrievekit_dim": 2}))
        ['retrievekit_dim', 'retrievekit_object', 'year']
    """
    own = {k: v for k, v in obj.metadata.items() if isinstance(v, str | int | float | bool) and v is not None}
    return {**own, **record, OBJECT_KEY: object_json(obj)}


def object_from_stored(oid: str, text: str | None, metadata: Mapping[str, Any] | None) -> DataObject:
    """The object behind one stored row: the object retrievekit wrote (its JSON, with the embedder record in its
    metadata for :class:`~retrievekit.core.index.store_retriever.StoreRetriever` to check and remove), else a
    passage with the store's own id, text and metadata (a row written by another tool).

    Examples:
        >>> object_from_stored("n1", "Cats purr.", {"source": "wiki"})
        Passage(id='n1', text='Cats purr.', title='', metadata={'source': 'wiki'}, kind='passage')
    """
    meta = dict(metadata or {})
    raw = meta.get(OBJECT_KEY)
    if isinstance(raw, str):
        try:
            obj = object_from_dict(json.loads(raw))
        except (ValueError, TypeError, KeyError) as e:
            raise IndexFormatError(f"stored object {oid!r} has an unreadable {OBJECT_KEY} ({e})") from e
        record = {k: meta[k] for k in RECORD_KEYS if k in meta}
        return dataclasses.replace(obj, metadata={**obj.metadata, **record}) if record else obj
    title = meta.get("title")
    return Passage(id=str(oid), text=text or "", title=title if isinstance(title, str) else "", metadata=meta)
