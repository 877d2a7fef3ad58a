"""Issue #54 item 2: ``retrievekit advise`` from the CLI against llama.cpp's real server (SmolLM2), both modes."""

from __future__ import annotations

import json

import pytest
from _llama_server import llama_server
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core import cli

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

TOPICS = ["aspirin", "statins", "insulin", "vitamin", "malaria", "asthma", "measles", "anemia", "gout", "rickets"]
TOPICS += ["scurvy", "leprosy", "rabies", "cholera", "typhoid", "mumps", "tetanus", "polio", "smallpox", "zika"]
TOPICS += ["dengue", "ebola"]
DOCS = [(t.title(), f"{t.title()} is studied in clinical trials. Doctors treat {t} with care.") for t in TOPICS]
CLAIMS = [f"what treats {t}" for t in TOPICS]  # claim i is relevant to DOCS[i - 1]


@pytest.fixture(scope="module")
def server():
    with llama_server(parallel=2) as s:
        yield s


@pytest.mark.parametrize(("mode", "bound"), [("label-free", 30), ("labelled", 80)])
def test_advise_runs_from_the_cli_within_its_bound(server, tmp_path, capsys, mode, bound):
    data = write_mini_scifact(tmp_path, DOCS, CLAIMS)
    out = tmp_path / "advice.json"
    args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", f"openai:smollm2@{server.url}"]
    args += ["--max-calls", str(bound), "--negatives", "1", "--out", str(out), "--records", str(tmp_path / "r.jsonl")]
    assert cli.main([*args, *(["--qrels"] if mode == "labelled" else [])]) == 0
    r = json.loads(out.read_text())
    printed, stated = capsys.readouterr()
    assert r["mode"] == mode and 0 < r["llm_calls"] <= bound and f"at most {r['llm_calls']}" in stated
    assert r["questions"] == (6 if mode == "label-free" else 20) and r["auc"]["documents"]["auc"] is not None
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
