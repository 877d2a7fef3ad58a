"""Adapt any retriever to the agent's ``chunk_search``: retrievekit, LlamaIndex, LangChain, or a bare corpus.

Examples:
    >>> from retrievekit.core.index import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> search = as_search_function(BM25Index.build([Passage(id="a", text="red apples"), Passage(id="b", text="sky")]))
    >>> [c["id"] for c in search("apples", 1, None)]
    ['a']
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from retrievekit.core.errors import EmptyCorpusError, InvalidInputError
from retrievekit.core.iterative.state import Chunk, make_chunk
from retrievekit.core.iterative.steps import SearchFunction
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, Table, TableRow

__all__ = ["SearchFunction", "as_search_function"]


def _fallback_id(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _core_search(retriever: Any) -> SearchFunction:
    def search(query: str, k: int, trace: Trace | None) -> list[Chunk]:
        hits = retriever.search(query, k, trace=trace)
        return [
            make_chunk(h.obj.id, h.obj.text, title=h.obj.title, score=float(h.score), query=query) for h in hits[:k]
        ]

    return search


def _llama_index_search(retriever: Any) -> SearchFunction:
    def search(query: str, k: int, trace: Trace | None) -> list[Chunk]:
        out: list[Chunk] = []
        for nws in retriever.retrieve(query)[:k]:
            node = nws.node
            text = node.get_content()
            meta = dict(node.metadata or {})
            out.append(
                make_chunk(
                    node.node_id or _fallback_id(text),
                    text,
                    title=str(meta.get("title") or ""),
                    score=float(nws.score or 0.0),
                    query=query,
                )
            )
        return out

    return search


def _langchain_search(retriever: Any) -> SearchFunction:
    def search(query: str, k: int, trace: Trace | None) -> list[Chunk]:
        out: list[Chunk] = []
        for doc in retriever.invoke(query)[:k]:
            meta = dict(doc.metadata or {})
            did = doc.id or meta.get("id") or _fallback_id(doc.page_content)
            score = meta.get("score")
            out.append(
                make_chunk(
                    str(did),
                    doc.page_content,
                    title=str(meta.get("title") or ""),
                    score=float(score) if isinstance(score, (int, float)) else 0.0,
                    query=query,
                )
            )
        return out

    return search


def _is_instance(obj: Any, module: str, name: str) -> bool:
    try:
        mod = __import__(module, fromlist=[name])
    except ImportError:
        return False
    cls = getattr(mod, name, None)
    return cls is not None and isinstance(obj, cls)


def as_search_function(retriever: Any) -> SearchFunction:
    """Return a ``search(query, k, trace)`` function over ``retriever``.

    Accepts a retrievekit retriever (``search(query, k, trace=)``), a LlamaIndex ``BaseRetriever`` (its own
    ``similarity_top_k`` should be >= the agent's ``search_top_k``), a LangChain ``BaseRetriever``, a plain callable
    with the ``SearchFunction`` signature, or a sequence of retrievekit objects (the hybrid BM25 + dense baseline is
    built over it).

    Raises:
        EmptyCorpusError: an empty list (nothing to search).
        InvalidInputError: anything else that is none of the above, or a list holding something other than
            ``Passage`` / ``Table`` / ``TableRow`` objects (the message names the first such item).

    Examples:
        >>> as_search_function(42)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: retriever must be a retrievekit retriever, a LlamaIndex or LangChain BaseRetriever, a search function or a list of Passages; got int
        >>> as_search_function([])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: retriever is an empty list: chunk_search needs a retriever, or a non-empty list of Passages to search
    """
    if _is_instance(retriever, "llama_index.core.retrievers", "BaseRetriever"):
        return _llama_index_search(retriever)
    if _is_instance(retriever, "langchain_core.retrievers", "BaseRetriever"):
        return _langchain_search(retriever)
    if hasattr(retriever, "search") and callable(retriever.search):
        return _core_search(retriever)
    if isinstance(retriever, Sequence) and not isinstance(retriever, (str, bytes)):
        objs = list(retriever)
        if not objs:
            raise EmptyCorpusError(
                "retriever is an empty list: chunk_search needs a retriever, or a non-empty list of Passages to search"
            )
        for i, o in enumerate(objs):
            if not isinstance(o, (Passage, Table, TableRow)):
                raise InvalidInputError(
                    f"retriever is a list, so it must hold Passage/Table/TableRow objects; item {i} is a "
                    f"{type(o).__name__}"
                )
        from retrievekit.core.index.baselines import build_hybrid
        from retrievekit.core.registry import MethodContext

        return _core_search(build_hybrid(MethodContext(corpus=objs)))
    if callable(retriever):
        fn: SearchFunction = retriever
        return fn
    raise InvalidInputError(
        "retriever must be a retrievekit retriever, a LlamaIndex or LangChain BaseRetriever, a search function "
        f"or a list of Passages; got {type(retriever).__name__}"
    )
