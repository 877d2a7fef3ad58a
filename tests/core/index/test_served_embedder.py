"""retrievekit's own client of a served OpenAI-compatible embeddings endpoint against a local HTTP server with
scripted replies: vectors in input order, bounded retries of 503, a refused request, a reply that is not an
embeddings response, and a dead endpoint, each a typed error naming the endpoint within the timeout."""

from __future__ import annotations

import time

import numpy as np
import pytest
from _http_replies import Reply, dead_url, embeddings, scripted_server, silent_url

from retrievekit.core.errors import EmbedderTimeoutError, EmbedderUnavailableError, InvalidInputError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.served_embedder import ServedEmbedder
from retrievekit.core.llm.call_policy import CallPolicy

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

FAST = CallPolicy(timeout=5, max_retries=2, backoff=0.01)


def test_vectors_come_back_in_input_order_normalised_and_batched():
    with scripted_server([embeddings([3.0, 4.0], [0.0, 2.0]), embeddings([1.0, 0.0])]) as srv:
        e = ServedEmbedder("m", srv.url, policy=FAST, batch_size=2)
        x = e.embed_documents(["a", "b", "c"])
        assert np.allclose(x, [[0.6, 0.8], [0.0, 1.0], [1.0, 0.0]]) and e.dim == 2
        assert [r["input"] for r in srv.requests] == [["a", "b"], ["c"]]
        assert all(r["model"] == "m" for r in srv.requests)


def test_an_unavailable_server_is_retried_then_answers():
    with scripted_server([Reply(status=503, body=b"busy"), embeddings([1.0, 1.0])]) as srv:
        assert as_embedder(f"openai:m@{srv.url}").embed_query("q").shape == (2,)
        assert len(srv.requests) == 2


def test_a_refused_request_is_not_retried_and_names_the_endpoint():
    with scripted_server([Reply(status=400, body=b'{"error": "model not found"}')]) as srv:
        with pytest.raises(EmbedderUnavailableError, match=r"HTTP 400.*model not found") as info:
            ServedEmbedder("m", srv.url, policy=FAST).embed_query("q")
        assert srv.url in str(info.value) and info.value.status == 400 and len(srv.requests) == 1


@pytest.mark.parametrize("body", [b'{"data": [{"index": 0}]}', b"<html>", b'{"data": []}'])
def test_a_reply_that_is_not_an_embeddings_response_is_a_typed_error(body):
    with scripted_server([Reply(body=body)]) as srv:
        with pytest.raises(EmbedderUnavailableError, match=srv.url):
            ServedEmbedder("m", srv.url, policy=FAST).embed_documents(["q"])


def test_a_dead_endpoint_is_a_typed_error_within_the_timeout():
    url = dead_url()
    t0 = time.monotonic()
    with pytest.raises(EmbedderUnavailableError, match=f"{url}.*after 3 request") as info:
        ServedEmbedder("m", url, policy=FAST).embed_query("q")
    assert time.monotonic() - t0 < FAST.timeout and info.value.attempts == 3


def test_a_server_that_never_answers_is_a_timeout_not_retried():
    with silent_url() as url:
        t0 = time.monotonic()
        with pytest.raises(EmbedderTimeoutError, match="no reply within 0.5 s"):
            ServedEmbedder("m", url, policy=CallPolicy(timeout=0.5, max_retries=2), dim=2).embed_query("q")
        assert time.monotonic() - t0 < 0.5 + CallPolicy().deadline_grace


def test_a_spec_that_is_not_a_url_is_refused():
    with pytest.raises(InvalidInputError, match="openai:MODEL@URL"):
        as_embedder("openai:m@localhost:8080")


def test_batches_go_side_by_side_up_to_max_concurrency_and_a_copy_has_its_own_budget():
    import copy

    from _async_llm_server import llm_server, stats

    with llm_server(0.0, 0, embed_delay=0.1) as server:  # the server takes every request at once
        e = ServedEmbedder("words", server.url, policy=FAST, batch_size=2, max_concurrency=3)
        x = e.embed_documents([f"text {i}" for i in range(24)])  # 12 requests
        one_by_one = ServedEmbedder("words", server.url, policy=FAST, batch_size=2, max_concurrency=1)
        assert np.allclose(x, one_by_one.embed_documents([f"text {i}" for i in range(24)]))
        assert stats(server)["peak_words"] == 3  # never more than max_concurrency, and that many in flight
        twin = copy.deepcopy(e)
        assert twin.slots is not e.slots and twin.slots.free == 3 and twin.embed_query("text 1").shape == (8,)
    with pytest.raises(InvalidInputError, match="max_concurrency"):
        ServedEmbedder("m", "http://127.0.0.1:1/v1", max_concurrency=0)
