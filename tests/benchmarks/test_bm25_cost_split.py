"""benchmarks/bm25_cost_split.py over 6,000 documents and 20 claims: both folders are built and removed, every part is
timed, the tie count agrees with the hits kept, and a rerun resumes (runs nothing, prints the same row)."""

from __future__ import annotations

import json
import sys

import pytest
from _paths import REPO

if str(REPO / "benchmarks") not in sys.path:
    sys.path.insert(0, str(REPO / "benchmarks"))

import bm25_cost_split  # noqa: E402

PARTS = ("tantivy_ids", "bm25index", "engine", "search_k", "search_ask", "read_kept", "parse_k")


@pytest.mark.timeout(600)
def test_every_part_is_timed_and_a_rerun_resumes(data_dir, tmp_path, capsys):
    records = tmp_path / "split.jsonl"
    argv = ["--data-dir", str(data_dir), "--sizes", "6000", "--queries", "20", "--records", str(records)]
    assert bm25_cost_split.main([*argv, "--work-dir", str(tmp_path)]) == 0
    (row,) = map(json.loads, records.read_text().splitlines())
    assert row["n"] == 6000 and row["queries"] == 20
    assert all(row[p] > 0 for p in PARTS)
    assert 0 <= row["claims_tied"] <= 20 and row["mean_kept"] >= 10  # every claim has 10 hits at 6,000 documents
    assert (row["mean_kept"] > 10) == (row["claims_tied"] > 0)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("bm25-split-")]  # the folders are removed
    before = records.read_text()
    assert bm25_cost_split.main([*argv, "--work-dir", str(tmp_path)]) == 0
    assert records.read_text() == before and json.loads(capsys.readouterr().out.splitlines()[-1]) == row
