"""A LATTICE query whose every slate falls back, awaited (``Lattice.asearch`` on the async model driver) with a served
embedder, awaits the query's embedding on the loop through the embedder's async client: the same hits as the sync
search, one embedding request, and no thread per request (the sync client's deadline watchdog,
``retrievekit-deadline``, never runs). The scripted server (``_async_llm_server``) answers the ``words`` model
after 0.2 s, so a watchdog thread would live long enough to be seen."""

from __future__ import annotations

import asyncio

import pytest
from _async_llm_server import llm_server, stats
from _lattice import planted_tree
from _thread_watch import watching_threads

from retrievekit.core.fakes import FixedReplyLLM
from retrievekit.core.index.served_embedder import ServedEmbedder
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.trace import Trace

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def test_an_awaited_all_fallback_query_awaits_the_served_embedder():
    with llm_server(0.05, 0, embed_delay=0.2) as server:
        embedder = ServedEmbedder("words", server.url)
        tree = planted_tree()
        nodes = list(tree.iter_nodes())
        tree.embeddings = dict(
            zip([n.id for n in nodes], embedder.embed_documents([n.text for n in nodes]), strict=True)
        )
        lattice = Lattice(tree, FixedReplyLLM("no JSON here"), embedder=embedder)
        sync_ids = [h.id for h in lattice.search("volcano magma lava", k=3)]
        before = stats(server)["embeddings"]
        trace = Trace()

        async def awaited():
            return await lattice.asearch("volcano magma lava", k=3, trace=trace)

        hits, _counts, names = asyncio.run(watching_threads(awaited))
        assert trace.counters["lattice.fallback_slates"] == trace.counters["lattice.slates"] >= 4
        assert [h.id for h in hits] == sync_ids
        assert stats(server)["embeddings"] - before == 1  # the query, once
        assert "retrievekit-deadline" not in names, names
