"""Compare benchmark results: a markdown table and a bar chart.

Results are the dicts :func:`~retrievekit.core.eval.runner.run_benchmark`
returns (or the JSON files ``retrievekit bench --out`` writes).

Examples:
    >>> r = {"dataset": "scifact", "split": "dev", "method": "bm25", "n_queries": 2,
    ...      "metrics": {"ndcg@10": 0.5}, "cost": {"seconds_per_query": 0.01}}
    >>> print(compare([r], metrics=["ndcg@10"]).splitlines()[2])
    | bm25@scifact/dev | 2 | 0.5000 | - | - | - | - | 0.0100 | - |
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.paths import ensure_folder

__all__ = ["DEFAULT_REPORT_METRICS", "compare", "load_results", "plot"]

DEFAULT_REPORT_METRICS: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@5", "hit@5", "perfect_recall@10")
"""Metric columns :func:`compare` and :func:`plot` show when present in the results."""

_COST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("llm_calls_per_query", "LLM calls/q"),
    ("llm_rounds_per_query", "LLM rounds/q"),
    ("prompt_tokens_per_query", "prompt tok/q"),
    ("completion_tokens_per_query", "compl. tok/q"),
    ("seconds_per_query", "s/q"),
)

ResultLike = Mapping[str, Any] | str | Path


def load_results(results: Sequence[ResultLike]) -> list[dict[str, Any]]:
    """Read result JSON files (paths) or pass result dicts through, checking the required keys.

    Examples:
        >>> load_results([{"method": "m", "dataset": "d", "metrics": {}}])[0]["method"]
        'm'
    """
    out: list[dict[str, Any]] = []
    for item in results:
        if isinstance(item, (str, Path)):
            path = Path(item)
            if not path.is_file():
                raise InvalidInputError(f"result file {path} does not exist")
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as e:
                raise InvalidInputError(f"result file {path} is not JSON: {e}") from e
            data = dict(data) if isinstance(data, dict) else data
            if isinstance(data, dict):
                data.setdefault("_source", str(path))
        else:
            data = dict(item)
        if not isinstance(data, dict) or not {"method", "dataset", "metrics"} <= set(data):
            raise InvalidInputError(f"not a retrievekit bench result (needs method, dataset, metrics): {item!s:.80}")
        out.append(data)
    if not out:
        raise InvalidInputError("no results to report")
    return out


def _label(r: Mapping[str, Any]) -> str:
    split = r.get("split")
    return f"{r.get('label') or r['method']}@{r['dataset']}" + (f"/{split}" if split else "")


def _choose_metrics(results: Sequence[Mapping[str, Any]], metrics: Sequence[str] | None) -> list[str]:
    if metrics is not None:
        return list(metrics)
    present = {m for r in results for m in r.get("metrics", {})}
    chosen = [m for m in DEFAULT_REPORT_METRICS if m in present]
    return chosen or sorted(present)[:6]


def _fmt(value: Any, digits: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value:.{digits}f}"


def compare(results: Sequence[ResultLike], metrics: Sequence[str] | None = None) -> str:
    """Markdown table: one row per result (``method@dataset/split``), metric columns, then cost columns.

    Missing values show as ``-``. ``metrics=None`` picks the
    :data:`DEFAULT_REPORT_METRICS` present in any result.

    Examples:
        >>> r = {"dataset": "d", "method": "m", "metrics": {"ndcg@10": 1.0}, "cost": {}}
        >>> compare([r]).splitlines()[0]
        '| run | queries | ndcg@10 | LLM calls/q | LLM rounds/q | prompt tok/q | compl. tok/q | s/q | build s |'
    """
    rows = load_results(results)
    cols = _choose_metrics(rows, metrics)
    header = ["run", "queries", *cols, *(name for _, name in _COST_COLUMNS), "build s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        cost = r.get("cost") or {}
        cells = [_label(r), str(r.get("n_queries", "-"))]
        cells += [_fmt(r["metrics"].get(m), 4) for m in cols]
        cells += [
            _fmt(cost.get("llm_calls_per_query"), 2),
            _fmt(cost.get("llm_rounds_per_query"), 2),
            _fmt(cost.get("prompt_tokens_per_query"), 1),
            _fmt(cost.get("completion_tokens_per_query"), 1),
            _fmt(cost.get("seconds_per_query"), 4),
            _fmt(r.get("build_seconds"), 1),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: Sequence[ResultLike], out_png: str | Path, metrics: Sequence[str] | None = None) -> Path:
    """Bar chart: grouped quality metrics per result (left) and seconds per query (right, log scale).

    Uses matplotlib's Agg backend (no display needed); returns the written path.

    Examples:
        >>> r = {"dataset": "d", "method": "m", "metrics": {"ndcg@10": 0.4}, "cost": {"seconds_per_query": 0.1}}
        >>> plot([r], "/tmp/rk_report_doctest.png").suffix
        '.png'
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - matplotlib is in the bench extra
        raise MissingDependencyError("matplotlib", "pip install 'retrievekit[bench]'") from e
    rows = load_results(results)
    cols = _choose_metrics(rows, metrics)
    labels = [_label(r) for r in rows]
    out = Path(out_png)
    ensure_folder(out.parent)
    fig, (ax_q, ax_t) = plt.subplots(
        1, 2, figsize=(max(8.0, 2.0 + 1.4 * len(rows) * max(1, len(cols)) / 3), 4.5 + 0.25 * (len(rows) // 4))
    )
    width = 0.8 / max(1, len(rows))
    for i, (r, label) in enumerate(zip(rows, labels, strict=True)):
        vals = [float(r["metrics"].get(m, 0.0) or 0.0) for m in cols]
        xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(cols))]
        ax_q.bar(xs, vals, width=width, label=label)
    ax_q.set_xticks(range(len(cols)))
    ax_q.set_xticklabels(cols, rotation=30, ha="right")
    ax_q.set_ylim(0, 1)
    ax_q.set_ylabel("score")
    ax_q.set_title("quality")
    secs = [float((r.get("cost") or {}).get("seconds_per_query", 0.0) or 0.0) for r in rows]
    ax_t.bar(range(len(rows)), [max(s, 1e-6) for s in secs], color="tab:gray")
    ax_t.set_xticks(range(len(rows)))
    ax_t.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("seconds / query")
    ax_t.set_title("cost")
    n_legend_rows = -(-len(rows) // 4)
    fig.legend(loc="lower center", ncol=min(4, len(rows)), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05 * n_legend_rows, 1, 1))
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
