"""The indexes' awaited paths: an embedding awaited where the embedder has an async API, and the dense index's
awaited search (``DenseIndex.asearch``), which the edges' ``aretrieve`` awaits
(:func:`~retrievekit.core.edge.atraced_search`) and :class:`~retrievekit.core.index.hybrid.HybridRetriever`'s
``asearch`` awaits for its dense part.

An embedder with ``aembed_query`` / ``aembed_documents`` (a served endpoint:
:class:`~retrievekit.core.index.served_embedder.ServedEmbedder`; a framework's model with an async API:
:class:`~retrievekit.core.index.wrapped_embedder.WrappedEmbedder`) is awaited on the caller's loop, with no thread per
request; any other (an in-process model) runs on the bridge's bounded pool
(:func:`~retrievekit.core.llm.bridge.run_in_pool`), as does the Chroma query itself (an embedded store's work, or a
Chroma server's blocking client).

Examples:
    >>> import asyncio
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> asyncio.run(aembed_query(OnesEmbedder(), "tea")).shape, asyncio.run(aembed_documents(OnesEmbedder(), ["a"])).shape
    ((2,), (1, 2))
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from retrievekit.core.llm.bridge import run_in_pool, run_off_loop
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit, object_from_dict

__all__ = ["OBJ_KEY", "aembed_documents", "aembed_query", "asearch_dense", "awaited_search", "query_hits"]

OBJ_KEY = "rk_object"
"""The metadata key under which a dense index's Chroma collection keeps each object's JSON."""


async def aembed_query(embedder: Any, text: str) -> np.ndarray:
    """``embedder``'s vector of the query ``text``: its ``aembed_query`` awaited when it has one, else its
    ``embed_query`` on the bridge's bounded pool.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> asyncio.run(aembed_query(OnesEmbedder(), "tea")).tolist()
        [1.0, 1.0]
    """
    asend = getattr(embedder, "aembed_query", None)
    got = await asend(text) if asend is not None else await run_in_pool(embedder.embed_query, text)
    return np.asarray(got, dtype=np.float32)


async def aembed_documents(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """``embedder``'s vectors of ``texts``: its ``aembed_documents`` awaited when it has one, else its
    ``embed_documents`` on the bridge's bounded pool.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> asyncio.run(aembed_documents(OnesEmbedder(), ["a", "b"])).shape
        (2, 2)
    """
    asend = getattr(embedder, "aembed_documents", None)
    texts = list(texts)
    got = await asend(texts) if asend is not None else await run_in_pool(embedder.embed_documents, texts)
    return np.asarray(got, dtype=np.float32)


async def awaited_search(retriever: Any, query: str, k: int, trace: Trace | None) -> list[ScoredHit]:
    """``retriever``'s hits, its ``asearch`` awaited when it has one, else its ``search`` off the loop (the bridge's
    bounded pool, traces shared with the awaiting task).

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> [h.id for h in asyncio.run(awaited_search(BM25Index.build([Passage(id="a", text="tea")]), "tea", 1, None))]
        ['a']
    """
    asearch = getattr(retriever, "asearch", None)
    if asearch is not None:
        return list(await asearch(query, k, trace=trace))
    return list(await run_off_loop(retriever.search, query, k, trace=trace))


def query_hits(result: dict[str, Any]) -> list[ScoredHit]:
    """The hits of one Chroma query's ``result`` (distances, ids, metadatas of its first query), by distance then id.

    Examples:
        >>> meta = {OBJ_KEY: json.dumps({"kind": "passage", "id": "a", "text": "tea"})}
        >>> query_hits({"distances": [[0.25]], "ids": [["a"]], "metadatas": [[meta]]})[0].score
        0.75
    """
    rows = sorted(
        zip(result["distances"][0], result["ids"][0], result["metadatas"][0], strict=True), key=lambda r: (r[0], r[1])
    )
    return [
        ScoredHit(obj=object_from_dict(json.loads(meta[OBJ_KEY])), score=1.0 - float(dist), rank=rank)
        for rank, (dist, _id, meta) in enumerate(rows)
    ]


async def asearch_dense(index: Any, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
    """``DenseIndex.asearch``: :meth:`~retrievekit.core.index.dense.DenseIndex.search` awaited, the query embedded
    through :func:`aembed_query` (awaited on the loop for an async embedder) and the Chroma query on the bridge's
    bounded pool; the same hits.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> from retrievekit.core.index.dense import DenseIndex
        >>> from retrievekit.core.types import Passage
        >>> with DenseIndex.build([Passage(id="a", text="tea")], embedder=OnesEmbedder()) as idx:
        ...     [h.id for h in asyncio.run(idx.asearch("tea", 1))] == [h.id for h in idx.search("tea", 1)]
        True
    """
    q, col, trace = index._search_plan(query, k, trace)
    with trace.stage("dense"):
        with trace.stage("dense.embed"):
            vec = await aembed_query(index.embedder, q)
        # k as asked: Chroma returns what it holds when that is fewer (counting first costs a scan of the index)
        res = await run_in_pool(
            index._calls.run,
            "query",
            lambda: col.query(query_embeddings=[vec.tolist()], n_results=k, include=["distances", "metadatas"]),
        )
    return query_hits(res)
