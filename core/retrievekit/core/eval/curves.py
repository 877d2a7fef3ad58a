"""Quality against judge accuracy: the curves of judged methods beside a flat rerank at the same judged items.

Each point is one ``retrievekit bench`` result that has a ``judge`` block (written by every judged run): x is the
judge's measured ROC AUC on the candidates it scored, y a metric. Results are grouped into one panel per dataset
and one series per method setting. A flat rerank (``judge-rerank`` / ``llm-rerank``) is its own series
(its judged items per query are in the table). Oracle runs (``--judge oracle:S``) trace the curve, and runs with real
judges (zero-shot models, trained judges, the cosine judge) are marked on it by name. Results without a judge block
(a baseline, or the method without its judge, e.g. the agent without deletion) are references: a row in the table
and a dashed horizontal line in the panel of their dataset.

Examples:
    >>> r = {"dataset": "scifact", "method": "judge-rerank", "options": {"rerank_k": 20}, "metrics": {"ndcg@10": 0.6},
    ...      "judge": {"name": "oracle", "noise": 0.2, "uses_gold_labels": True, "auc": 0.92, "pairs_per_query": 20.0}}
    >>> [(p.series, p.judge, round(p.auc, 2), p.value) for p in curve_points([r])]
    [('flat judge-rerank (same judged/q)', 'oracle:0.2', 0.92, 0.6)]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.figures import pyplot, save_figure
from retrievekit.core.eval.report import ResultLike, load_results

__all__ = ["CurvePoint", "ReferencePoint", "curve_points", "curves_markdown", "plot_curves", "reference_points"]

_FLAT = ("judge-rerank", "llm-rerank")


@dataclass(frozen=True)
class CurvePoint:
    """One judged run on a curve.

    Examples:
        >>> CurvePoint("scifact", "lattice", "oracle:0", True, 1.0, 0.8, 400.0, 0.0).uses_gold_labels
        True
    """

    dataset: str
    series: str
    judge: str
    uses_gold_labels: bool
    auc: float
    value: float
    judged_per_query: float
    llm_calls_per_query: float


def _series(result: Mapping[str, Any], judge: Mapping[str, Any]) -> str:
    if result.get("label"):
        return str(result["label"])
    if result["method"] in _FLAT:
        return f"flat {result['method']} (same judged/q)"
    return str(result["method"])


def _judge_name(judge: Mapping[str, Any]) -> str:
    name = str(judge.get("name", "judge"))
    short = re.match(r"Judge\('([^']*)'", name)  # a trained or zero-shot judge's repr: its name is enough
    if short:
        name = short.group(1)
    noise = judge.get("noise")
    return f"{name}:{noise:g}" if name == "oracle" and noise is not None else name


def curve_points(results: Sequence[ResultLike], metric: str = "ndcg@10") -> list[CurvePoint]:
    """The curve points of ``results`` (result dicts or JSON paths); results without a judge block are skipped.

    Points are sorted by dataset, series and AUC. A result without ``metric`` is an
    :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> curve_points([{"dataset": "d", "method": "bm25", "metrics": {"ndcg@10": 0.5}}])
        []
    """
    points = []
    for r in load_results(results):
        judge = r.get("judge")
        if not judge or judge.get("auc") is None:
            continue
        if metric not in r["metrics"]:
            raise InvalidInputError(f"{r.get('_source', r['method'])} has no metric {metric!r}")
        cost = r.get("cost") or {}
        points.append(
            CurvePoint(
                dataset=str(r["dataset"]),
                series=_series(r, judge),
                judge=_judge_name(judge),
                uses_gold_labels=bool(judge.get("uses_gold_labels")),
                auc=float(judge["auc"]),
                value=float(r["metrics"][metric]),
                judged_per_query=float(judge.get("pairs_per_query") or 0.0),
                llm_calls_per_query=float(cost.get("llm_calls_per_query") or 0.0),
            )
        )
    return sorted(points, key=lambda p: (p.dataset, p.series, p.auc, p.judge))


@dataclass(frozen=True)
class ReferencePoint:
    """A result without a judge: a reference level on the curves of its dataset.

    Examples:
        >>> ReferencePoint("hotpotqa", "agent (no judge)", 0.75, 6.0).value
        0.75
    """

    dataset: str
    series: str
    value: float
    llm_calls_per_query: float


def reference_points(results: Sequence[ResultLike], metric: str = "ndcg@10") -> list[ReferencePoint]:
    """The results of ``results`` without a judge block that have ``metric``, sorted by dataset and series.

    Examples:
        >>> r = {"dataset": "d", "method": "bm25", "metrics": {"ndcg@10": 0.5}}
        >>> reference_points([r, {**r, "judge": {"auc": 0.9}}])
        [ReferencePoint(dataset='d', series='bm25', value=0.5, llm_calls_per_query=0.0)]
    """
    refs = []
    for r in load_results(results):
        if (r.get("judge") or {}).get("auc") is not None or metric not in r.get("metrics", {}):
            continue
        cost = r.get("cost") or {}
        refs.append(
            ReferencePoint(
                dataset=str(r["dataset"]),
                series=str(r.get("label") or r["method"]),
                value=float(r["metrics"][metric]),
                llm_calls_per_query=float(cost.get("llm_calls_per_query") or 0.0),
            )
        )
    return sorted(refs, key=lambda p: (p.dataset, p.series))


def _metric_list(metric: str | Sequence[str]) -> list[str]:
    metrics = [metric] if isinstance(metric, str) else list(dict.fromkeys(metric))
    if not metrics:
        raise InvalidInputError("curves need at least one metric")
    return metrics


def curves_markdown(results: Sequence[ResultLike], metric: str | Sequence[str] = "ndcg@10") -> str:
    """A markdown table per dataset (and per metric when several are given): series, judge, judge AUC, the metric,
    judged items and LLM calls per query; the dataset's references (results without a judge) last, with judge
    ``none``.

    Examples:
        >>> r = {"dataset": "d", "method": "lattice", "metrics": {"ndcg@10": 0.7, "recall@10": 0.9},
        ...      "judge": {"name": "oracle", "noise": 0.0, "uses_gold_labels": True, "auc": 1.0, "pairs_per_query": 300}}
        >>> print(curves_markdown([r]).splitlines()[4])
        | lattice | oracle:0 (gold labels) | 1.000 | 0.7000 | 300.0 | 0.0 |
        >>> [line for line in curves_markdown([r], ["ndcg@10", "recall@10"]).splitlines() if line.startswith("#")]
        ['### d: ndcg@10', '### d: recall@10']
    """
    metrics = _metric_list(metric)
    lines: list[str] = []
    for name in metrics:
        points = curve_points(results, name)
        for dataset in sorted({p.dataset for p in points}):
            lines += [
                f"### {dataset}" if len(metrics) == 1 else f"### {dataset}: {name}",
                "",
                f"| series | judge | judge AUC | {name} | judged/q | LLM calls/q |",
                "|---|---|---|---|---|---|",
            ]
            for p in (p for p in points if p.dataset == dataset):
                judge = f"{p.judge} (gold labels)" if p.uses_gold_labels else p.judge
                lines.append(
                    f"| {p.series} | {judge} | {p.auc:.3f} | {p.value:.4f} | {p.judged_per_query:.1f} "
                    f"| {p.llm_calls_per_query:.1f} |"
                )
            for r in (r for r in reference_points(results, name) if r.dataset == dataset):
                lines.append(f"| {r.series} | none | — | {r.value:.4f} | 0.0 | {r.llm_calls_per_query:.1f} |")
            lines.append("")
    return "\n".join(lines)


def plot_curves(results: Sequence[ResultLike], out_png: str | Path, metric: str | Sequence[str] = "ndcg@10") -> Path:
    """One panel per dataset (a row of panels per metric when several are given): the metric against judge AUC, a
    line per series through the oracle runs, real judges marked by name. Needs matplotlib
    (``pip install "retrievekit[bench]"``).

    Examples:
        >>> import pathlib, tempfile
        >>> r = {"dataset": "scifact", "method": "judge-rerank", "options": {"rerank_k": 20}, "metrics": {"ndcg@10": 0.6},
        ...      "judge": {"name": "oracle", "noise": 0.2, "uses_gold_labels": True, "auc": 0.92, "pairs_per_query": 20.0}}
        >>> plot_curves([r], pathlib.Path(tempfile.mkdtemp()) / "curves.png").name
        'curves.png'
    """
    metrics = _metric_list(metric)
    rows = [curve_points(results, name) for name in metrics]
    if not rows[0]:
        raise InvalidInputError("no result has a judge block: run `retrievekit bench --judge ...` first")
    plt = pyplot("for curves")
    datasets = sorted({p.dataset for p in rows[0]})
    fig, axes = plt.subplots(
        len(metrics), len(datasets), figsize=(5.5 * len(datasets), 4.2 * len(metrics)), squeeze=False
    )
    for axes_row, name, points in zip(axes, metrics, rows, strict=True):
        refs = reference_points(results, name)
        for ax, dataset in zip(axes_row, datasets, strict=True):
            for r in (r for r in refs if r.dataset == dataset):
                ax.axhline(r.value, color="0.45", linestyle="--", linewidth=1, label=r.series)
            _draw_panel(ax, [p for p in points if p.dataset == dataset], name)
            ax.set_title(dataset if len(metrics) == 1 else f"{dataset}: {name}")
    return save_figure(fig, out_png, dpi=120)


def _draw_panel(ax: Any, points: Sequence[CurvePoint], metric: str) -> None:
    for series in sorted({p.series for p in points}):
        mine = [p for p in points if p.series == series]
        oracle = [p for p in mine if p.uses_gold_labels]
        line = ax.plot([p.auc for p in oracle], [p.value for p in oracle], marker="o", label=series)
        color = line[0].get_color()
        for p in (p for p in mine if not p.uses_gold_labels):
            ax.scatter([p.auc], [p.value], marker="*", s=120, color=color, zorder=3)
            ax.annotate(p.judge, (p.auc, p.value), textcoords="offset points", xytext=(4, 4), fontsize=8)
            ax.axvline(p.auc, color=color, alpha=0.15, linewidth=1)
    ax.set_xlabel("judge ROC AUC on the candidates it scored")
    ax.set_ylabel(metric)
    ax.set_xlim(0.45, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
