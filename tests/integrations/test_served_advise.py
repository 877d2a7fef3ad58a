"""Issue #54 item 2: ``retrievekit advise`` from the CLI against llama.cpp's real server (SmolLM2), both modes."""

from __future__ import annotations

import json

import pytest
from _llama_server import module_server
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core import cli

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

TOPICS = ["aspirin", "statins", "insulin", "vitamin", "malaria", "asthma", "measles", "anemia", "gout", "rickets"]
TOPICS += ["scurvy", "leprosy", "rabies", "cholera", "typhoid", "mumps", "tetanus", "polio", "smallpox", "zika"]
TOPICS += ["dengue", "ebola"]
DOCS = [(t.title(), f"{t.title()} is studied in clinical trials. Doctors treat {t} with care.") for t in TOPICS]
CLAIMS = [f"what treats {t}" for t in TOPICS]  # claim i is relevant to DOCS[i - 1]


server = module_server()


@pytest.mark.parametrize(("mode", "bound"), [("label-free", 30), ("labelled", 80), ("imitating", 30)])
def test_advise_runs_from_the_cli_within_its_bound(server, tmp_path, capsys, mode, bound):
    data = write_mini_scifact(tmp_path, DOCS, CLAIMS)
    out = tmp_path / "advice.json"
    args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", f"openai:smollm2@{server.url}"]
    args += ["--max-calls", str(bound), "--negatives", "1", "--out", str(out), "--records", str(tmp_path / "r.jsonl")]
    if mode == "imitating":  # your questions, no labels: the writer imitates them
        (tmp_path / "mine.txt").write_text("\n".join(f"which drug works against {t}" for t in TOPICS[:8]) + "\n")
        args += ["--questions", str(tmp_path / "mine.txt")]
    assert cli.main([*args, *(["--qrels"] if mode == "labelled" else [])]) == 0
    r = json.loads(out.read_text())
    printed, stated = capsys.readouterr()
    assert r["mode"] == mode.replace("imitating", "label-free") and 0 < r["llm_calls"] <= bound
    assert f"at most {r['llm_calls']}" in stated
    if mode == "imitating":
        assert r["style"]["yours"]["words"] == 5.0 and r["style"]["written"]["words"] > 0
        assert "imitating your questions (5 words, 0 % end with '?'" in printed
    else:
        assert r["style"] is None
    assert r["questions"] == (20 if mode == "labelled" else 6) and r["auc"]["documents"]["auc"] is not None
    assert r["cost_per_pair"]["calls"] == 1.0 and r["cost_per_pair"]["tokens"] > 0
    assert {m["method"] for m in r["methods"]} == {"lattice", "arm", "oneshot", "iterative"}
    assert "lattice:" in printed and "judge AUC on summaries" in printed
    assert cli.main([*args, *(["--qrels"] if mode == "labelled" else [])]) == 0  # resumed: nothing sent again
    assert json.loads(out.read_text())["auc"] == r["auc"]


def test_advise_refuses_fewer_than_20_labelled_questions(tmp_path, capsys):
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", "openai:m@http://127.0.0.1:9/v1"]
    assert cli.main([*args, "--qrels"]) == 2
    assert "at least 20 labelled questions, got 3" in capsys.readouterr().err


def _nan_logprobs(body):
    """A chat completion whose every log-probability is NaN (a broken server: the scripted NaN is the point)."""
    import math

    from _http_replies import Reply

    top = [{"token": t, "logprob": math.nan, "bytes": None} for t in ("Yes", "No")]
    choice = {"index": 0, "message": {"role": "assistant", "content": "Yes"}, "finish_reason": "length"}
    choice["logprobs"] = {"content": [{"token": "Yes", "logprob": math.nan, "bytes": None, "top_logprobs": top}]}
    reply = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    reply["usage"] = {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}
    return Reply(body=json.dumps(reply).encode())


def test_a_server_answering_nan_log_probabilities_gets_no_advice(tmp_path, capsys):
    """Issue #62 item 5. Before: 'AUC 0.500 (0.500-0.500)' and 'oneshot: pays off', exit 0."""
    from _http_replies import scripted_server

    data = write_mini_scifact(tmp_path, DOCS, CLAIMS)
    with scripted_server(answer=_nan_logprobs) as srv:
        args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", f"openai:m@{srv.url}"]
        code = cli.main([*args, "--qrels", "--max-calls", "80", "--negatives", "1", "--out", str(tmp_path / "a.json")])
    printed, err = capsys.readouterr()
    assert code == 2 and "pays off" not in printed and not (tmp_path / "a.json").exists()
    assert "no usable pairs" in err and "NaN or infinite" in err and len(srv.requests) >= 20
