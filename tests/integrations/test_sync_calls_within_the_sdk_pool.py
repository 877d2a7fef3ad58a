"""Sync calls through the OpenAI SDK's client stay within its connection pool's keep-alive limit.

httpcore 1.0.9's sync pool closes an idle connection whenever it holds more than its keep-alive limit (100 in the
OpenAI SDK), even one just handed to a waiting request (encode/httpcore#1110): with LATTICE on 200 threads (up to
400 calls at once) a request now and then failed with "Bad file descriptor" or waited out its 60 s read timeout. The
sync driver now holds at most the client's keep-alive limit of a model's calls in flight
(:mod:`retrievekit.core.llm.sdk_pool`): 150 threads calling a model with ``max_concurrency=512`` reach the scripted
server (3 s a call, so that a slow machine still has them all in flight together) at most 100 at once through the LlamaIndex, LangChain and served-judge edges; a client built with a pool of
1,000 kept-alive connections is read and not held back; awaited calls (retrievekit's own transport) are not bounded.
The places are the pool's: three models (one per edge) given one ``http_client`` keeping 100 connections alive
reach the server at most 100 at once together, not 100 each.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from _async_llm_server import llm_server, stats

from retrievekit.core.judge.served_client import JudgeClient

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

CALLERS = 150
DELAY = 3.0


def _wide_pool() -> httpx.Client:
    return httpx.Client(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=1000))


def _llama_index(url: str, http_client: httpx.Client | None = None):
    from llama_index.llms.openai_like import OpenAILike

    from retrievekit.llama_index import LlamaIndexChatLLM

    model = OpenAILike(model="m", api_base=url, api_key="-", is_chat_model=True, timeout=30, http_client=http_client)
    return LlamaIndexChatLLM(model, max_concurrency=512)


def _langchain(url: str, http_client: httpx.Client | None = None):
    from langchain_openai import ChatOpenAI

    from retrievekit.langchain import LangChainChatLLM

    return LangChainChatLLM(
        ChatOpenAI(model="m", base_url=url, api_key="-", timeout=30, http_client=http_client), max_concurrency=512
    )


def _judge(url: str, http_client: httpx.Client | None = None):
    import openai

    client = openai.OpenAI(base_url=url, api_key="-", http_client=http_client) if http_client is not None else None
    return JudgeClient("m", url, max_concurrency=512, client=client)


EDGES = {"llama_index": _llama_index, "langchain": _langchain, "judge": _judge}
REPLY = {"llama_index": "a short summary", "langchain": "a short summary", "judge": "Yes"}  # a judge asks Yes/No


def _peak_of_sync_calls(make, wide: bool) -> tuple[int, list[str]]:
    """``CALLERS`` threads each making one sync call (``DELAY`` on the server): the most served at once, the replies."""
    with llm_server(DELAY) as server:
        llm = make(server.url, _wide_pool() if wide else None)
        with ThreadPoolExecutor(CALLERS) as pool:
            replies = list(pool.map(lambda i: llm.complete(f"question {i}", max_tokens=8).text, range(CALLERS)))
        return stats(server)["peak_chat"], replies


@pytest.mark.parametrize("edge", sorted(EDGES))
def test_150_sync_callers_reach_the_server_at_most_100_at_once_through_the_sdks_default_pool(edge):
    peak, replies = _peak_of_sync_calls(EDGES[edge], wide=False)
    assert replies == [REPLY[edge]] * CALLERS
    assert 50 < peak <= 100, peak  # bounded by the pool's 100, yet many at once


@pytest.mark.parametrize("edge", sorted(EDGES))
def test_a_client_with_a_wider_pool_is_read_and_not_held_back(edge):
    peak, replies = _peak_of_sync_calls(EDGES[edge], wide=True)
    assert replies == [REPLY[edge]] * CALLERS
    assert peak > 100, peak


def test_models_sharing_one_http_client_share_its_100_places():
    """One user's ``http_client`` (keeping 100 connections alive) given to a LlamaIndex model, a LangChain model and a
    served judge: 150 sync callers, 50 a model, each model allowing 512 in flight, reach the server at most 100 at
    once together (each holding 100 of its own would let all 150 through)."""
    shared = httpx.Client(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))
    with llm_server(DELAY) as server:
        models = [EDGES[edge](server.url, shared) for edge in sorted(EDGES)]

        def call(i: int) -> str:
            return models[i % 3].complete(f"question {i}", max_tokens=8).text

        with ThreadPoolExecutor(CALLERS) as pool:
            replies = list(pool.map(call, range(CALLERS)))
        peak = stats(server)["peak_chat"]
    assert replies == [REPLY[sorted(EDGES)[i % 3]] for i in range(CALLERS)]
    assert 50 < peak <= 100, peak


def test_awaited_calls_are_not_bounded_by_the_sdk_pool():
    """Awaited calls go through retrievekit's own transport: 150 at once reach the server beyond 100."""
    with llm_server(DELAY) as server:
        llm = _llama_index(server.url)

        async def all_at_once() -> list[str]:
            done = await asyncio.gather(*(llm.acomplete(f"question {i}", max_tokens=8) for i in range(CALLERS)))
            return [d.text for d in done]

        replies = asyncio.run(all_at_once())
        assert replies == ["a short summary"] * CALLERS
        assert stats(server)["peak_chat"] > 100
