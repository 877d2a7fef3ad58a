"""Issue #54 item 1: a served LLM as a pointwise judge, against llama.cpp's real server (SmolLM2)."""

from __future__ import annotations

import json
import math
import socket

import pytest
from _http_replies import completion, scripted_server
from _llama_server import module_server
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core.errors import InvalidInputError, LLMUnavailableError
from retrievekit.core.judge.served import ServedJudge, digit_margin
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.trace import Trace

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

DOCS = ["Aspirin lowers fever and eases pain.", "The Nile flows north into the Mediterranean Sea."]


server = module_server()


def test_the_yes_no_logprobs_of_the_real_server(server):
    judge = ServedJudge.from_spec(f"openai:smollm2@{server.url}", max_concurrency=2)
    trace = Trace()
    p = judge.score_relevance("Does aspirin reduce fever?", DOCS * 2, trace=trace)
    assert isinstance(judge, RelevanceJudge) and judge.readout == "logprobs"
    assert len(p) == 4 and all(0.0 < x < 1.0 for x in p)
    # temperature 0: one pair, about one score (llama.cpp batches slots together, which moves the last digits)
    assert p[0] == pytest.approx(p[2], abs=0.1) and p[1] == pytest.approx(p[3], abs=0.1)
    assert p[0] != p[1]  # log-probabilities, not a coarse label
    assert trace.llm_calls == 4 and trace.prompt_tokens > 0 and trace.counters["served_judge.pairs"] == 4


def test_a_schema_constrained_digit_where_asked(server):
    judge = ServedJudge.from_spec(f"openai:smollm2@{server.url}", mode="digit")
    p = judge.score_relevance("Does aspirin reduce fever?", DOCS)
    allowed = [1 / (1 + math.exp(-digit_margin(k))) for k in range(10)]
    assert judge.readout == "digit" and all(any(x == pytest.approx(a) for a in allowed) for x in p)


def test_platt_calibration_from_labels(server):
    judge = ServedJudge.from_spec(f"openai:smollm2@{server.url}", max_concurrency=2)
    queries = ["Does aspirin reduce fever?"] * 2 + ["Where does the Nile flow?"] * 2
    a, b = judge.calibrate(queries, DOCS + DOCS, [1, 0, 0, 1])
    assert judge.platt == (a, b) and a >= 0.01 and (a, b) != (1.0, 0.0)


def test_a_server_without_logprobs_gets_the_digit_score_and_a_note():
    bare = completion("Yes")  # a chat completion without a logprobs field
    with scripted_server([bare, completion('{"score": 7}')]) as srv:
        judge = ServedJudge("m", srv.url, policy=CallPolicy(backoff=0.0))
        trace = Trace()
        p = judge.score_relevance("q", ["a doc", "another doc"], trace=trace)
    assert judge.mode == "digit" and p == [pytest.approx(0.75)] * 2
    assert any("no log-probabilities" in e.message for e in trace.events)
    assert srv.requests[0]["logprobs"] is True and srv.requests[1]["response_format"]["type"] == "json_schema"


def test_a_dead_endpoint_is_a_typed_error_naming_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = ServedJudge("m", f"http://127.0.0.1:{port}/v1", policy=CallPolicy(max_retries=1, backoff=0.0, timeout=5))
    with pytest.raises(LLMUnavailableError, match=f"127.0.0.1:{port}"):
        judge.score_relevance("q", ["a"])
    with pytest.raises(InvalidInputError, match="--judge served needs --llm"):
        ServedJudge.from_spec("smollm2")


def test_bench_judge_served_writes_the_judge_block(server, tmp_path):
    from retrievekit.core import cli

    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    out = tmp_path / "r.json"
    args = ["bench", "--dataset", "scifact", "--data-dir", str(data), "--method", "judge-rerank", "--no-progress"]
    args += ["--judge", "served", "--llm", f"openai:smollm2@{server.url}", "--option", "candidates=3"]
    assert cli.main([*args, "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["judge"]["scored_pairs"] == 9 and r["judge"]["auc"] is not None
    assert "ServedJudge" in json.dumps(r["judge"]) and r["cost"]["llm_calls_per_query"] == 3
    cost = r["judge"]["cost_per_query"]  # its cost beside its AUC
    assert cost["llm_calls"] == 3 == cost["judge_stage_llm_calls"] and cost["tokens"] > 0
