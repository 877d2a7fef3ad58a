"""``embedder=`` reaches every stage that embeds (issue #62 item 10). Through the real LlamaIndex and LangChain
``from_documents``, a served embedder (retrievekit's HTTP client against an OpenAI-compatible server on loopback)
receives the requests of every method with a stage that embeds: One-SHOT's hybrid pool, the first stage of
``llm-rerank`` and ``judge-rerank``, the cosine judge; the search finds the right passage with it. A method none of
whose stages would use the embedder refuses it by name (``bm25`` before anything is built, ``llm-rerank`` over a
``bm25`` first stage once built), while LlamaIndex's global ``Settings.embed_model`` (not an ``embedder=`` of this
call) is no reason to refuse ``bm25``."""

from __future__ import annotations

import json

import pytest
from _corpora import FRUIT
from _http_replies import Reply, scripted_server
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.fakes import WordScoreLLM
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

WORDS = ["fruit", "yellow", "python", "red", "tree", "language", "potassium", "data"]


def embed(request: dict) -> Reply:
    """A stand-in embedding model: counts of eight words, plus a small constant (never all zeros)."""
    rows = [
        {"index": i, "embedding": [t.lower().count(w) + 0.01 for w in WORDS]} for i, t in enumerate(request["input"])
    ]
    return Reply(body=json.dumps({"object": "list", "data": rows}).encode())


def llama_docs():
    return [TextNode(id_=p.id, text=p.text) for p in FRUIT]


def langchain_docs():
    return [Document(id=p.id, page_content=p.text) for p in FRUIT]


def build(edge: str, url: str, method: str, **options):
    embedder = f"openai:m@{url}"
    if edge == "llama-index":
        return LIRetriever.from_documents(llama_docs(), method=method, embedder=embedder, **options)
    return LCRetriever.from_documents(langchain_docs(), method=method, embedder=embedder, **options)


def found(edge: str, retriever, query: str) -> list[str]:
    if edge == "llama-index":
        return [n.node.node_id for n in retriever.retrieve(query)]
    return [d.id for d in retriever.invoke(query)]


STAGES = {
    "oneshot": {"budget": 2000},
    "hybrid": {},
    "llm-rerank (first stage dense)": {"method": "llm-rerank", "llm": WordScoreLLM("yellow"), "calls": "1"},
    "llm-rerank (first stage hybrid)": {
        "method": "llm-rerank",
        "llm": WordScoreLLM("yellow"),
        "calls": "1",
        "first_stage": "hybrid",
    },
    "judge-rerank (first stage dense)": {"method": "judge-rerank", "first_stage": "dense", "judge_dir": "cosine"},
    "judge-rerank (cosine judge over bm25)": {"method": "judge-rerank", "judge_dir": "cosine"},
}


@pytest.mark.parametrize("edge", ["llama-index", "langchain"])
@pytest.mark.parametrize("case", list(STAGES))
def test_a_served_embedder_gets_the_requests_of_every_stage_that_embeds(edge, case):
    options = dict(STAGES[case])
    method = options.pop("method", case)
    with scripted_server(answer=embed) as srv:
        r = build(edge, srv.url, method, **options)
        built = len(srv.requests)
        assert found(edge, r, "long yellow fruits with potassium")[0] == "banana"
        assert len(srv.requests) > 0, f"{case}: the embedding server got no request"
        assert all(req["model"] == "m" for req in srv.requests)
        if "bm25" not in case:
            assert built > 0, f"{case}: the index was not built with the served embedder"


@pytest.mark.parametrize("edge", ["llama-index", "langchain"])
def test_a_method_that_embeds_nothing_refuses_the_embedder_by_name(edge):
    with scripted_server(answer=embed) as srv:
        with pytest.raises(InvalidInputError, match=r"method='bm25'.*embedder= reaches no stage"):
            build(edge, srv.url, "bm25")
        with pytest.raises(InvalidInputError, match=r"method='llm-rerank'.*embedder= reaches no stage.*first_stage"):
            build(edge, srv.url, "llm-rerank", llm=WordScoreLLM("yellow"), calls="1", first_stage="bm25")
        assert srv.requests == []  # refused, never sent: nothing embedded with a model the stages would not use


def test_llamaindex_settings_embed_model_does_not_make_bm25_refuse():
    from llama_index.core import Settings
    from llama_index.core.embeddings import MockEmbedding

    Settings.embed_model = MockEmbedding(embed_dim=4)
    try:
        r = LIRetriever.from_documents(llama_docs(), method="bm25")
        assert [n.node.node_id for n in r.retrieve("yellow bananas")][0] == "banana"
    finally:
        Settings._embed_model = None
