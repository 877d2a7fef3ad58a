"""The served embedder does not trust its server (issue #62 item 4): through retrievekit's real HTTP client and a
scripted OpenAI-compatible server on loopback, a NaN or infinite vector, a row of zeros, rows that cannot be matched
to their texts (no ``index`` field, a repeated one), a dimension that changes between batches (or differs from
``dim=``) and a reply over the size cap are each an ``EmbedderUnavailableError`` naming the endpoint, never hits
scored NaN, vectors given to the wrong texts or a raw numpy ``ValueError``. A search over a real Chroma index whose
query vector comes back NaN raises instead of returning NaN scores. The same row checks hold for a framework's model
wrapped as a ``WrappedEmbedder``."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import pytest
from _http_replies import Reply, scripted_server

from retrievekit.core.errors import EmbedderUnavailableError
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.served_embedder import MAX_REPLY_BYTES, ServedEmbedder
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.types import Passage

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

LETTERS = "aeioustr"


def letters(text: str) -> list[float]:
    """A stand-in model's vector: counts of eight letters, plus one (never all zeros)."""
    return [text.lower().count(c) + 1.0 for c in LETTERS]


def reply(vectors: list, *, index: bool = True, order: list[int] | None = None, pad: int = 0) -> Reply:
    order = order if order is not None else list(range(len(vectors)))
    rows = [{"object": "embedding", **({"index": i} if index else {}), "embedding": vectors[i]} for i in order]
    body = {"object": "list", "data": rows, "model": "m", "pad": " " * pad}
    return Reply(body=json.dumps(body).encode())  # json writes NaN / Infinity literals, as a broken server would


def embedder(url: str, **kw) -> ServedEmbedder:
    return ServedEmbedder("m", url, policy=CallPolicy(timeout=10, max_retries=0), **kw)


def by_text(poison: dict[str, list]) -> Callable[[dict], Reply]:
    """A server that embeds each text with :func:`letters`, except the texts in ``poison`` (their vector as given)."""

    def answer(request: dict) -> Reply:
        return reply([poison.get(t, letters(t)) for t in request["input"]])

    return answer


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e39])  # 1e39 overflows float32 to inf
def test_a_non_finite_vector_is_refused_naming_the_endpoint(bad):
    with scripted_server(answer=by_text({"poison": [0.5, bad, 0.1]})) as srv:
        e = embedder(srv.url)
        with pytest.raises(EmbedderUnavailableError, match=r"/v1/embeddings \(model m\).*NaN or infinite") as info:
            e.embed_query("poison")
        assert info.value.endpoint == e.endpoint


def test_a_search_whose_query_vector_is_nan_raises_instead_of_scoring_nan():
    docs = [Passage(id="a", text="a sea of tea"), Passage(id="b", text="rust or iron")]
    with scripted_server(answer=by_text({"poison": [math.nan] * len(LETTERS)})) as srv:
        with DenseIndex.build(docs, embedder=embedder(srv.url)) as idx:
            assert idx.search("tea", k=1)[0].id == "a"  # the real Chroma index answers a finite query
            with pytest.raises(EmbedderUnavailableError, match="NaN or infinite"):
                idx.search("poison", k=2)


def test_a_vector_of_zeros_is_refused():
    with scripted_server(answer=by_text({"nothing": [0.0] * len(LETTERS)})) as srv:
        with pytest.raises(EmbedderUnavailableError, match="vector of zeros"):
            embedder(srv.url).embed_documents(["fine", "nothing"])


def test_rows_are_matched_to_texts_by_their_index_fields():
    vecs = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    with scripted_server([reply(vecs, order=[2, 0, 1])]) as srv:  # another order, each row with its index
        got = embedder(srv.url).embed_documents(["x", "y", "z"])
    assert np.allclose(got, np.array(vecs) / np.linalg.norm(vecs, axis=1, keepdims=True))


@pytest.mark.parametrize(
    "rows",
    [
        [{"embedding": [0.0, 1.0]}, {"embedding": [1.0, 0.0]}],  # no index field, in another order
        [{"index": 0, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}],  # one index twice
        [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 2, "embedding": [1.0, 0.0]}],  # not 0..n-1
        [{"index": "0", "embedding": [0.0, 1.0]}, {"index": "1", "embedding": [1.0, 0.0]}],  # not integers
    ],
)
def test_rows_that_cannot_be_matched_to_their_texts_are_refused(rows):
    body = json.dumps({"object": "list", "data": rows}).encode()
    with scripted_server([Reply(body=body)]) as srv:
        with pytest.raises(EmbedderUnavailableError, match="index fields are not exactly 0..1"):
            embedder(srv.url).embed_documents(["first", "second"])


def test_a_dimension_change_between_batches_is_a_typed_error():
    with scripted_server([reply([[1.0, 2.0, 3.0]] * 2), reply([[1.0, 2.0, 3.0, 4.0]] * 2)]) as srv:
        e = embedder(srv.url, batch_size=2)
        with pytest.raises(EmbedderUnavailableError, match=r"sent 4-d vectors, but its vectors are 3-d"):
            e.embed_documents(["a", "b", "c", "d"])
        assert e.dim == 3  # fixed by the first reply, for the embedder's life
        with pytest.raises(EmbedderUnavailableError, match="4-d vectors, but its vectors are 3-d"):
            e.embed_documents(["e", "f"])  # the server kept its new dimension: still refused


def test_a_reply_of_another_dimension_than_dim_is_refused():
    with scripted_server([reply([[1.0, 2.0]])]) as srv:
        with pytest.raises(EmbedderUnavailableError, match="2-d vectors, but its vectors are 384-d"):
            embedder(srv.url, dim=384).embed_query("x")


def test_a_reply_over_the_size_cap_is_refused():
    vec = [[1.0, 2.0]]
    with scripted_server([reply(vec, pad=MAX_REPLY_BYTES)]) as srv:  # a valid reply, padded past the default cap
        with pytest.raises(EmbedderUnavailableError, match=f"more than {MAX_REPLY_BYTES} bytes"):
            embedder(srv.url).embed_query("x")
        assert len(srv.requests) == 1  # refused, not retried
    with scripted_server([reply(vec, pad=5000)]) as srv:
        with pytest.raises(EmbedderUnavailableError, match="more than 4096 bytes.*max_reply_bytes"):
            embedder(srv.url, max_reply_bytes=4096).embed_query("x")
        assert embedder(srv.url, max_reply_bytes=6000).embed_query("x").shape == (2,)


def test_a_wrapped_framework_model_gets_the_same_row_checks():
    dims = iter([3, 4])
    e = WrappedEmbedder(
        "w", lambda ts: [[1.0] * next(dims)] * len(ts), lambda t: [math.nan, 1.0, 1.0], source="model w"
    )
    assert e.embed_documents(["a"]).shape == (1, 3)
    with pytest.raises(EmbedderUnavailableError, match="model w sent 4-d vectors, but its vectors are 3-d"):
        e.embed_documents(["b"])
    with pytest.raises(EmbedderUnavailableError, match="model w sent .*NaN or infinite"):
        e.embed_query("q")
