"""The async path against a real server: llama.cpp's server (xllamacpp, SmolLM2 on loopback) reached through
the adapters' awaited send (straight to the server, ``OpenAIWire``, for these plain OpenAI-family models) when a
request is made under an ``await``, with the sync path's
call policy: the same replies, a paused server times out typed within the timeout (the awaited request cancelled),
a dead one is unavailable typed after the bounded retries, and a query engine's ``aquery`` reaches the server through
the async client."""

from __future__ import annotations

import asyncio
import time

import pytest
from _llama_server import chat_openai, module_server, openai_like
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.errors import LLMTimeoutError, LLMUnavailableError
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.llamacpp_server import free_port
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage
from retrievekit.langchain import LangChainChatLLM
from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

WRAPS = ["langchain", "llama_index"]


server = module_server()


def _wrap(kind, server_or_url, policy):
    if kind == "langchain":
        from langchain_openai import ChatOpenAI

        client = (
            ChatOpenAI(base_url=server_or_url, api_key="-", model="m")
            if isinstance(server_or_url, str)
            else chat_openai(server_or_url)
        )
        llm = LangChainChatLLM(client, policy=policy)
    else:
        from llama_index.llms.openai_like import OpenAILike

        client = (
            OpenAILike(api_base=server_or_url, api_key="-", model="m", is_chat_model=True)
            if isinstance(server_or_url, str)
            else openai_like(server_or_url)
        )
        llm = LlamaIndexChatLLM(client, policy=policy)
    return _counting(llm)


def _counting(llm):
    """Count the adapter's awaited sends (``llm.async_sends``)."""
    llm.async_sends = 0
    transport = llm.async_transport

    def counted_transport():
        asend = transport()

        async def counted(request):
            llm.async_sends += 1
            return await asend(request)

        return counted

    llm.async_transport = counted_transport
    return llm


def _awaited(fn, *args, **kwargs):
    return asyncio.run(run_off_loop(fn, *args, **kwargs))


@pytest.mark.parametrize("kind", WRAPS)
def test_an_awaited_request_goes_through_the_async_client_with_the_same_reply(server, kind):
    llm = _wrap(kind, server, CallPolicy(timeout=120))
    sync = llm.complete("Name one colour.", max_tokens=6)
    t = Trace()
    awaited = _awaited(llm.complete, "Name one colour.", max_tokens=6, trace=t)
    assert llm.async_sends == 1 and awaited.text == sync.text and awaited.completion_tokens <= 6
    assert t.llm_calls == 1 and not awaited.usage_estimated


@pytest.mark.parametrize("kind", WRAPS)
def test_a_paused_server_times_out_typed_on_the_async_path(server, kind):
    llm = _wrap(kind, server, CallPolicy(timeout=2, max_retries=2, backoff=0.05))
    t = Trace()

    async def scenario():  # one event loop, as in an app: the client's connections belong to it
        await run_off_loop(llm.complete, "Say yes.", max_tokens=3)
        sends = llm.async_sends
        server.pause()
        try:
            start = time.monotonic()
            with pytest.raises(LLMTimeoutError) as info:
                await run_off_loop(llm.complete, "hi", max_tokens=5, trace=t)
            took = time.monotonic() - start
        finally:
            server.resume()
        again = await run_off_loop(llm.complete, "Say yes.", max_tokens=3)  # answers again once resumed
        return took, info.value, llm.async_sends - sends, again

    took, error, sends, again = asyncio.run(scenario())
    assert took < 2 + 1.5  # the timeout itself: the awaited request is cancelled then, never retried
    assert error.attempts == 1 and server.url in str(error) and sends == 2 and again.text is not None
    assert t.counters["llm.timeouts"] == 1 and "llm.retries" not in t.counters


@pytest.mark.parametrize("kind", WRAPS)
def test_a_dead_server_is_unavailable_typed_on_the_async_path(kind):
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = _wrap(kind, url, CallPolicy(timeout=10, max_retries=2, backoff=0.01))
    t = Trace()
    start = time.monotonic()
    with pytest.raises(LLMUnavailableError) as info:
        _awaited(llm.complete, "hi", max_tokens=5, trace=t)
    assert time.monotonic() - start < 10 and not isinstance(info.value, LLMTimeoutError)
    assert url in str(info.value) and info.value.attempts == 3 and llm.async_sends == 3
    assert t.llm_calls == 3 and t.counters["llm.retries"] == 2


def test_a_query_engine_reaches_the_server_through_the_async_client(server):
    llm = _counting(LlamaIndexChatLLM(openai_like(server), policy=CallPolicy(timeout=120)))
    tree = SemanticTree.flat(
        [
            Passage(id="cat", text="Cats are small domestic animals that purr."),
            Passage(id="rust", text="Rust is a systems programming language."),
        ]
    )
    engine = RetrieverQueryEngine.from_args(LatticeRetriever(Lattice(tree, llm), similarity_top_k=2), llm=MockLLM())
    response = asyncio.run(engine.aquery("Which animal purrs?"))
    assert {n.node.node_id for n in response.source_nodes} <= {"cat", "rust"} and response.source_nodes
    assert llm.async_sends >= 1
