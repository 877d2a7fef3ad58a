"""The numbers and the words of an ``advise`` report: the AUC with its interval, chance, the methods' verdicts.

* :func:`auc_interval` -- the pooled ROC AUC of one kind (documents or summaries) with its 95 % bootstrap interval
  over questions.
* :func:`chance_kinds` -- the kinds whose interval holds 0.5: the judge is no better than chance there, and the
  report says so before anything else.
* :func:`methods_rows` -- one row per measured curve: the verdict (labelled mode only), the expected quality, the
  cost per query.
* :func:`render_advice` -- the report as text. A label-free report gives no per-method verdict: its estimate missed
  the labelled truth by up to :data:`LABEL_FREE_ERROR` in validation (docs/advise.md), so it prints the interval
  widened by that error, and why.

Examples:
    >>> a = auc_interval([{"doc_scores": [0.9, 0.1], "doc_labels": [1, 0]}] * 3, "doc", seed=0)
    >>> a["auc"], a["low"], a["high"], a["pairs"]
    (1.0, 1.0, 1.0, 6)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.eval.judge_accuracy import roc_auc
from retrievekit.core.eval.payoff_curves import CURVES, expected_quality, pays_off

__all__ = [
    "LABEL_FREE_CAVEAT",
    "LABEL_FREE_ERROR",
    "auc_interval",
    "chance_kinds",
    "methods_rows",
    "render_advice",
    "style_words",
]

LABEL_FREE_ERROR = {"documents": 0.237, "summaries": 0.215}
"""The largest |label-free estimate - labelled truth| per kind over the 30 validated (judge, dataset, kind) pairs
(docs/advise.md, "Validation"): a label-free interval is widened by it, so every validated truth lies inside."""

LABEL_FREE_CAVEAT = (
    "caution: a label-free estimate is not the advice to act on, and this report gives no per-method verdict. "
    "Questions written from one document are easier than real ones: in validation the label-free estimate missed the "
    "AUC measured with labels by up to 0.24 and by more than 0.05 on 24 of 30 pairs (docs/advise.md, 'Validation'), "
    "so the intervals below are widened by that error. Label 20 or more questions (retrievekit label) and run with "
    "--qrels."
)
"""The line a label-free report starts with: the labelled mode is the advice."""

KINDS = ("documents", "summaries")


def auc_interval(rows: Sequence[Mapping[str, Any]], kind: str, seed: int) -> dict[str, Any]:
    """``{"auc", "low", "high", "pairs"}`` of ``kind`` (``"doc"`` or ``"summary"``) pooled over ``rows`` (one per
    question), the interval from 1000 bootstrap draws of the questions (seeded).

    Examples:
        >>> auc_interval([], "doc", seed=0)
        {'auc': None, 'low': None, 'high': None, 'pairs': 0}
    """

    def pooled(chosen: Sequence[Mapping[str, Any]]) -> float | None:
        scores = [s for r in chosen for s in r[f"{kind}_scores"]]
        return roc_auc(scores, [y for r in chosen for y in r[f"{kind}_labels"]])

    auc = pooled(rows)
    rng = np.random.default_rng(seed)
    boots = [pooled([rows[i] for i in rng.integers(0, len(rows), len(rows))]) for _ in range(1000)] if rows else []
    got = sorted(b for b in boots if b is not None)
    lo, hi = (got[int(0.025 * len(got))], got[int(0.975 * len(got)) - 1]) if got else (None, None)
    return {"auc": auc, "low": lo, "high": hi, "pairs": sum(len(r[f"{kind}_scores"]) for r in rows)}


def chance_kinds(auc: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The kinds whose 95 % interval holds 0.5 (the judge is no better than chance on them).

    Examples:
        >>> chance_kinds({"documents": {"low": 0.41, "high": 0.56}, "summaries": {"low": 0.6, "high": 0.8}})
        ['documents']
    """
    out = []
    for kind in KINDS:
        low, high = auc[kind].get("low"), auc[kind].get("high")
        if low is not None and high is not None and low <= 0.5 <= high:
            out.append(kind)
    return out


def methods_rows(
    doc_auc: float | None, summary_auc: float | None, cost: Mapping[str, float], *, verdict: bool = True
) -> list[dict[str, Any]]:
    """One row per measured curve; ``pays_off`` is None without a verdict (the label-free mode).

    Examples:
        >>> rows = methods_rows(0.95, 0.7, {"calls": 1.0, "tokens": 100.0, "seconds": 0.1})
        >>> [(r["method"], r["pays_off"]) for r in rows][:2]
        [('lattice', False), ('arm', True)]
        >>> methods_rows(0.95, 0.7, {"calls": 1.0, "tokens": 1.0, "seconds": 1.0}, verdict=False)[0]["pays_off"] is None
        True
    """
    rows = []
    for c in CURVES:
        aucs = [doc_auc] if c.auc_on == "documents" else [doc_auc, summary_auc]
        known = [a for a in aucs if a is not None]
        auc = min(known) if known else None
        rows.append(
            {
                "method": c.method,
                "measured_on": c.dataset,
                "metric": c.metric,
                "judge_auc_used": auc,
                "pays_off": bool(auc is not None and pays_off(c, auc)) if verdict else None,
                "threshold": c.threshold,
                "expected": expected_quality(c, auc) if auc is not None else None,
                "first_stage": c.first_stage,
                "first_stage_quality": c.first_stage_quality,
                "calls_per_query": c.items_per_query * cost["calls"],
                "tokens_per_query": c.items_per_query * cost["tokens"],
                "seconds_per_query": c.items_per_query * cost["seconds"],
                "note": c.note,
            }
        )
    return rows


