"""The resumable per-query log of ``benchmarks/mindref_bench.py`` (a long CPU run must survive being stopped)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from _tiny_lm import build_tiny_lm

from retrievekit.core.llm import LocalLM

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "mindref_bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("mindref_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SETTINGS = {"dataset": "scifact", "split": "dev", "llm": "smollm2", "config": {"title_beams": 15}}


def _row(qid: str) -> dict:
    return {"qid": qid, "ids": ["d1", "d2"], "seconds": 1.5, "llm_calls": 2, "completion_tokens": 40}


def test_rows_round_trip_and_no_file_means_nothing_done(bench, tmp_path):
    path = tmp_path / "p.jsonl"
    assert bench._read_progress(str(path), SETTINGS) == {}
    assert bench._read_progress(None, SETTINGS) == {}
    bench._append_progress(str(path), SETTINGS, _row("q1"))
    bench._append_progress(str(path), SETTINGS, _row("q2"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"settings": SETTINGS} and len(lines) == 3  # the settings line is written once
    done = bench._read_progress(str(path), SETTINGS)
    assert sorted(done) == ["q1", "q2"] and done["q2"]["ids"] == ["d1", "d2"]


def test_a_file_of_other_settings_is_refused(bench, tmp_path):
    path = tmp_path / "p.jsonl"
    bench._append_progress(str(path), SETTINGS, _row("q1"))
    other = {**SETTINGS, "config": {"title_beams": 5}}
    with pytest.raises(SystemExit, match="other settings"):
        bench._read_progress(str(path), other)


def test_a_half_written_last_line_is_dropped_and_redone(bench, tmp_path):
    path = tmp_path / "p.jsonl"
    bench._append_progress(str(path), SETTINGS, _row("q1"))
    with path.open("a") as fh:
        fh.write('{"qid": "q2", "ids": ["d')  # a crash in the middle of a write
    assert sorted(bench._read_progress(str(path), SETTINGS)) == ["q1"]
    bench._append_progress(str(path), SETTINGS, _row("q2"))  # appends after the truncated file, not onto the stub
    assert sorted(bench._read_progress(str(path), SETTINGS)) == ["q1", "q2"]


def test_diagnosis_rescores_a_gold_title_exactly_as_beam_search_scored_it(bench):
    from test_mindref_core import SMALL, corpus

    from retrievekit.core.generative import MindRef

    model, tok = build_tiny_lm()
    mr = MindRef(corpus(), LocalLM(model, tok, name="tiny"), SMALL)
    query = "aspirin and pain"
    titles = [t for t in mr.recall_titles(query) if not t.truncated]
    assert titles
    t = titles[0]
    gold = {mr.corpus[t.documents[0]].id: 1}
    assert bench._diagnose(mr, query, list(gold), gold, t.score) == "hit"
    # the gold title's rescored value is the beam's own score: just below it the recalled title wins, just above it loses
    assert bench._diagnose(mr, query, ["elsewhere"], gold, t.score - 1e-4) == "search"
    assert bench._diagnose(mr, query, ["elsewhere"], gold, t.score + 1e-4) == "model"
    assert bench._diagnose(mr, query, ["elsewhere"], {}, t.score) is None  # no gold: nothing to diagnose


def test_shard_parsing(bench):
    assert bench._parse_shard(None) == (0, 1)
    assert bench._parse_shard("1/2") == (1, 2)
    for bad in ("2/2", "a/2", "1", "-1/2"):
        with pytest.raises(SystemExit, match="--shard"):
            bench._parse_shard(bad)
