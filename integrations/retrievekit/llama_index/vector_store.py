"""Any LlamaIndex vector store (a ``BasePydanticVectorStore`` such as ``PGVectorStore``, or a ``VectorStoreIndex``)
behind retrievekit's :class:`~retrievekit.core.index.vector_store.VectorStore` interface.

Hits keep the store's own node ids and metadata. Every call into the store ends within ``timeout`` seconds
(:class:`~retrievekit.core.index.store_deadline.StoreDeadline`): a server that is down or paused raises
:class:`~retrievekit.core.errors.StoreUnavailableError`. Importing this module registers the store kind
``llama-index`` (:func:`~retrievekit.core.index.store_kinds.open_store`).

Examples:
    >>> import numpy as np
    >>> from llama_index.core.embeddings import MockEmbedding
    >>> from retrievekit.core.types import Passage
    >>> store = LlamaIndexStore(VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=2)))
    >>> rec = {"retrievekit_embedder": "toy", "retrievekit_dim": 2}
    >>> store.add([Passage(id="a", text="cats"), Passage(id="b", text="stocks")], np.eye(2), record=rec)
    >>> store.search(np.array([1.0, 0.1]), k=1)[0].id
    'a'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import BaseNode, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from retrievekit.core.checks import check_k
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.store_deadline import DEFAULT_STORE_TIMEOUT_S, StoreDeadline
from retrievekit.core.index.store_input import check_ids, check_query_vector
from retrievekit.core.index.store_kinds import register_store_kind
from retrievekit.core.index.vector_store import (
    OBJECT_KEY,
    RECORD_KEYS,
    check_vectors,
    check_where,
    object_from_stored,
    stored_metadata,
)
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["LlamaIndexStore", "llama_filters"]


class LlamaIndexStore:
    """A LlamaIndex vector store as a retrievekit :class:`~retrievekit.core.index.vector_store.VectorStore`.

    Args:
        vector_store: a ``BasePydanticVectorStore`` (``PGVectorStore``, ``QdrantVectorStore``...) or a
            ``VectorStoreIndex`` (its store; its docstore gives the text of stores that keep none).
        timeout: seconds each call into the store may take (None: as long as its driver waits).

    Examples:
        >>> from llama_index.core.vector_stores import SimpleVectorStore
        >>> LlamaIndexStore(SimpleVectorStore()).kind
        'llama-index'
        >>> LlamaIndexStore("postgres://")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: LlamaIndexStore takes a LlamaIndex BasePydanticVectorStore or VectorStoreIndex, not a str
    """

    kind = "llama-index"

    def __init__(
        self,
        vector_store: BasePydanticVectorStore | VectorStoreIndex,
        *,
        timeout: float | None = DEFAULT_STORE_TIMEOUT_S,
    ) -> None:
        self.index = vector_store if isinstance(vector_store, VectorStoreIndex) else None
        store = vector_store.vector_store if isinstance(vector_store, VectorStoreIndex) else vector_store
        if not isinstance(store, BasePydanticVectorStore):
            raise InvalidInputError(
                "LlamaIndexStore takes a LlamaIndex BasePydanticVectorStore or VectorStoreIndex, "
                f"not a {type(vector_store).__name__}"
            )
        self.vector_store = store
        table = getattr(store, "table_name", None) or getattr(store, "collection_name", None)
        self.label = f"{type(store).__name__}" + (f" {table!r}" if table else "")
        self._calls = StoreDeadline(timeout, where=self.label)

    def recorded_embedder(self) -> dict[str, Any] | None:
        """None: a LlamaIndex store keeps the record on each node (checked on every hit).

        Examples:
            >>> from llama_index.core.vector_stores import SimpleVectorStore
            >>> LlamaIndexStore(SimpleVectorStore()).recorded_embedder() is None
            True
        """
        return None

    def add(self, objects: Sequence[DataObject], vectors: np.ndarray, *, record: Mapping[str, Any]) -> None:
        """Add one ``TextNode`` per object (its id, text, metadata with the embedder record, and vector).

        Examples:
            >>> from llama_index.core.embeddings import MockEmbedding
            >>> from retrievekit.core.types import Passage
            >>> s = LlamaIndexStore(VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=2)))
            >>> s.add([Passage(id="a", text="x")], np.ones((1, 2)), record={})
            >>> s.count(), s.search(np.ones(2), k=1)[0].id
            (1, 'a')
        """
        vecs = check_vectors(objects, vectors, record.get(RECORD_KEYS[1]))
        nodes = [_node(o, v, record) for o, v in zip(objects, vecs, strict=True)]
        self._calls.run("add", lambda: self.vector_store.add(nodes))
        if self.index is not None:
            self.index.docstore.add_documents(nodes, allow_update=True)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the nodes with these ids.

        Examples:
            >>> from llama_index.core.vector_stores import SimpleVectorStore
            >>> LlamaIndexStore(SimpleVectorStore()).delete(["nope"])
        """
        node_ids = check_ids(ids)
        self._calls.run("delete", lambda: self.vector_store.delete_nodes(node_ids=node_ids))

    def count(self) -> int:
        """How many nodes the store holds (through ``get_nodes``, which most stores implement).

        Examples:
            >>> from llama_index.core.embeddings import MockEmbedding
            >>> LlamaIndexStore(VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=2))).count()
            0
        """
        return len(self.nodes())

    def nodes(self) -> list[BaseNode]:
        """Every node in the store (a corpus for the methods that also need the texts: BM25, ARM).

        Examples:
            >>> from llama_index.core.vector_stores import SimpleVectorStore
            >>> LlamaIndexStore(SimpleVectorStore()).nodes()  # keeps vectors only: pass its VectorStoreIndex
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: SimpleVectorStore cannot list its nodes (get_nodes is not implemented); pass its VectorStoreIndex, or documents= yourself
        """
        try:
            return list(
                self._calls.run("get nodes", lambda: self.vector_store.get_nodes(filters=MetadataFilters(filters=[])))
            )
        except NotImplementedError as e:
            if self.index is not None:
                return sorted(self.index.docstore.docs.values(), key=lambda n: n.node_id)
            raise InvalidInputError(
                f"{self.label} cannot list its nodes (get_nodes is not implemented); pass its VectorStoreIndex, "
                "or documents= yourself"
            ) from e

    def search(self, vector: np.ndarray, k: int, *, where: Mapping[str, Any] | None = None) -> list[ScoredHit]:
        """The ``k`` nearest nodes (the store's similarity, best first), among those whose metadata matches.

        Examples:
            >>> from llama_index.core.embeddings import MockEmbedding
            >>> LlamaIndexStore(VectorStoreIndex([], embed_model=MockEmbedding(embed_dim=2))).search(np.ones(2), k=2)
            []
        """
        check_k(k)
        filt = check_where(where)
        query = VectorStoreQuery(
            query_embedding=check_query_vector(vector),
            similarity_top_k=k,
            filters=llama_filters(filt, self.vector_store),
        )
        try:
            res = self._calls.run("query", lambda: self.vector_store.query(query))
        except Exception as e:
            if filt and "DataError" in {c.__name__ for c in type(e).__mro__}:  # e.g. a number against text rows
                raise InvalidInputError(
                    f"{self.label} cannot compare its metadata with the filter {filt!r}: "
                    f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
                ) from e
            raise
        ids = list(res.ids or [n.node_id for n in res.nodes or []])
        nodes = list(res.nodes) if res.nodes else self._docstore_nodes(ids)
        sims = list(res.similarities) if res.similarities is not None else [1.0 / (r + 1) for r in range(len(ids))]
        hits = [_hit(n, s, r) for r, (n, s) in enumerate(zip(nodes, sims, strict=False))]
        return hits[:k]

    def _docstore_nodes(self, ids: Sequence[str]) -> list[BaseNode]:
        """Nodes of a store that keeps no text, from the ``VectorStoreIndex``'s docstore."""
        if not ids:
            return []
        if self.index is None:
            raise InvalidInputError(
                f"{self.label} returns ids without text; pass its VectorStoreIndex (whose docstore holds the nodes)"
            )
        return list(self.index.docstore.get_nodes(list(ids)))

    def close(self) -> None:
        """Nothing to release: the store (and its engine) is the caller's.

        Examples:
            >>> from llama_index.core.vector_stores import SimpleVectorStore
            >>> LlamaIndexStore(SimpleVectorStore()).close()
        """


