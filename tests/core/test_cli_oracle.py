"""``retrievekit bench --judge oracle[:S]`` in-process (issue #17.1): the result JSON carries the judge block and the
command says plainly that the run read the gold labels; a bad noise exits 2.

Real components: the CLI, the dataset loader (a synthetic SciFact folder), BM25, judge-rerank, the oracle.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core.cli import main


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)


def _bench(data_dir: Path, out: Path, judge: str) -> int:
    args = ["--dataset=scifact", f"--data-dir={data_dir}", "--method=judge-rerank", f"--judge={judge}"]
    options = ["--option=rerank_k=3", "--option=first_stage=bm25", "--k=3", f"--out={out}", "--no-progress"]
    return main(["bench", *args, *options])


def test_bench_with_the_oracle_writes_and_prints_the_judge_block(data_dir, tmp_path, capsys):
    out = tmp_path / "oracle.json"
    assert _bench(data_dir, out, "oracle") == 0
    printed = capsys.readouterr().out
    assert "judge oracle: AUC 1.000 on 9 scored pairs (3 relevant)" in printed
    assert "warning: diagnostic run: the judge read the gold labels" in printed
    result = json.loads(out.read_text())
    assert result["judge"]["uses_gold_labels"] and result["judge"]["noise"] == 0.0 and result["metrics"]["hit@1"] == 1.0
    assert result["options"]["judge_dir"] == "oracle"


def test_bench_refuses_a_bad_oracle_noise(data_dir, tmp_path, capsys):
    assert _bench(data_dir, tmp_path / "bad.json", "oracle:1.5") == 2
    assert "noise S in [0, 1]" in capsys.readouterr().err
