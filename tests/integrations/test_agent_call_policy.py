"""The iterative agent's model calls under the served-LLM guarantees, through the real ``ChatOpenAI`` client: against
llama.cpp's real server (each request carries ``max_tokens``; a paused server is an ``LLMTimeoutError`` naming the
endpoint within the policy's deadline), a closed port (``LLMUnavailableError``) and a local server sending broken
replies (``LLMOutputError``, never a raw ``IndexError`` / ``JSONDecodeError``), by ``invoke`` and ``ainvoke``. A
failed LLM raises; ``on_llm_error="stop"`` asks for the partial result instead."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from _corpora import FRUIT
from _http_replies import Reply, completion, scripted_server
from _llama_server import chat_openai, module_server

from retrievekit.core.errors import LLMOutputError, LLMTimeoutError, LLMUnavailableError
from retrievekit.core.index import BM25Index
from retrievekit.core.llm.llamacpp_server import free_port
from retrievekit.langgraph import build_iterative_agent
from retrievekit.langgraph.model_policy import AGENT_TURN_MAX_TOKENS, ANSWER_MAX_TOKENS

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUESTION = {"question": "Which fruit is yellow?"}
MODES = ["invoke", "ainvoke"]


server = module_server(parallel=1)


def _run(agent, mode: str):
    return agent.invoke(QUESTION) if mode == "invoke" else asyncio.run(agent.ainvoke(QUESTION))


def _chat(url: str, **kwargs):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=url, api_key="-", model="m", **kwargs)


def _limit(body: dict) -> int | None:
    return body.get("max_tokens", body.get("max_completion_tokens"))  # ChatOpenAI sends the newer name


def _agent(chat, **kwargs):
    return build_iterative_agent(chat, BM25Index.build(list(FRUIT)), max_turns=1, **kwargs)


def test_every_request_carries_max_tokens_and_the_client_sends_it_once(server):
    bodies: list[dict] = []

    def record(request: httpx.Request) -> None:
        bodies.append(json.loads(request.content))

    async def arecord(request: httpx.Request) -> None:
        record(request)

    hooks = {"request": [record]}
    chat = chat_openai(
        server,
        max_retries=5,
        http_client=httpx.Client(event_hooks=hooks),
        http_async_client=httpx.AsyncClient(event_hooks={"request": [arecord]}),
    )
    for mode in MODES:
        out = _run(_agent(chat), mode)
        assert out["searches"] >= 1 and out["answer"] is not None
    assert len(bodies) == 4  # per run: the forced turn 1, then the answer from the working set
    assert [_limit(b) for b in bodies] == [AGENT_TURN_MAX_TOKENS, ANSWER_MAX_TOKENS] * 2
    assert [b.get("tool_choice") for b in bodies] == ["required", None] * 2


def test_a_model_s_own_max_tokens_is_kept():
    with scripted_server([completion("no idea")]) as srv:
        _run(_agent(_chat(srv.url, max_tokens=17), always_search=False), "invoke")
    assert [_limit(r) for r in srv.requests] == [17]


@pytest.mark.parametrize("mode", MODES)
def test_a_paused_server_is_a_timeout_naming_the_endpoint_within_the_deadline(server, mode):
    agent = _agent(chat_openai(server, timeout=3, max_retries=5))
    server.pause()  # SIGSTOP: accepts connections, never answers
    try:
        start = time.monotonic()
        with pytest.raises(LLMTimeoutError, match="sent no reply within 3 s") as info:
            _run(agent, mode)
        took = time.monotonic() - start
    finally:
        server.resume()
    assert server.url in str(info.value) and info.value.attempts == 1
    assert took < 3 + 5 + 2  # the timeout plus the watchdog's grace (a behaviour bound), never the client's retries


def test_the_opt_in_partial_result_records_the_typed_error(server):
    agent = _agent(chat_openai(server, timeout=2, max_retries=5), on_llm_error="stop")
    server.pause()
    try:
        out = _run(agent, "invoke")
    finally:
        server.resume()
    errors = [e["message"] for e in out["trace"] if e["kind"] == "llm_error"]
    assert out["stop_reason"] == "llm_error" and out["answer"] == ""
    assert len(errors) == 2 and all("LLMTimeoutError" in m and server.url in m for m in errors), errors


@pytest.mark.parametrize("mode", MODES)
def test_a_wrong_port_is_unavailable_naming_the_endpoint(mode):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMUnavailableError, match="did not answer after 2 request") as info:
        _run(_agent(_chat(url, max_retries=1)), mode)  # the client's retries become the policy's, counted once
    assert url in str(info.value) and info.value.attempts == 2


def _empty_choices() -> Reply:
    body = json.loads(completion("x").body)
    body["choices"] = []
    return Reply(body=json.dumps(body).encode())


BROKEN = {"empty_choices": _empty_choices, "cut_json": lambda: Reply(body=completion("hello").body[:60])}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_reply_is_an_output_error_never_a_raw_one(broken, mode):
    with scripted_server([BROKEN[broken]()]) as srv:
        with pytest.raises(LLMOutputError, match="could not be read") as info:
            _run(_agent(_chat(srv.url)), mode)
        assert srv.url in str(info.value) and len(srv.requests) == 1  # not retried

        out = _run(_agent(_chat(srv.url), on_llm_error="stop"), mode)
    errors = [e["message"] for e in out["trace"] if e["kind"] == "llm_error"]
    assert out["stop_reason"] == "llm_error" and len(errors) == 2
    assert all(m.split(": ")[1] == "LLMOutputError" for m in errors), errors
