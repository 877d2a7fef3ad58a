"""llama.cpp's real server (xllamacpp) serving SmolLM2 with embeddings on (``/v1/embeddings``, mean pooling), reached
through retrievekit's own client (``"openai:smollm2@URL"``), LangChain's ``OpenAIEmbeddings`` and LlamaIndex's
``OpenAIEmbedding``: each builds and searches a dense index; another model (another dimension, or the same name and
dimension with other vectors) is refused with a typed error; a server that is gone gives a typed error within the
timeout."""

from __future__ import annotations

import time

import numpy as np
import pytest
from _corpora import FRUIT
from _llama_server import MODEL, llama_server, module_server

from retrievekit.core.errors import EmbedderMismatchError, EmbedderUnavailableError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.served_embedder import ServedEmbedder
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder
from retrievekit.core.llm.call_policy import CallPolicy

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


server = module_server(parallel=1, embedding=True)


def _clients(url: str) -> dict[str, object]:
    from langchain_openai import OpenAIEmbeddings
    from llama_index.embeddings.openai import OpenAIEmbedding

    return {
        "retrievekit": f"openai:{MODEL}@{url}",
        "langchain": OpenAIEmbeddings(
            model=MODEL, base_url=url, api_key="-", check_embedding_ctx_length=False, max_retries=0, timeout=120
        ),
        "llama-index": OpenAIEmbedding(model_name=MODEL, api_base=url, api_key="-", max_retries=0, timeout=120),
    }


def test_every_openai_compatible_client_builds_and_searches_a_dense_index(server):
    first = {}
    for name, client in _clients(server.url).items():
        emb = as_embedder(client)
        assert emb.dim == 576, name  # SmolLM2-135M's hidden size
        with DenseIndex.build(FRUIT, embedder=client) as idx:
            hits = idx.search(FRUIT[3].text, k=3)  # a passage's own text finds that passage first
            assert hits[0].id == FRUIT[3].id and len(hits) == 3, name
            first[name] = [h.id for h in hits]
    assert first["langchain"] == first["retrievekit"] == first["llama-index"]


def test_another_model_is_refused_with_a_typed_error(server, tmp_path, minilm):
    DenseIndex.build(FRUIT, tmp_path / "idx", embedder=f"openai:{MODEL}@{server.url}").close()
    with pytest.raises(EmbedderMismatchError, match=r"'smollm2' \(dim 576\).*'all-MiniLM-L6-v2' \(dim 384\)"):
        DenseIndex.open(tmp_path / "idx", embedder=minilm)
    rng = np.random.default_rng(0)
    impostor = WrappedEmbedder(MODEL, lambda ts: rng.normal(size=(len(ts), 576)), lambda t: rng.normal(size=576),
                               source="a random model named smollm2")  # fmt: skip
    with pytest.raises(EmbedderMismatchError, match="another model under the same name"):
        DenseIndex.open(tmp_path / "idx", embedder=impostor)
    with DenseIndex.open(tmp_path / "idx", embedder=_clients(server.url)["langchain"]) as idx:  # the same server
        assert idx.search(FRUIT[0].text, k=1)[0].id == FRUIT[0].id


def test_a_server_that_is_gone_is_a_typed_error_within_the_timeout(tmp_path):
    with llama_server(parallel=1, embedding=True) as srv:
        emb = ServedEmbedder(MODEL, srv.url, policy=CallPolicy(timeout=120))  # a busy CPU server: generous build
        idx = DenseIndex.build(FRUIT, embedder=emb)
        DenseIndex.build(FRUIT, tmp_path / "idx", embedder=emb).close()
    emb.policy = policy = CallPolicy(timeout=5, max_retries=1, backoff=0.1)
    # refused connections (retried once), or, should another process have taken the freed port and not answer, a
    # timeout: either way a typed error naming the endpoint, within the timeout and the watchdog's grace
    for attempt in (lambda: idx.search("apples", k=1), lambda: DenseIndex.open(tmp_path / "idx", embedder=emb)):
        t0 = time.monotonic()
        with pytest.raises(EmbedderUnavailableError, match=rf"{srv.url}/embeddings \(model smollm2\)"):
            attempt()
        assert time.monotonic() - t0 < policy.timeout + policy.deadline_grace
    idx.close()
