"""The registry of vector store kinds: one name per kind of store, and the function that opens one.

Core registers ``chroma`` (an embedded Chroma folder: ``path=``), ``chroma-server`` (``host=``, ``port=``) and
``chroma-memory``, and ``faiss`` (an in-process HNSW graph in a folder: ``path=``, ``create=``, ``ef_search=``, ``dtype=``; the
fastest vector path on one machine, ``docs/benchmarks.md``) and ``faiss-memory``; each framework edge registers its own when its ``vector_store`` module is imported (``llama-index``: a LlamaIndex
``BasePydanticVectorStore`` or ``VectorStoreIndex``, ``langchain``: a LangChain ``VectorStore``, both as
``store=``). Installed packages add theirs as entry points of the group ``retrievekit.stores`` (``name =
"module:opener"``). The table is :data:`STORE_KINDS`, a :class:`~retrievekit.core.plugins.Registry`
(``docs/plugins.md``).

Examples:
    >>> "chroma" in store_kinds()
    True
    >>> open_store("chroma-memory").kind
    'chroma'
    >>> open_store("qdrant")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.UnknownNameError: unknown vector store kind 'qdrant'; known: chroma, chroma-memory, chroma-server... (the edges add theirs: ...)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.vector_store import VectorStore
from retrievekit.core.plugins import Registry

__all__ = ["STORE_ENTRY_POINT_GROUP", "STORE_KINDS", "open_store", "register_store_kind", "store_kinds"]

STORE_ENTRY_POINT_GROUP = "retrievekit.stores"
"""Entry-point group of vector store kinds: ``name = "module:function"``, the function taking the kind's keyword
arguments and returning a :class:`~retrievekit.core.index.vector_store.VectorStore`."""

STORE_KINDS: Registry[Callable[..., VectorStore]] = Registry(
    "vector store kind",
    STORE_ENTRY_POINT_GROUP,
    unknown="unknown {kind} {name!r}; known: {known} (the edges add theirs: import retrievekit.llama_index.vector_store"
    " or retrievekit.langchain.vector_store)",
)
"""The store kinds (a :class:`~retrievekit.core.plugins.Registry`): core's, the edges', the entry points'."""


def register_store_kind(kind: str, opener: Callable[..., VectorStore]) -> None:
    """Register ``opener(**kwargs) -> VectorStore`` under ``kind`` (registering the same kind again replaces it).

    Examples:
        >>> from retrievekit.core.index.chroma_store import ChromaStore
        >>> register_store_kind("my-chroma", lambda **kw: ChromaStore.in_memory(**kw))
        >>> open_store("my-chroma").kind
        'chroma'
    """
    if not isinstance(kind, str) or not kind:
        raise InvalidInputError(f"a store kind must be a non-empty string, got {kind!r}")
    STORE_KINDS.register(kind, opener)


def store_kinds() -> list[str]:
    """The registered kinds (and those installed packages declare), sorted.

    Examples:
        >>> store_kinds()[:3]
        ['chroma', 'chroma-memory', 'chroma-server']
    """
    return STORE_KINDS.names()


def open_store(kind: str, **kwargs: Any) -> VectorStore:
    """Open a store of a registered kind with that kind's arguments.

    Examples:
        >>> open_store("chroma-memory").count()
        0
    """
    return STORE_KINDS.get(kind)(**kwargs)


def _chroma(**kwargs: Any) -> VectorStore:
    from retrievekit.core.index.chroma_store import ChromaStore

    return ChromaStore.open(**kwargs)


def _chroma_server(*, host: str, port: int, timeout: float = 60.0, **kwargs: Any) -> VectorStore:
    from retrievekit.core.index.chroma_clients import http_client
    from retrievekit.core.index.chroma_store import ChromaStore

    return ChromaStore.open(client=http_client(host, port, timeout=timeout), timeout=timeout, **kwargs)


def _chroma_memory(**kwargs: Any) -> VectorStore:
    from retrievekit.core.index.chroma_store import ChromaStore

    return ChromaStore.in_memory(**kwargs)


def _faiss(**kwargs: Any) -> VectorStore:
    from retrievekit.core.index.faiss_store import FaissStore

    return FaissStore.open(**kwargs)


def _faiss_memory(**kwargs: Any) -> VectorStore:
    from retrievekit.core.index.faiss_store import FaissStore

    return FaissStore.in_memory(**kwargs)


register_store_kind("chroma", _chroma)
register_store_kind("chroma-server", _chroma_server)
register_store_kind("chroma-memory", _chroma_memory)
register_store_kind("faiss", _faiss)
register_store_kind("faiss-memory", _faiss_memory)
