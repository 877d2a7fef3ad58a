"""The served embedder awaited (``aembed_documents`` / ``aembed_query``, issue #60 item 4) keeps the sync client's
policy, through its own async client on loopback: vectors in input order and batched, a 503 retried, a 400 refused
naming the endpoint and not retried, a reply that is not JSON, a dead endpoint and a server that never answers each
a typed error within the timeout, a reply over the size cap refused; and the same vectors as the sync client."""

from __future__ import annotations

import asyncio
import gc
import time

import numpy as np
import pytest
from _async_llm_server import llm_server
from _cancelling import assert_nothing_printed, close_with_calls_in_flight, unraisable_caught
from _http_replies import Reply, dead_url, embeddings, scripted_server, silent_url

from retrievekit.core.errors import EmbedderTimeoutError, EmbedderUnavailableError
from retrievekit.core.index.served_embedder import ServedEmbedder
from retrievekit.core.llm.call_policy import CallPolicy

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

FAST = CallPolicy(timeout=5, max_retries=2, backoff=0.01)


def test_awaited_vectors_come_back_in_input_order_normalised_and_batched():
    with scripted_server([embeddings([3.0, 4.0], [0.0, 2.0]), embeddings([1.0, 0.0])]) as srv:
        e = ServedEmbedder("m", srv.url, policy=FAST, batch_size=2)
        x = asyncio.run(e.aembed_documents(["a", "b", "c"]))
        assert np.allclose(x, [[0.6, 0.8], [0.0, 1.0], [1.0, 0.0]]) and e.dim == 2
        assert [r["input"] for r in srv.requests] == [["a", "b"], ["c"]]


def test_an_awaited_503_is_retried_then_answers():
    with scripted_server([Reply(status=503, body=b"busy"), embeddings([1.0, 1.0])]) as srv:
        assert asyncio.run(ServedEmbedder("m", srv.url, policy=FAST).aembed_query("q")).shape == (2,)
        assert len(srv.requests) == 2


def test_an_awaited_refused_request_is_not_retried_and_names_the_endpoint():
    with scripted_server([Reply(status=400, body=b'{"error": "model not found"}')]) as srv:
        with pytest.raises(EmbedderUnavailableError, match=r"HTTP 400.*model not found") as info:
            asyncio.run(ServedEmbedder("m", srv.url, policy=FAST).aembed_query("q"))
        assert srv.url in str(info.value) and info.value.status == 400 and len(srv.requests) == 1


def test_an_awaited_reply_that_is_not_json_or_over_the_cap_is_a_typed_error():
    with scripted_server([Reply(body=b"<html>")]) as srv:
        with pytest.raises(EmbedderUnavailableError, match=f"{srv.url}.*not JSON"):
            asyncio.run(ServedEmbedder("m", srv.url, policy=FAST).aembed_documents(["q"]))
    with scripted_server([Reply(body=b"x" * 5000)]) as srv:
        with pytest.raises(EmbedderUnavailableError, match="more than 4096 bytes.*max_reply_bytes"):
            asyncio.run(ServedEmbedder("m", srv.url, policy=FAST, max_reply_bytes=4096).aembed_query("x"))
        assert len(srv.requests) == 1  # refused, not retried


def test_an_awaited_dead_endpoint_is_a_typed_error_within_the_timeout():
    url = dead_url()
    t0 = time.monotonic()
    with pytest.raises(EmbedderUnavailableError, match=f"{url}.*after 3 request") as info:
        asyncio.run(ServedEmbedder("m", url, policy=FAST).aembed_query("q"))
    assert time.monotonic() - t0 < FAST.timeout and info.value.attempts == 3


def test_an_awaited_server_that_never_answers_is_a_timeout_at_the_timeout_itself():
    with silent_url() as url:
        t0 = time.monotonic()
        with pytest.raises(EmbedderTimeoutError, match="no reply within 0.5 s"):
            asyncio.run(
                ServedEmbedder("m", url, policy=CallPolicy(timeout=0.5, max_retries=2), dim=2).aembed_query("q")
            )
        assert time.monotonic() - t0 < 0.5 + 1.0  # asyncio.timeout: no watchdog grace


def test_a_loop_closed_with_embedding_requests_in_flight_prints_nothing_and_the_next_loops_answer(capfd, caplog):
    with llm_server(0.0, 0, embed_delay=0.4) as server:
        e = ServedEmbedder("words", server.url, policy=FAST)
        with unraisable_caught() as unraisable:
            close_with_calls_in_flight(e.aembed_query, [f"left {i}" for i in range(3)])
            shapes = [asyncio.run(e.aembed_query("again")).shape for _ in range(2)]
            del e  # its per-loop clients held the requests left in flight: collected now
            gc.collect()
    assert shapes[0] == shapes[1] and len(shapes[0]) == 1
    assert_nothing_printed(capfd, caplog, unraisable)