_BINDS_VALUES = frozenset({"SimpleVectorStore"})
"""LlamaIndex stores known to take filter values as data (compared in Python, or bound as parameters)."""
_PASTES_AS_TEXT = frozenset({"PGVectorStore"})
"""Stores that compare ``EQ`` as numbers when a value looks like one (``'42'::float``) and text with ``IN``."""
_BREAKS_OUT = frozenset("'\"\\`:")
"""Characters that end a quoted literal or start a bound parameter in query text a store writes with the value."""


def llama_filters(filt: Mapping[str, Any], store: Any) -> MetadataFilters | None:
    """A filter checked by :func:`~retrievekit.core.index.store_input.check_where` as LlamaIndex ``MetadataFilters``
    (``EQ`` for a value, ``IN`` for a list). LlamaIndex's ``PGVectorStore`` (and other stores) paste filter values
    into their SQL, so for every store not known to bind them a string holding a quote, a backslash, a backtick or
    a colon is refused, as is a bool (``MetadataFilter`` has none); a string compares as text on ``PGVectorStore``.

    Examples:
        >>> from llama_index.core.vector_stores import SimpleVectorStore
        >>> llama_filters({"year": 2020}, SimpleVectorStore()).filters[0].operator.value
        '=='
        >>> llama_filters({"tenant": "x' OR '1'='1"}, object())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: metadata filter 'tenant': object writes filter values into its query text, so a value for it may not hold any of " ' : \\ `
    """
    if not filt:
        return None
    name = type(store).__name__
    out = []
    for key, value in filt.items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, bool):
                raise InvalidInputError(
                    f"metadata filter {key!r}: LlamaIndex's MetadataFilter takes no bool; store and filter it as a "
                    "str or int"
                )
            if name not in _BINDS_VALUES and isinstance(v, str) and _BREAKS_OUT & set(v):
                raise InvalidInputError(
                    f"metadata filter {key!r}: {name} writes filter values into its query text, so a value for it "
                    f"may not hold any of {' '.join(sorted(_BREAKS_OUT))}"
                )
        if isinstance(value, list) or (isinstance(value, str) and name in _PASTES_AS_TEXT):
            values = value if isinstance(value, list) else [value]
            out.append(MetadataFilter(key=key, value=values, operator=FilterOperator.IN))
        else:
            out.append(MetadataFilter(key=key, value=value, operator=FilterOperator.EQ))
    return MetadataFilters(filters=out)


def _node(obj: DataObject, vec: np.ndarray, record: Mapping[str, Any]) -> TextNode:
    keys = [OBJECT_KEY, *RECORD_KEYS]
    return TextNode(
        id_=obj.id,
        text=obj.index_text(),
        metadata=stored_metadata(obj, record),
        embedding=vec.tolist(),
        excluded_embed_metadata_keys=keys,
        excluded_llm_metadata_keys=keys,
    )


def _hit(node: BaseNode, score: float | None, rank: int) -> ScoredHit:
    obj = object_from_stored(node.node_id, node.get_content(), node.metadata)
    return ScoredHit(obj=obj, score=float(score) if score is not None else 0.0, rank=rank)


def _open(*, vector_store: Any, timeout: float | None = DEFAULT_STORE_TIMEOUT_S) -> LlamaIndexStore:
    return LlamaIndexStore(vector_store, timeout=timeout)


register_store_kind("llama-index", _open)
