"""``benchmarks/judge_curves.py`` split over processes: shards run the method, an aggregating run without
``--shard`` (``--no-flat``) sizes the flat rerank, and shards run again then split the flat rerank too; the last
run aggregates both without running a query again.

Real components: the recipe's ``main``, the dataset loader (a synthetic SciFact folder), BM25, judge-rerank as the
judged method and as the flat rerank, the oracle judge, the per-query records.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact
from _paths import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import judge_curves  # noqa: E402

METHOD, FLAT = "judge-rerank--oracle-0", "judge-rerank-bm25-k2--oracle-0"


@pytest.fixture
def mini_data(tmp_path: Path) -> Path:
    return write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)


def _curves(data_dir: Path, out_dir: Path, *extra: str) -> int:
    args = ["--dataset=scifact", f"--data-dir={data_dir}", "--method=judge-rerank", "--option=first_stage=bm25"]
    args += ["--option=candidates=2", "--noise", "0", "--k=3", f"--out-dir={out_dir}", "--no-progress"]
    return judge_curves.main([*args, *extra])


def _qids(records: Path) -> list[str]:
    if not records.is_file():
        return []
    lines = records.read_text(encoding="utf-8").splitlines()[1:]
    return sorted(json.loads(line)["qid"] for line in lines)


def test_shards_split_the_flat_rerank_once_the_method_is_aggregated(mini_data, tmp_path, capsys):
    out = tmp_path / "curves"
    for shard in ("0/2", "1/2"):  # 1. the method, split; the flat rerank's size is not known yet
        assert _curves(mini_data, out, "--shard", shard) == 0
    assert _qids(out / f"{METHOD}.jsonl") == ["1", "2", "3"]
    assert not (out / f"{FLAT}.jsonl").exists() and not list(out.glob("*.json"))
    assert capsys.readouterr().out == ""  # a shard prints no table

    assert _curves(mini_data, out, "--no-flat") == 0  # 2. aggregates the method: 2 judged items a query
    assert json.loads((out / f"{METHOD}.json").read_text())["judge"]["pairs_per_query"] == 2
    assert not (out / f"{FLAT}.jsonl").exists()
    capsys.readouterr()

    assert _curves(mini_data, out, "--shard", "0/2") == 0  # 3. each shard runs its share of the flat rerank
    assert _qids(out / f"{FLAT}.jsonl") == ["1", "3"]
    assert _curves(mini_data, out, "--shard", "1/2") == 0
    assert _qids(out / f"{FLAT}.jsonl") == ["1", "2", "3"] and not (out / f"{FLAT}.json").exists()
    assert capsys.readouterr().out == ""

    before = {p.name: p.read_bytes() for p in out.glob("*.jsonl")}
    assert _curves(mini_data, out) == 0  # 4. aggregates the flat rerank from its records, runs no query again
    assert {p.name: p.read_bytes() for p in out.glob("*.jsonl")} == before
    flat = json.loads((out / f"{FLAT}.json").read_text())
    assert flat["options"]["candidates"] == 2 and flat["metrics"]["hit@1"] == 1.0
    rows = [line for line in capsys.readouterr().out.splitlines() if "oracle:0" in line]
    assert len(rows) == 2  # the method and its flat rerank


def test_a_run_aggregated_over_fewer_questions_is_not_taken_as_done(mini_data, tmp_path, capsys):
    out = tmp_path / "curves"
    assert _curves(mini_data, out, "--limit", "2", "--no-flat") == 0
    assert json.loads((out / f"{METHOD}.json").read_text())["n_queries"] == 2
    assert _curves(mini_data, out, "--shard", "0/2") == 0  # the third question is shard 0's: it runs, no flat yet
    assert _qids(out / f"{METHOD}.jsonl") == ["1", "2", "3"] and not (out / f"{FLAT}.jsonl").exists()
    assert _curves(mini_data, out, "--no-flat") == 0
    assert json.loads((out / f"{METHOD}.json").read_text())["n_queries"] == 3
