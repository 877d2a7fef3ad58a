"""Embeddings awaited to the socket (issue #60 item 4), against the scripted OpenAI-compatible server in its own
process (``_async_llm_server``: the ``words`` embedding model answers after 0.1 s):

* 50 concurrent dense ``aretrieve`` through a LlamaIndex retriever over a served embedder give the sync API's
  results and start no thread per request (the sync client's per-request deadline watchdog, ``retrievekit-deadline``,
  never runs; the thread count stays within the bridge's fixed pool).
* A cancelled embedding batch (200 texts, 2 per request, awaited by the async model driver) sends no request after
  the cancel + 0.5 s, and its connections are closed.
* LangChain's ``aembed_documents`` of retrievekit's own ``RetrieveKitEmbeddings`` (and LlamaIndex's
  ``aget_text_embedding_batch`` of ``RetrieveKitEmbedding``) is awaited on the loop: no pool or executor thread.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import threading
import time

import numpy as np
import pytest
from _async_llm_server import llm_server, stats
from _cancelling import after_the_cancel
from _thread_watch import watching_threads

from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.served_embedder import ServedEmbedder
from retrievekit.core.llm.bridge import async_workers
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import adrive
from retrievekit.core.types import Passage

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

WORDS = ["volcano", "magma", "ocean", "tide", "forest", "pine", "desert", "dune", "glacier", "ice"]
CORPUS = [Passage(id=f"p{i:02d}", text=f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]} note {i}") for i in range(30)]
QUERIES = [f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]}" for i in range(50)]
WATCHDOG = "retrievekit-deadline"
"""The name of the sync client's per-request watchdog thread: the awaited path must start none."""


@pytest.fixture(scope="module")
def server():
    with llm_server(0.05, 0, embed_delay=0.1) as s:
        yield s


def test_50_concurrent_dense_aretrieve_await_the_served_embedder_with_the_sync_results(server):
    from retrievekit.llama_index import RetrieveKitRetriever

    index = DenseIndex.build(CORPUS, embedder=f"openai:words@{server.url}")
    retriever = RetrieveKitRetriever(index, similarity_top_k=3)
    sync_ids = [[n.node.node_id for n in retriever.retrieve(q)] for q in QUERIES]
    asyncio.run(retriever.aretrieve("warm up"))  # the pool's first threads, outside the measurement
    gc.collect()
    base = threading.active_count()
    before = stats(server)["embeddings"]

    async def all_queries():
        return await asyncio.gather(*(retriever.aretrieve(q) for q in QUERIES))

    results, counts, names = asyncio.run(watching_threads(all_queries))
    assert [[n.node.node_id for n in r] for r in results] == sync_ids
    assert stats(server)["embeddings"] - before == len(QUERIES)  # one awaited request per query
    assert WATCHDOG not in names, names
    assert max(counts) - base <= async_workers() + 4, (base, max(counts), names)
    index.close()


def test_a_cancelled_embedding_batch_sends_nothing_more(server):
    embedder = ServedEmbedder("words", server.url, batch_size=2)
    texts = [f"text number {i}" for i in range(200)]

    def embed_all():
        (vectors,) = yield [ModelCall.embed(texts, purpose="test.batch")]
        return vectors

    async def scenario() -> float:
        task = asyncio.create_task(adrive(embed_all(), None, embedder=embedder))
        await asyncio.sleep(0.35)
        task.cancel()
        cancelled_at = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled_at

    before = len(stats(server)["embedding_arrivals"])
    cancelled_at = asyncio.run(scenario())
    got = after_the_cancel(server, cancelled_at, arrivals="embedding_arrivals")
    sent = got["embedding_arrivals"][before:]
    assert 0 < len(sent) < 100, len(sent)  # some of the 100 requests were sent before the cancel, not all
    assert got["open"] <= 1, got  # the stats request itself


# framework -> (module, retrievekit's embeddings class there, its sync batch method, async batch, async query)
EDGE_EMBEDDINGS = {
    "langchain": (
        "retrievekit.langchain.embedding_model",
        "RetrieveKitEmbeddings",
        "embed_documents",
        "aembed_documents",
        "aembed_query",
    ),
    "llama_index": (
        "retrievekit.llama_index.embedding_model",
        "RetrieveKitEmbedding",
        "get_text_embedding_batch",
        "aget_text_embedding_batch",
        "aget_query_embedding",
    ),
}


@pytest.mark.parametrize("framework", sorted(EDGE_EMBEDDINGS))
def test_a_frameworks_retrievekit_embeddings_are_awaited_on_the_loop(server, framework):
    module, name, many, amany, aone = EDGE_EMBEDDINGS[framework]
    model = getattr(importlib.import_module(module), name)(f"openai:words@{server.url}")
    texts = [f"{w} shore" for w in WORDS]
    sync = getattr(model, many)(texts)

    async def awaited():
        return await getattr(model, amany)(texts), await getattr(model, aone)(texts[0])

    (vectors, query), _counts, names = asyncio.run(watching_threads(awaited))
    assert np.allclose(vectors, sync) and np.allclose(query, sync[0])
    assert names == set(), names  # no bridge pool, executor or watchdog thread
