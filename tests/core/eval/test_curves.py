"""Judge-accuracy curves: points from judged results, the markdown table, the figure and `retrievekit report --curves`."""

from __future__ import annotations

import json

import pytest

from retrievekit.core.cli import main
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.curves import curve_points, curves_markdown, plot_curves, reference_points


def _result(method, noise, auc, ndcg, *, per_query=20.0, name="oracle", gold=True, label=None, options=None):
    judge = {"name": name, "noise": noise, "uses_gold_labels": gold, "auc": auc, "pairs_per_query": per_query}
    r = {"dataset": "scifact", "split": "dev", "method": method, "metrics": {"ndcg@10": ndcg}, "judge": judge}
    r["options"] = options or {}
    r["cost"] = {"llm_calls_per_query": 0.0 if gold else 40.0}
    if label:
        r["label"] = label
    return r


RESULTS = [
    _result("lattice", 0.0, 1.0, 0.9, per_query=300),
    _result("lattice", 0.5, 0.75, 0.5, per_query=300),
    _result("lattice", 1.0, 0.5, 0.1, per_query=300),
    _result("lattice", None, 0.62, 0.2, per_query=310, name="smollm2-zero-shot", gold=False),
    _result("judge-rerank", 1.0, 0.5, 0.19, per_query=300),
    _result("judge-rerank", 0.0, 1.0, 0.95, per_query=300),
    {"dataset": "scifact", "method": "bm25", "metrics": {"ndcg@10": 0.68}},  # no judge: not a point
]


def test_points_are_grouped_sorted_and_name_the_judge():
    points = curve_points(RESULTS)
    assert [(p.series, p.judge) for p in points] == [
        ("flat judge-rerank (same judged/q)", "oracle:1"),
        ("flat judge-rerank (same judged/q)", "oracle:0"),
        ("lattice", "oracle:1"),
        ("lattice", "smollm2-zero-shot"),
        ("lattice", "oracle:0.5"),
        ("lattice", "oracle:0"),
    ]
    real = [p for p in points if not p.uses_gold_labels]
    assert [(p.auc, p.value, p.llm_calls_per_query) for p in real] == [(0.62, 0.2, 40.0)]


def test_a_label_names_the_series_and_a_missing_metric_is_an_error():
    assert curve_points([_result("lattice", 0.0, 1.0, 0.9, label="lattice-beam4")])[0].series == "lattice-beam4"
    with pytest.raises(InvalidInputError, match="no metric 'recall@10'"):
        curve_points(RESULTS, metric="recall@10")


def test_markdown_marks_gold_label_runs():
    table = curves_markdown(RESULTS)
    assert table.startswith("### scifact")
    assert "| lattice | oracle:0.5 (gold labels) | 0.750 | 0.5000 | 300.0 | 0.0 |" in table
    assert "| lattice | smollm2-zero-shot | 0.620 | 0.2000 | 310.0 | 40.0 |" in table
    assert table.rstrip().splitlines()[-1] == "| bm25 | none | — | 0.6800 | 0.0 | 0.0 |"  # a reference, last


def test_results_without_a_judge_are_references_of_their_dataset():
    other = {"dataset": "nfcorpus", "method": "bm25", "metrics": {"ndcg@10": 0.3}}
    no_metric = {"dataset": "scifact", "method": "dense", "metrics": {"recall@10": 0.7}}
    refs = reference_points([*RESULTS, other, no_metric])
    assert [(r.dataset, r.series, r.value) for r in refs] == [("nfcorpus", "bm25", 0.3), ("scifact", "bm25", 0.68)]
    assert "nfcorpus" not in curves_markdown([*RESULTS, other])  # a dataset with no curve gets no table


def test_plot_writes_a_png_and_refuses_results_without_judges(tmp_path):
    pytest.importorskip("matplotlib")
    out = plot_curves(RESULTS, tmp_path / "figs" / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InvalidInputError, match="no result has a judge block"):
        plot_curves(RESULTS[-1:], tmp_path / "none.png")


def test_report_curves_command(tmp_path, capsys):
    files = []
    for i, r in enumerate(RESULTS):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(r), encoding="utf-8")
        files.append(str(path))
    assert main(["report", *files, "--curves", "--out", str(tmp_path / "curves.md")]) == 0
    assert "| flat judge-rerank (same judged/q) | oracle:0 (gold labels) |" in (tmp_path / "curves.md").read_text()
    assert "wrote" in capsys.readouterr().out


def test_several_metrics_give_a_table_and_a_row_of_panels_each(tmp_path):
    two = [{**r, "metrics": {**r["metrics"], "table_recall@1": r["metrics"]["ndcg@10"] / 2}} for r in RESULTS]
    table = curves_markdown(two, ["ndcg@10", "table_recall@1"])
    heads = [line for line in table.splitlines() if line.startswith("###")]
    assert heads == ["### scifact: ndcg@10", "### scifact: table_recall@1"]
    assert "| lattice | oracle:0.5 (gold labels) | 0.750 | 0.2500 | 300.0 | 0.0 |" in table  # the second metric
    with pytest.raises(InvalidInputError, match="at least one metric"):
        curves_markdown(two, [])
    pytest.importorskip("matplotlib")
    from PIL import Image

    one = Image.open(plot_curves(two, tmp_path / "one.png"))
    both = Image.open(plot_curves(two, tmp_path / "both.png", ["ndcg@10", "table_recall@1"]))
    assert both.size[0] == one.size[0] and both.size[1] == 2 * one.size[1]
    files = []
    for i, r in enumerate(two):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps(r), encoding="utf-8")
        files.append(str(path))
    assert main(["report", *files, "--curves", "--metrics", "ndcg@10", "table_recall@1"]) == 0
