"""How the served-LLM path reads broken replies and HTTP errors, through the real ``ChatOpenAI`` and ``OpenAILike``
clients against a small local HTTP server that returns each malformed body: typed errors naming the endpoint, bounded
retries, and a trace that counts every request the server received."""

from __future__ import annotations

import json

import pytest
from _http_replies import Reply, completion, scripted_server

from retrievekit.core.errors import LLMOutputError, LLMUnavailableError
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.trace import Trace

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

FAST = CallPolicy(timeout=10, max_retries=2, backoff=0.01)
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _wrap(kind: str, url: str, **kwargs):
    if kind == "langchain":
        from langchain_openai import ChatOpenAI

        from retrievekit.langchain import LangChainChatLLM

        return LangChainChatLLM(ChatOpenAI(base_url=url, api_key="-", model="m", max_retries=5), policy=FAST, **kwargs)
    from llama_index.llms.openai_like import OpenAILike

    from retrievekit.llama_index import LlamaIndexChatLLM

    llm = OpenAILike(api_base=url, api_key="-", model="m", is_chat_model=True, max_retries=5)
    return LlamaIndexChatLLM(llm, policy=FAST, **kwargs)


WRAPS = ["langchain", "llama_index"]


@pytest.mark.parametrize("kind", WRAPS)
def test_body_cut_mid_json_is_an_output_error_and_counted(kind):
    cut = completion("hello").body[:60]
    with scripted_server([Reply(body=cut)]) as srv:
        t = Trace()
        with pytest.raises(LLMOutputError, match="could not be read") as info:
            _wrap(kind, srv.url).complete("hi", max_tokens=5, trace=t)
        assert srv.url in str(info.value)
        assert len(srv.requests) == 1 and t.llm_calls == 1 and t.counters["llm.failed_requests"] == 1


@pytest.mark.parametrize("kind", WRAPS)
def test_empty_choices_is_an_output_error(kind):
    body = json.loads(completion("x").body)
    body["choices"] = []
    with scripted_server([Reply(body=json.dumps(body).encode())]) as srv:
        t = Trace()
        with pytest.raises(LLMOutputError):
            _wrap(kind, srv.url).complete("hi", max_tokens=5, trace=t)
        assert len(srv.requests) == t.llm_calls == 1


@pytest.mark.parametrize("kind", WRAPS)
def test_null_content_is_an_empty_reply_and_json_gives_up_typed(kind):
    with scripted_server([completion(None)]) as srv:
        llm, t = _wrap(kind, srv.url), Trace()
        assert llm.complete("hi", max_tokens=5, trace=t).text == ""
        assert [e.kind for e in t.events].count("empty_reply") == 1
        with pytest.raises(LLMOutputError, match="after 2 attempt"):
            llm.complete_json("ok?", SCHEMA, max_tokens=8, trace=t, retries=1)
        assert len(srv.requests) == t.llm_calls == 3  # one complete, two JSON attempts: every request counted


@pytest.mark.parametrize("kind", WRAPS)
def test_http_500_is_retried_a_bounded_number_of_times(kind):
    with scripted_server([Reply(status=500, body=b'{"error": {"message": "boom"}}')]) as srv:
        t = Trace()
        with pytest.raises(LLMUnavailableError) as info:
            _wrap(kind, srv.url).complete("hi", max_tokens=5, trace=t)
        # retrievekit's policy alone retries (the clients' own max_retries=5 and LlamaIndex's tenacity are off)
        assert len(srv.requests) == 3 and info.value.attempts == 3 and info.value.status == 500
        assert t.llm_calls == 3 and t.counters["llm.retries"] == 2 and srv.url in str(info.value)


@pytest.mark.parametrize("kind", WRAPS)
def test_429_then_success(kind):
    with scripted_server([Reply(status=429, body=b"{}", headers={"retry-after": "0"}), completion("fine")]) as srv:
        t = Trace()
        assert _wrap(kind, srv.url).complete("hi", max_tokens=5, trace=t).text == "fine"
        assert len(srv.requests) == t.llm_calls == 2 and [e.kind for e in t.events] == ["llm_retry"]


