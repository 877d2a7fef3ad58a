"""The `retrievekit` CLI, in-process: bench on a synthetic SciFact folder, report, errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from _mini_scifact import write_mini_scifact

from retrievekit.core.cli import main
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.options import parse_options
from retrievekit.core.registry import MethodContext, register_method
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit


class _Overlap:
    def __init__(self, ctx: MethodContext) -> None:
        self.corpus = list(ctx.corpus)
        self.options = ctx.options

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        terms = set(query.lower().split())
        ranked = sorted(self.corpus, key=lambda o: (-len(terms & set(o.index_text().lower().split())), o.id))
        return [ScoredHit(obj=o, score=1.0, rank=i) for i, o in enumerate(ranked[:k])]


register_method("cli-test-overlap", _Overlap)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    docs = [
        ("Aspirin", "aspirin reduces fever"),
        ("Statins", "statins lower cholesterol"),
        ("Sun", "vitamin d from sunlight"),
    ]
    return write_mini_scifact(tmp_path, docs, ["aspirin fever", "cholesterol", "sunlight vitamin"])


def _bench(data_dir: Path, out: Path, *extra: str) -> int:
    args = ["--dataset=scifact", f"--data-dir={data_dir}", "--method=cli-test-overlap", f"--out={out}", "--no-progress"]
    return main(["bench", *args, *extra])


def test_bench_end_to_end(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res" / "r.json"
    assert _bench(data_dir, out, "--k", "10", "--limit", "2", "--option", "budget=400", "--option", "mode=fast") == 0
    r = json.loads(out.read_text())
    assert (r["dataset"], r["split"], r["method"], r["n_queries"], r["k"]) == (
        "scifact",
        "dev",
        "cli-test-overlap",
        2,
        10,
    )
    assert r["metrics"]["ndcg@10"] == 1.0 and r["options"] == {"budget": 400, "mode": "fast"}
    assert set(r["cost"]) == {
        "llm_calls_per_query",
        "llm_rounds_per_query",
        "prompt_tokens_per_query",
        "completion_tokens_per_query",
        "seconds_per_query",
    }
    printed = capsys.readouterr().out
    assert "cli-test-overlap@scifact/dev" in printed and "wrote" in printed
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]  # no temp files left behind


def test_bench_data_dir_from_env(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVEKIT_DATA_DIR", str(data_dir))
    out = tmp_path / "env.json"
    assert (
        main(["bench", "--dataset", "scifact", "--method", "cli-test-overlap", "--out", str(out), "--no-progress"]) == 0
    )
    assert json.loads(out.read_text())["n_queries"] == 3


def test_bench_errors_exit_2_without_traceback(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _bench(data_dir, tmp_path / "x.json", "--split", "test") == 2
    err = capsys.readouterr().err
    assert "retrievekit: error:" in err and "supported splits here: dev" in err and "Traceback" not in err
    assert _bench(tmp_path / "nowhere", tmp_path / "x.json") == 2
    assert "does not exist" in capsys.readouterr().err
    assert _bench(data_dir, tmp_path / "x.json", "--option", "novalue") == 2
    assert "key=value" in capsys.readouterr().err
    # unknown method: argparse usage error
    assert (
        main(["bench", "--dataset", "scifact", "--data-dir", str(data_dir), "--method", "nope", "--out", "x.json"]) == 2
    )
    assert not (tmp_path / "x.json").exists()


def test_report_md_and_png(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert _bench(data_dir, a) == 0 and _bench(data_dir, b, "--k", "1") == 0
    md, png = tmp_path / "out" / "report.md", tmp_path / "out" / "report.png"
    assert main(["report", str(a), str(b), "--out", str(md), "--png", str(png)]) == 0
    text = md.read_text()
    assert text.startswith("| run | queries | ndcg@10") and text.count("cli-test-overlap@scifact/dev") == 2
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert main(["report", str(a), "--metrics", "recall@1"]) == 0
    assert "recall@1" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing.json")]) == 2


def test_parse_options() -> None:
    assert parse_options(["a=1", "b=x=y", "c=[1,2]", "d="]) == {"a": 1, "b": "x=y", "c": [1, 2], "d": ""}
    with pytest.raises(InvalidInputError):
        parse_options(["=3"])


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


# --------------------------------------------------------------------------- broken data folders


def _rewrite_gz_line(path: Path, lineno: int, text: str) -> None:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    lines[lineno - 1] = text
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _truncate_corpus(d: Path) -> None:
    path = d / "scifact" / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:  # big and poorly compressible, so the cut lands mid-file
        for i in range(3000):
            f.write(json.dumps({"_id": str(i), "title": "t", "text": f"{i * 7919 % 100003:x} " * 12}) + "\n")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _bad_json_query(d: Path) -> None:
    path = d / "scifact" / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = '{"_id": "2", "text": '
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


BROKEN_CLI = [
    ("missing file", lambda d: (d / "scifact" / "queries.jsonl").unlink(), "scifact/queries.jsonl", None),
    ("truncated gzip", _truncate_corpus, "scifact/corpus.jsonl.gz", None),
    (
        "corpus line without text",
        lambda d: _rewrite_gz_line(d / "scifact" / "corpus.jsonl.gz", 3, '{"_id": "102", "title": "Sun"}'),
        "scifact/corpus.jsonl.gz",
        3,
    ),
    (
        "corpus line without _id",
        lambda d: _rewrite_gz_line(d / "scifact" / "corpus.jsonl.gz", 2, '{"title": "Statins", "text": "lower"}'),
        "scifact/corpus.jsonl.gz",
        2,
    ),
    ("bad JSON line", _bad_json_query, "scifact/queries.jsonl", 2),
    (
        "non-UTF-8 qrels",
        lambda d: (d / "scifact" / "qrels" / "dev.tsv").write_bytes(b"query-id\tcorpus-id\tscore\n1\t100\t1\xff\n"),
        "scifact/qrels/dev.tsv",
        2,
    ),
]


@pytest.mark.parametrize(("case", "breaks", "relpath", "line"), BROKEN_CLI, ids=[b[0] for b in BROKEN_CLI])
def test_bench_and_data_check_name_the_broken_file(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, breaks: Any, relpath: str, line: Any
) -> None:
    breaks(data_dir)
    out = tmp_path / "r.json"
    assert _bench(data_dir, out) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith("retrievekit: error: scifact: ") and str(data_dir / relpath) in err, err
    assert "docs/datasets.md" in err and "Traceback" not in err
    if line is not None:
        assert f" line {line}:" in err, err
    assert not out.exists() and "wrote" not in captured.out
    # the same message from `retrievekit data check`, with nothing run
    assert main(["data", "check", "--dataset", "scifact", "--data-dir", str(data_dir)]) == 2
    check = capsys.readouterr()
    assert "scifact dev: FAILED" in check.out and check.err.strip() == err.strip()


def test_data_check_prints_counts(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "check", "--dataset", "scifact", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert (
        "scifact dev: ok: 3 corpus objects, 3 queries, 3 relevant judgements; "
        "files: scifact/corpus.jsonl.gz, scifact/queries.jsonl, scifact/qrels/dev.tsv"
    ) in out


def test_data_check_every_present_dataset(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVEKIT_DATA_DIR", str(data_dir))
    assert main(["data", "check"]) == 0
    out = capsys.readouterr().out
    assert "scifact dev: ok" in out and "not present: ott_qa, obliqa, hotpotqa, musique" in out
    # a dataset folder that is there but empty fails; the others are still checked
    (data_dir / "obliqa").mkdir()
    assert main(["data", "check"]) == 2
    captured = capsys.readouterr()
    assert "scifact dev: ok" in captured.out and "obliqa dev: FAILED" in captured.out
    assert f"obliqa: missing file {data_dir / 'obliqa' / 'passages.jsonl.gz'}" in captured.err
    # an empty folder and a folder that does not exist
    (tmp_path / "empty").mkdir()
    assert main(["data", "check", "--data-dir", str(tmp_path / "empty")]) == 2
    assert "no dataset found" in capsys.readouterr().err
    assert main(["data", "check", "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_bench_records_shards_and_corpus_size(data_dir: Path, tmp_path: Path) -> None:
    """Two shard runs share one records file; a last run aggregates them and equals a plain run."""
    rec = tmp_path / "runs" / "r.jsonl"
    for part in ("0/2", "1/2"):
        assert _bench(data_dir, tmp_path / f"s{part[0]}.json", "--records", str(rec), "--shard", part) == 0
    shards = [json.loads((tmp_path / f"s{i}.json").read_text()) for i in (0, 1)]
    assert [s["n_queries"] for s in shards] == [2, 1] and shards[1]["shard"] == "1/2"
    assert _bench(data_dir, tmp_path / "all.json", "--records", str(rec)) == 0
    total = json.loads((tmp_path / "all.json").read_text())
    assert _bench(data_dir, tmp_path / "plain.json") == 0
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert total["n_resumed"] == 3 and total["metrics"] == plain["metrics"]
    assert len(rec.read_text().splitlines()) == 1 + 3  # header + one line per query
    assert _bench(data_dir, tmp_path / "small.json", "--corpus-size", "1", "--limit", "1") == 0
    small = json.loads((tmp_path / "small.json").read_text())
    assert small["metrics"]["hit@1"] == 1.0  # the gold abstract is kept in the restricted pool
    assert _bench(data_dir, tmp_path / "bad.json", "--shard", "2/2") == 2


# --------------------------------------------------------------------------- output paths and option typos


def _bench_method(data_dir: Path, out: Path, method: str, *extra: str) -> int:
    argv = ["bench", "--dataset", "scifact", "--data-dir", str(data_dir), "--method", method, "--out", str(out)]
    return main([*argv, "--no-progress", *extra])


def test_an_out_path_that_cannot_be_written_is_refused_before_the_run(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []
    register_method("cli-test-counted", lambda ctx: built.append("built") or _Overlap(ctx))
    (tmp_path / "notes.txt").write_text("x")
    for out, why in [(tmp_path / "notes.txt" / "res" / "r.json", "is a file, not a folder"), (tmp_path, "is a folder")]:
        assert _bench_method(data_dir, out, "cli-test-counted") == 2
        err = capsys.readouterr().err
        assert err.startswith("retrievekit: error: ") and why in err and "Traceback" not in err, err
        assert _bench_method(data_dir, tmp_path / "ok.json", "cli-test-counted", "--records", str(out)) == 2
        assert "--records" in capsys.readouterr().err
    assert built == []  # refused before the dataset was loaded or the method built
    result = tmp_path / "result.json"  # a real result, so only the --out path can make report fail
    result.write_text(json.dumps({"dataset": "d", "method": "bm25", "n_queries": 1, "metrics": {"ndcg@10": 0.5}}))
    assert main(["report", str(result), "--out", str(tmp_path / "ok.md")]) == 0
    capsys.readouterr()
    assert main(["report", str(result), "--out", str(tmp_path / "notes.txt" / "r.md")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and "Traceback" not in err, err


def test_an_option_typo_is_refused_naming_the_known_keys(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert _bench_method(data_dir, out, "bm25", "--option", "k1x=1") == 2
    assert "retrievekit: error: unknown bm25 option(s): k1x; known: progress" in capsys.readouterr().err
    assert _bench_method(data_dir, out, "hybrid", "--option", "fuson=weighted") == 2
    err = capsys.readouterr().err
    assert "unknown hybrid option(s): fuson (did you mean fusion?); known: fusion, dense_weight" in err
    assert not out.exists()
