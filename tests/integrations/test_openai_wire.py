"""The awaited transport straight to an OpenAI-compatible server (``retrievekit.core.llm.openai_wire``): a plain
``OpenAILike`` / ``ChatOpenAI`` sends, awaited, the body its SDK sends synchronously; every scripted failure ends
awaited as it ends sync (the same typed error, the same retries, the same structured-output downgrade); and
``transport="framework"`` keeps the framework's own async call, where its instrumentation sees each request."""

from __future__ import annotations

import asyncio
import json

import pytest
from _http_replies import Reply, completion, scripted_server

from retrievekit.core.errors import InvalidInputError, RetrieveKitError
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.langchain import LangChainChatLLM
from retrievekit.llama_index import LlamaIndexChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
POLICY = CallPolicy(timeout=10, max_retries=2, backoff=0.01)


def _adapter(kind: str, url: str, **options):
    if kind == "langchain":
        from langchain_openai import ChatOpenAI

        return LangChainChatLLM(ChatOpenAI(base_url=url, api_key="-", model="m", top_p=0.5), policy=POLICY, **options)
    from llama_index.llms.openai_like import OpenAILike

    model = OpenAILike(api_base=url, api_key="-", model="m", is_chat_model=True, additional_kwargs={"top_p": 0.5})
    return LlamaIndexChatLLM(model, policy=POLICY, **options)


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_the_awaited_body_is_the_sdk_body(kind):
    with scripted_server([completion('{"ok": true}')]) as server:
        llm = _adapter(kind, server.url)
        assert llm.wire is not None
        sync = llm.complete_json("Is it ok?", SCHEMA, max_tokens=8).value
        awaited = asyncio.run(llm.acomplete_json("Is it ok?", SCHEMA, max_tokens=8)).value
    assert sync == awaited == {"ok": True}
    sdk, wire = server.requests
    keys = ("model", "messages", "max_tokens", "max_completion_tokens", "temperature", "response_format", "top_p")
    assert {k: sdk.get(k) for k in keys} == {k: wire.get(k) for k in keys}
    assert wire["response_format"]["type"] == "json_schema" and wire["top_p"] == 0.5


FAILURES = {
    "busy then fine": [Reply(429, b'{"error": "busy"}', {"Retry-After": "0"}), completion('{"ok": true}')],
    "down": [Reply(503, b'{"error": "down"}')],
    "schema refused": [Reply(400, b'{"error": "no json_schema"}'), completion('{"ok": false}')],
    "not json": [Reply(200, b"<html>proxy error</html>")],
    "no choices": [Reply(200, json.dumps({"choices": []}).encode())],
    "not a reply": [completion("I cannot answer that.")],
}


def _outcome(run):
    try:
        return ("value", run().value)
    except RetrieveKitError as e:
        return (type(e).__name__, getattr(e, "attempts", None))


@pytest.mark.parametrize("case", sorted(FAILURES))
@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_each_failure_ends_awaited_as_it_ends_sync(kind, case):
    outcomes, sent = [], []
    for awaited in (False, True):
        with scripted_server(FAILURES[case]) as server:
            llm = _adapter(kind, server.url)
            if awaited:
                outcomes.append(_outcome(lambda a=llm: asyncio.run(a.acomplete_json("Ok?", SCHEMA, max_tokens=8))))
            else:
                outcomes.append(_outcome(lambda a=llm: a.complete_json("Ok?", SCHEMA, max_tokens=8)))
            sent.append(len(server.requests))
    assert outcomes[0] == outcomes[1], case
    assert sent[0] == sent[1], case
    assert outcomes[0][0] != "value" or case in ("busy then fine", "schema refused")


def test_the_framework_transport_lets_llama_index_instrumentation_see_each_call():
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    seen: list[str] = []

    class Seen(BaseEventHandler):
        def handle(self, event, **kwargs):
            seen.append(type(event).__name__)

    handler = Seen()
    get_dispatcher().add_event_handler(handler)
    try:
        with scripted_server([completion("fine")]) as server:
            for transport in ("auto", "framework"):
                llm = _adapter("llama_index", server.url, transport=transport)
                before = seen.count("LLMChatStartEvent")
                asyncio.run(llm.acomplete("Hi", max_tokens=4))
                assert (seen.count("LLMChatStartEvent") - before, llm.wire is None) == (int(transport != "auto"),) * 2
    finally:
        get_dispatcher().event_handlers.remove(handler)


@pytest.mark.parametrize("kind", ["langchain", "llama_index"])
def test_an_unknown_transport_is_refused_typed(kind):
    with pytest.raises(InvalidInputError, match="transport must be one of"):
        _adapter(kind, "http://127.0.0.1:9/v1", transport="http")


def test_a_model_with_callbacks_of_its_own_keeps_its_own_async_call():
    """Callbacks on the model (LangChain) or a callback manager with handlers (LlamaIndex) see calls only through the
    model's own ``ainvoke`` / ``achat``: ``transport="auto"`` leaves such a model on it."""
    from langchain_core.callbacks import StdOutCallbackHandler
    from langchain_openai import ChatOpenAI
    from llama_index.core.callbacks import CallbackManager, LlamaDebugHandler
    from llama_index.llms.openai_like import OpenAILike

    url = "http://127.0.0.1:9/v1"
    chat = ChatOpenAI(base_url=url, api_key="-", model="m", callbacks=[StdOutCallbackHandler()])
    like = OpenAILike(api_base=url, api_key="-", model="m", is_chat_model=True)
    handled = like.model_copy(update={"callback_manager": CallbackManager([LlamaDebugHandler()])})
    assert LangChainChatLLM(chat).wire is None and LlamaIndexChatLLM(handled).wire is None
    assert LlamaIndexChatLLM(like).wire is not None