@pytest.mark.parametrize("kind", WRAPS)
def test_other_4xx_is_not_retried(kind):
    with scripted_server([Reply(status=404, body=b'{"error": {"message": "no such model"}}')]) as srv:
        with pytest.raises(LLMUnavailableError, match="refused the request") as info:
            _wrap(kind, srv.url).complete("hi", max_tokens=5)
        assert len(srv.requests) == 1 and info.value.status == 404


def _limits(requests: list[dict]) -> list[int]:
    return [r.get("max_tokens", r.get("max_completion_tokens")) for r in requests]


@pytest.mark.parametrize("kind", WRAPS)
def test_limits_and_schema_reach_the_server(kind):
    with scripted_server([completion('{"ok": true}')]) as srv:
        llm = _wrap(kind, srv.url)
        assert llm.complete_json("ok?", SCHEMA, max_tokens=9).value == {"ok": True}
        sent = srv.requests[0]
        assert _limits(srv.requests) == [9] and sent["temperature"] == 0.0
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
        assert "JSON schema" not in sent["messages"][-1]["content"]  # the server enforces it: not in the prompt


@pytest.mark.parametrize("kind", WRAPS)
def test_a_server_that_refuses_the_schema_mode_gets_json_mode_then_the_prompt(kind):
    refuse = Reply(status=400, body=b'{"error": {"message": "response_format not supported"}}')
    with scripted_server([refuse, refuse, completion('{"ok": false}')]) as srv:
        llm, t = _wrap(kind, srv.url), Trace()
        assert llm.complete_json("ok?", SCHEMA, max_tokens=9, trace=t).value == {"ok": False}
        formats = [r.get("response_format", {}).get("type") for r in srv.requests]
        assert formats == ["json_schema", "json_object", None] and llm.json_mode() == "prompt"
        assert [e.kind for e in t.events].count("structured_output") == 2
        assert "JSON schema" in srv.requests[-1]["messages"][-1]["content"]  # the prompt carries it now


@pytest.mark.parametrize("kind", WRAPS)
def test_a_cut_reply_is_asked_again_with_the_limit_doubled_unless_it_was_running_on(kind):
    cut = completion('{"ok": tr', finish_reason="length")  # cut mid-word: more room would finish it
    looping = completion('{"ok": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1', finish_reason="length")  # counting
    with scripted_server([cut, completion('{"ok": true}')]) as srv:
        assert _wrap(kind, srv.url).complete_json("ok?", SCHEMA, max_tokens=9, retries=1).attempts == 2
        assert _limits(srv.requests) == [9, 18]
    with scripted_server([looping, completion('{"ok": true}')]) as srv:
        t = Trace()
        assert _wrap(kind, srv.url).complete_json("ok?", SCHEMA, max_tokens=9, retries=1, trace=t).attempts == 2
        assert _limits(srv.requests) == [9, 9]  # a larger limit would only count for longer
        assert t.counters["json.invalid"] == 1


@pytest.mark.parametrize("kind", WRAPS)
def test_retries_do_not_grow_the_prompt(kind):
    with scripted_server([completion("nope"), completion("still nope"), completion('{"ok": true}')]) as srv:
        llm = _wrap(kind, srv.url, structured_output="prompt")
        assert llm.complete_json("ok?", SCHEMA, max_tokens=9, retries=2).attempts == 3
        sizes = [len(json.dumps(r["messages"])) for r in srv.requests]
        assert [len(r["messages"]) for r in srv.requests] == [1, 1, 1]  # no failed reply is sent back
        assert sizes[2] - sizes[1] < 50 and sizes[1] - sizes[0] < 400


def test_connection_refused_names_the_endpoint():
    from retrievekit.core.llm.llamacpp_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    t = Trace()
    with pytest.raises(LLMUnavailableError, match="did not answer after 3 request") as info:
        _wrap("langchain", url).complete("hi", max_tokens=5, trace=t)
    assert url in str(info.value) and t.llm_calls == 3
