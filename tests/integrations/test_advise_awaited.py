"""``advise``'s model calls as steps (issue #60): the question writer and the judge, driven sync and awaited.

* The question writer is one step: driven by ``drive`` and awaited by ``adrive`` -- against a scripted server that
  writes a question from the document it is shown, through LlamaIndex's ``OpenAILike`` -- it writes the same
  questions from the same requests.
* ``aadvise`` gives ``advise``'s report (a judge of known AUC, labelled and label-free).
* A cancelled ``aadvise`` (a served writer and a served judge on a scripted server in its own process, every request
  answered after 0.2 s) sends no request after the cancel + 0.5 s and leaves no connection open.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from _advise import CORPUS, WORDS, KeywordQuestions, KnownAUC
from _async_llm_server import llm_server
from _cancelling import after_the_cancel, assert_no_loop_errors, cancel_under_way
from _http_replies import Reply, completion, scripted_server

from retrievekit.core.eval.advise import aadvise, advise
from retrievekit.core.eval.advise_steps import awrite_question, question_step, write_question
from retrievekit.core.judge.served import ServedJudge
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.trace import Trace
from retrievekit.llama_index import LlamaIndexChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def _openai_like(url: str, slots: int = 4) -> LlamaIndexChatLLM:
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(model="scripted", api_base=url, api_key="-", is_chat_model=True, timeout=60)
    return LlamaIndexChatLLM(llm, max_concurrency=slots)


def _question_for(body: dict[str, Any]) -> Reply:
    """The scripted writer: 'What is <the document's keyword>?' over two lines (the first is the question)."""
    word = re.search(r"zq\d{3}x", body["messages"][-1]["content"]).group(0)
    return completion(f'"What is {word}?"\nIt is in the document.')


def test_the_question_writer_is_one_step_driven_sync_and_awaited():
    docs = CORPUS[:6]
    with scripted_server(answer=_question_for) as srv:
        writer = _openai_like(srv.url)
        sync = [write_question(writer, d) for d in docs]
        traces = [Trace() for _ in docs]

        async def awaited() -> list[str]:
            return await asyncio.gather(
                *(awrite_question(writer, d, trace=t) for d, t in zip(docs, traces, strict=True))
            )

        got = asyncio.run(awaited())
        bodies = [json.dumps(b["messages"], sort_keys=True) for b in srv.requests]
    assert got == sync == [f"What is {WORDS[i]}?" for i in range(6)]
    assert bodies[:6] == sorted(bodies[6:], key=bodies.index)  # the same requests, sent once each
    assert all(t.llm_calls == 1 for t in traces)
    # the step itself, driven sync and awaited over an in-process writer (awaited on the bridge's pool)
    assert [drive(question_step(d), KeywordQuestions()) for d in docs] == sync
    assert [asyncio.run(adrive(question_step(d), KeywordQuestions())) for d in docs] == sync


def _same(report: dict[str, Any]) -> dict[str, Any]:
    """The report less its measured seconds."""
    untimed = lambda d: {k: v for k, v in d.items() if "seconds" not in k}  # noqa: E731
    return {
        **report,
        "cost_per_pair": untimed(report["cost_per_pair"]),
        "methods": list(map(untimed, report["methods"])),
    }


def test_aadvise_gives_advises_report(tmp_path):
    questions = {f"q{i}": f"What is {w}?" for i, w in enumerate(WORDS)}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(len(WORDS))}
    labelled = {"questions": questions, "qrels": qrels, "max_calls": 160, "progress": False, "say": lambda _: None}
    sync = advise(CORPUS, KnownAUC(0.9), **labelled)
    awaited = asyncio.run(aadvise(CORPUS, KnownAUC(0.9), **labelled))
    assert _same(awaited) == _same(sync) and sync["questions"] == 20
    free = {"max_calls": 90, "progress": False, "say": lambda _: None}
    sync = advise(CORPUS, KnownAUC(0.9), question_llm=KeywordQuestions(), **free)
    records = tmp_path / "r.jsonl"
    awaited = asyncio.run(aadvise(CORPUS, KnownAUC(0.9), question_llm=KeywordQuestions(), records=records, **free))
    assert _same({**awaited, "records": None}) == _same(sync) and sync["questions"] == 10
    assert len(records.read_text().splitlines()) == 1 + 10  # the settings, then one record a question


def test_a_cancelled_aadvise_sends_nothing_more(tmp_path, capfd):
    with llm_server(0.2) as server:
        writer, judge = _openai_like(server.url), ServedJudge("scripted", server.url, max_concurrency=4)
        records = tmp_path / "r.jsonl"

        async def scenario() -> float:
            task = asyncio.create_task(
                aadvise(CORPUS, judge, question_llm=writer, records=records, progress=False, say=lambda _: None)
            )
            cancelled_at, (ended,) = await cancel_under_way([task], server, arrived=12)  # a few questions under way
            assert isinstance(ended, asyncio.CancelledError), ended
            return cancelled_at

        got = after_the_cancel(server, asyncio.run(scenario()))
    assert 12 <= len(got["arrivals"]) < 22 * 9  # cancelled while under way, long before its 198 calls
    assert got["open"] <= 1, got  # the stats request itself
    assert len(records.read_text().splitlines()) >= 2  # the questions judged before the cancel are kept
    assert_no_loop_errors(capfd)
