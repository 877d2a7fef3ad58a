"""The served path against a real server: llama.cpp's own server (xllamacpp) serving SmolLM2 on loopback, reached
through ``ChatOpenAI`` and ``OpenAILike`` exactly as users do. Limits reach the server, JSON comes from the server's
schema mode, a paused server times out typed, a killed one is unavailable typed, and concurrent calls overlap."""

from __future__ import annotations

import os
import time

import pytest
from _llama_server import chat_openai, llama_server, module_server, openai_like

from retrievekit.core.errors import LLMTimeoutError, LLMUnavailableError
from retrievekit.core.lattice.config import LatticeConfig
from retrievekit.core.lattice.scoring import SlateScorer, reply_schema
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.concurrency import map_calls
from retrievekit.core.trace import Trace
from retrievekit.langchain import LangChainChatLLM
from retrievekit.llama_index import LlamaIndexChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

WRAPS = ["langchain", "llama_index"]


server = module_server()


def _wrap(kind, server, **kwargs):
    policy = kwargs.pop("policy", CallPolicy(timeout=120, backoff=0.05))
    if kind == "langchain":
        return LangChainChatLLM(chat_openai(server), policy=policy, **kwargs)
    return LlamaIndexChatLLM(openai_like(server), policy=policy, **kwargs)


@pytest.mark.parametrize("kind", WRAPS)
def test_each_calls_limit_reaches_the_server(server, kind):
    t = Trace()
    c = _wrap(kind, server).complete("Write a long story about a cat and a dog.", max_tokens=12, trace=t)
    assert c.completion_tokens <= 12 and c.finish_reason == "length"
    assert t.llm_calls == 1 and t.completion_tokens == c.completion_tokens and not c.usage_estimated


@pytest.mark.parametrize("kind", WRAPS)
def test_slate_scores_come_from_the_servers_schema_mode(server, kind):
    cfg = LatticeConfig()
    t = Trace()
    texts = ["Cats are small domestic animals.", "Rust is a programming language.", "Lions are big cats."]
    res = SlateScorer(_wrap(kind, server), cfg).score("cats", texts, leaf=True, trace=t)
    assert res.source == "llm" and len(res.scores) == 3 and res.attempts == 1
    assert t.counters["json.json_schema"] == 1 and t.counters["json.replies"] == 1 and "json.invalid" not in t.counters
    assert t.completion_tokens < 40  # a schema-bound reply, not an echoed schema
    assert reply_schema(3, cfg)["properties"]["scores"]["minItems"] == 3


@pytest.mark.parametrize("kind", WRAPS)
def test_paused_server_times_out_typed_without_a_retry(server, kind):
    llm = _wrap(kind, server, policy=CallPolicy(timeout=3, max_retries=2, backoff=0.05))
    t = Trace()
    server.pause()
    try:
        start = time.monotonic()
        with pytest.raises(LLMTimeoutError) as info:
            llm.complete("hi", max_tokens=5, trace=t)
        took = time.monotonic() - start
    finally:
        server.resume()
    assert took < 3 + 5 + 2  # the timeout plus the watchdog's grace, never more
    assert info.value.attempts == 1 and info.value.timeout == 3 and server.url in str(info.value)
    assert t.llm_calls == 1 and t.counters["llm.timeouts"] == 1 and "llm.retries" not in t.counters


@pytest.mark.parametrize("kind", WRAPS)
def test_killed_server_is_unavailable_typed(kind):
    with llama_server(parallel=1) as dead:
        llm = _wrap(kind, dead, policy=CallPolicy(timeout=10, max_retries=2, backoff=0.05))
        assert llm.complete("hi", max_tokens=2).text is not None  # alive
        dead.kill()
        t = Trace()
        with pytest.raises(LLMUnavailableError) as info:
            llm.complete("hi", max_tokens=5, trace=t)
    assert not isinstance(info.value, LLMTimeoutError) and info.value.attempts == 3
    assert dead.url in str(info.value) and t.llm_calls == 3 and t.counters["llm.retries"] == 2


@pytest.mark.parametrize("kind", WRAPS)
def test_independent_calls_overlap_on_the_servers_slots(server, kind):
    llm = _wrap(kind, server, max_concurrency=2)
    t = Trace()
    outs = map_calls(
        lambda q, sub: llm.complete(q, max_tokens=4, trace=sub).text,
        ["Say yes.", "Say no.", "Say maybe.", "Say hi."],
        llm=llm,
        max_concurrency=8,
        trace=t,
    )
    assert len(outs) == 4 and t.llm_calls == 4 and t.llm_rounds == 2  # 4 calls on 2 lanes: 2 rounds


def test_a_server_whose_starter_dies_stops_too():
    import subprocess
    import sys

    pytest.importorskip("xllamacpp")
    from retrievekit.core.errors import MissingDependencyError
    from retrievekit.core.llm.models import locate_gguf

    try:
        locate_gguf("smollm2")
    except MissingDependencyError as e:
        pytest.skip(str(e))
    code = (
        "import os\n"
        "from retrievekit.core.llm.llamacpp_server import LlamaCppServer\n"
        "s = LlamaCppServer.start(parallel=1)\n"
        "print(s.pid, flush=True)\n"
        "os._exit(0)\n"  # as a SIGKILL would: no cleanup
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    pid = int(out.stdout.split()[-1])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.kill(pid, 9)
    raise AssertionError("the orphaned llama.cpp server kept running")