def _threshold(value: float | None) -> str:
    return "no AUC" if value is None else ("any AUC" if value <= 0 else f"{value:.2f}")


def _fmt(x: Any, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def _auc_lines(report: Mapping[str, Any]) -> list[str]:
    lines = []
    for kind in KINDS:
        a = report["auc"][kind]
        line = f"judge AUC on {kind}: {_fmt(a['auc'])} (95% interval {_fmt(a['low'])}-{_fmt(a['high'])}, "
        line += f"{a['pairs']} pairs)"
        wide = report.get("widened", {}).get(kind)
        if wide:
            line += f"; widened by the validation's error +-{LABEL_FREE_ERROR[kind]:.2f}: {wide[0]:.2f}-{wide[1]:.2f}"
        lines.append(line)
    return lines


def _method_line(m: Mapping[str, Any]) -> str:
    if m["pays_off"] is None:
        head = f"- {m['method']}: no verdict (label-free) at AUC {_fmt(m['judge_auc_used'])}; it pays off from "
        head += f"{_threshold(m['threshold'])}"
    else:
        verdict = "pays off" if m["pays_off"] else "does not pay off"
        head = f"- {m['method']}: {verdict} at AUC {_fmt(m['judge_auc_used'])} (from {_threshold(m['threshold'])})"
    return (
        f"{head}; expected {m['metric']} {_fmt(m['expected'])} vs {m['first_stage']} "
        f"{_fmt(m['first_stage_quality'])} on {m['measured_on']}; per query {m['calls_per_query']:.0f} calls, "
        f"{m['tokens_per_query']:.0f} tokens, {m['seconds_per_query']:.1f} s. {m['note']}"
    )


def render_advice(report: Mapping[str, Any]) -> str:
    """The report as text: "no better than chance" first when it applies, the AUC estimates, one line per method.

    Examples:
        >>> r = {"mode": "labelled", "judge": "j", "questions": 20, "llm_calls": 160, "max_calls": 200,
        ...      "auc": {"documents": {"auc": 0.9, "low": 0.8, "high": 0.95, "pairs": 80},
        ...              "summaries": {"auc": 0.52, "low": 0.45, "high": 0.6, "pairs": 80}},
        ...      "cost_per_pair": {"calls": 1.0, "tokens": 300.0, "seconds": 0.5}, "methods": []}
        >>> print(render_advice(r).splitlines()[0][:62])
        no better than chance: j's 95% interval holds 0.5 on summaries
        >>> print(render_advice(r).splitlines()[2])
        judge AUC on documents: 0.900 (95% interval 0.800-0.950, 80 pairs)
    """
    lines = []
    chance = chance_kinds(report["auc"])
    if chance:
        lines.append(
            f"no better than chance: {report['judge']}'s 95% interval holds 0.5 on {' and '.join(chance)}: its "
            "scores tell relevant from irrelevant texts no better than a coin there; no judged method should rest "
            "on it (a larger model, or a trained judge)."
        )
    head = f"{report['judge']}: {report['mode']}, {report['questions']} questions, {report['llm_calls']} LLM calls"
    if report.get("left_out"):
        head += f"; {report['left_out']} questions left out (the judge scored them NaN or infinite)"
    if report.get("no_negatives"):
        head += f"; {report['no_negatives']} questions left out (the first stage found no hard negative for them)"
    lines.append(head)
    if report["mode"] == "label-free":
        lines.append(LABEL_FREE_CAVEAT)
    if report.get("style"):
        style = report["style"]
        line = f"imitating your questions ({style_words(style['yours'])})"
        if style.get("written"):
            line += f"; the written ones: {style_words(style['written'])}"
        lines.append(line)
    lines += _auc_lines(report)
    c = report["cost_per_pair"]
    lines.append(f"one judged pair: {c['calls']:.2f} calls, {c['tokens']:.0f} tokens, {c['seconds']:.2f} s")
    lines += [_method_line(m) for m in report["methods"]]
    return "\n".join(lines)


def style_words(measures: Mapping[str, Any]) -> str:
    """A question style's measures in words (the ``yours`` or ``written`` part of a report's ``style``).

    Examples:
        >>> style_words({"words": 9, "question_mark": 0.96, "overlap": 0.38})
        "9 words, 96 % end with '?', 38 % of their terms in their document"
    """
    return (
        f"{measures['words']:g} words, {100 * measures['question_mark']:.0f} % end with '?', "
        f"{100 * measures['overlap']:.0f} % of their terms in their document"
    )
