"""The iterative agent's model calls go through core's async driver (issue #60: one home for the model call), against
a scripted OpenAI-compatible server in its own process (``_async_llm_server``) through the real ``ChatOpenAI`` and the
real LangGraph runtime:

* 32 concurrent ``ainvoke`` runs all answer, with no thread started per request (no per-request deadline watchdog:
  the deadline is the awaited policy's ``asyncio.timeout``) and the thread count within the bridge's fixed pool;
* cancelled runs send nothing after the cancel + 0.5 s and close their connections;
* every awaited turn sends the agent's tools (turn 1 forcing the search), the answer none;
* the agent's requests count against the model's one budget of requests in flight (``share_adapter``);
* a prompt over the model's stated bound (``max_prompt_chars``) is refused with ``InvalidInputError`` by the driver,
  before any request, invoked and awaited; the agent's turns carry their own ``max_tokens``.
"""

from __future__ import annotations

import asyncio
import gc
import time

import pytest
from _async_llm_server import llm_server, stats
from _cancelling import after_the_cancel, assert_no_loop_errors
from _http_replies import completion, scripted_server
from _thread_watch import watching_threads

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index import BM25Index
from retrievekit.core.llm.bridge import async_workers
from retrievekit.core.types import Passage
from retrievekit.langgraph import build_iterative_agent

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

DOCS = [Passage(id=f"d{i}", text=f"Lava is hot. Magma rises from vent {i}.") for i in range(6)]
QUESTION = {"question": "Is lava hot?"}
RUNS = 32
THREAD_POOL = async_workers() + 12
"""Threads the awaited path may add at most (as in test_model_drivers_at_load): the bridge's fixed pool, where the
tools node searches, and the client's name resolution; never one per run or per request."""


@pytest.fixture(scope="module")
def server():
    with llm_server(0.2) as s:
        yield s


def _agent(url: str, **chat_kwargs):
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(base_url=url, api_key="-", model="scripted", timeout=30, **chat_kwargs)
    return build_iterative_agent(chat, BM25Index.build(DOCS), max_turns=2)


def test_concurrent_agent_runs_start_no_thread_per_request(server):
    agent = _agent(server.url)
    asyncio.run(agent.ainvoke(QUESTION))  # imports and the first connection, outside the measurement
    gc.collect()
    before = len(stats(server)["arrivals"])

    async def runs():
        return await asyncio.gather(*(agent.ainvoke(QUESTION) for _ in range(RUNS)))

    base = __import__("threading").active_count()
    outs, counts, names = asyncio.run(watching_threads(runs))
    assert [o["answer"] for o in outs] == ["a short summary"] * RUNS  # turn 1 searched, turn 2 answered
    assert all(o["searches"] >= 1 and o["stop_reason"] == "answered" for o in outs)
    assert not [n for n in names if n.startswith("retrievekit-deadline")], sorted(names)
    assert max(counts) - base <= THREAD_POOL, (base, max(counts))
    assert len(stats(server)["arrivals"]) - before == 2 * RUNS


def test_cancelled_agent_runs_send_nothing_more(server, capfd):
    agent = _agent(server.url)

    async def scenario() -> float:
        tasks = [asyncio.create_task(agent.ainvoke(QUESTION)) for _ in range(16)]
        await asyncio.sleep(0.1)  # the first turns are in flight
        for t in tasks:
            t.cancel()
        cancelled_at = time.monotonic()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(d, asyncio.CancelledError) for d in done), done
        return cancelled_at

    got = after_the_cancel(server, asyncio.run(scenario()))
    assert got["open"] <= 1, got  # the stats request itself
    assert_no_loop_errors(capfd)


def test_awaited_turns_send_the_tools_and_the_answer_none():
    """Two turns (a forced search, then the answer in text), then one turn and the answer call at the turn cap."""
    from langchain_openai import ChatOpenAI

    with scripted_server([completion("no idea")]) as srv:
        chat = ChatOpenAI(base_url=srv.url, api_key="-", model="scripted", timeout=30)
        for turns in (2, 1):
            out = asyncio.run(build_iterative_agent(chat, BM25Index.build(DOCS), max_turns=turns).ainvoke(QUESTION))
            assert out["searches"] >= 1 and out["answer"] == "no idea"
    tools = [sorted(t["function"]["name"] for t in body.get("tools") or []) for body in srv.requests]
    assert tools == [["chunk_search"], ["chunk_delete", "chunk_search"], ["chunk_search"], []]
    assert [body.get("tool_choice") for body in srv.requests] == ["required", None, "required", None]


def test_the_agent_keeps_to_the_models_one_budget_of_requests(server):
    """The server answers each request 0.2 s after it arrives, so two requests that arrived within 0.19 s of each
    other were in flight together: with a budget of 2, no three did."""
    from langchain_openai import ChatOpenAI

    from retrievekit.core.llm.resolve import share_adapter
    from retrievekit.langchain import LangChainChatLLM

    chat = ChatOpenAI(base_url=server.url, api_key="-", model="scripted", timeout=30)
    share_adapter(LangChainChatLLM(chat, max_concurrency=2))
    agent = build_iterative_agent(chat, BM25Index.build(DOCS), max_turns=2)
    before = len(stats(server)["arrivals"])

    async def runs():
        return await asyncio.gather(*(agent.ainvoke(QUESTION) for _ in range(6)))

    assert all(o["answer"] == "a short summary" for o in asyncio.run(runs()))
    arrivals = sorted(stats(server)["arrivals"][before:])
    assert len(arrivals) == 12
    assert max(sum(1 for b in arrivals if a - 0.19 < b <= a) for a in arrivals) <= 2


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_an_oversize_agent_prompt_is_refused_before_any_request(server, mode):
    agent = _agent(server.url)
    before = len(stats(server)["arrivals"])
    question = {"question": "Is lava hot? " + "lava " * 30_000}  # 150,000 characters: over the 120,000 bound
    with pytest.raises(InvalidInputError, match="max_prompt_chars"):
        agent.invoke(question) if mode == "invoke" else asyncio.run(agent.ainvoke(question))
    assert len(stats(server)["arrivals"]) == before
