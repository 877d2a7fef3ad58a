"""An ``advise`` report drawn on the measured payoff curves: where each judge lands, with its interval.

* :func:`advice_marks` -- per judge, the point it lands on one method's curve: the AUC the method reads (LATTICE: the
  lower of documents and summaries), that AUC's 95 % interval (widened, for a label-free report, by the validation's
  error), the expected quality read off the curve, and the verdict.
* :func:`plot_advice` -- one panel per method (matplotlib): the oracle points of
  :mod:`retrievekit.core.eval.payoff_curves`, the first stage's quality (dashed), the threshold (dotted) and each
  judge's point with its interval as a horizontal bar.

Examples:
    >>> a = {"auc": 0.95, "low": 0.9, "high": 0.99, "pairs": 80}
    >>> report = {"mode": "labelled", "auc": {"documents": a, "summaries": dict(a, auc=0.7, low=0.6, high=0.8)}}
    >>> m = advice_marks({"my judge": report}, "lattice")[0]
    >>> m.kind, m.auc, (m.low, m.high), round(m.expected, 3), m.pays_off
    ('summaries', 0.7, (0.6, 0.8), 0.075, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.figures import pyplot, save_figure
from retrievekit.core.eval.payoff_curves import CURVES, PayoffCurve, curve, expected_quality, pays_off

__all__ = ["AdviceMark", "advice_marks", "plot_advice"]


@dataclass(frozen=True)
class AdviceMark:
    """One judge on one method's curve.

    Attributes:
        label: the judge's name in the plot.
        kind: the AUC the method reads (``documents`` or ``summaries``).
        auc, low, high: that AUC and its 95 % interval (widened when the report is label-free).
        expected: the curve's quality at ``auc`` (None for a curve without points).
        pays_off: the verdict (None for a label-free report: it gives none).

    Examples:
        >>> AdviceMark("j", "documents", 0.9, 0.8, 1.0, 0.5, True).high
        1.0
    """

    label: str
    kind: str
    auc: float
    low: float
    high: float
    expected: float | None
    pays_off: bool | None


def _mark(label: str, report: Mapping[str, Any], c: PayoffCurve) -> AdviceMark:
    kinds = ["documents"] if c.auc_on == "documents" else ["documents", "summaries"]
    known = [k for k in kinds if report["auc"][k].get("auc") is not None]
    if not known:
        raise InvalidInputError(f"the advise report of {label!r} has no AUC on {' or '.join(kinds)}")
    kind = min(known, key=lambda k: (report["auc"][k]["auc"], k))
    a = report["auc"][kind]
    low, high = (report.get("widened") or {}).get(kind) or (a["low"], a["high"])
    verdict = pays_off(c, a["auc"]) if report.get("mode") == "labelled" else None
    return AdviceMark(label, kind, a["auc"], low, high, expected_quality(c, a["auc"]), verdict)


def advice_marks(reports: Mapping[str, Mapping[str, Any]], method: str) -> list[AdviceMark]:
    """Where each report's judge lands on ``method``'s curve, in the order given (``reports``: label -> report).

    Examples:
        >>> a = {"auc": 0.62, "low": 0.5, "high": 0.74, "pairs": 80}
        >>> free = {"mode": "label-free", "auc": {"documents": a, "summaries": a}, "widened": {"documents": [0.26, 0.98]}}
        >>> m = advice_marks({"label-free": free}, "oneshot")[0]
        >>> (m.low, m.high), m.pays_off
        ((0.26, 0.98), None)
    """
    c = curve(method)
    return [_mark(label, report, c) for label, report in reports.items()]


def plot_advice(
    reports: Mapping[str, Mapping[str, Any]], out_png: str | Path, methods: Sequence[str] | None = None
) -> Path:
    """One panel per method (default: those with measured points): its curve, its first stage, its threshold, and
    each judge's point with its interval. Needs matplotlib (``pip install "retrievekit[bench]"``); returns the PNG.

    Examples:
        >>> import pathlib, tempfile
        >>> a = {"auc": 0.95, "low": 0.9, "high": 0.99, "pairs": 80}
        >>> r = {"mode": "labelled", "auc": {"documents": a, "summaries": a}}
        >>> plot_advice({"j": r}, pathlib.Path(tempfile.mkdtemp()) / "advice.png", ["lattice"]).name
        'advice.png'
    """
    names = list(methods) if methods is not None else [c.method for c in CURVES if c.points]
    if not names or not reports:
        raise InvalidInputError("plot_advice needs at least one report and one method")
    panels = [(curve(name), advice_marks(reports, name)) for name in names]
    plt = pyplot("for plot_advice")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    for ax, (c, marks) in zip(axes[0], panels, strict=True):
        _draw(ax, c, marks)
    return save_figure(fig, out_png, dpi=110)


def _draw(ax: Any, c: PayoffCurve, marks: Sequence[AdviceMark]) -> None:
    if c.points:
        xs, ys = zip(*c.points, strict=True)
        ax.plot(xs, ys, marker="o", color="0.35", label="measured (gold-label judges)")
    if c.first_stage_quality is not None:
        ax.axhline(c.first_stage_quality, color="0.45", linestyle="--", linewidth=1, label=c.first_stage)
    if c.threshold is not None and c.threshold > 0:
        ax.axvline(c.threshold, color="tab:green", linestyle=":", label=f"pays off from {c.threshold:.2f}")
    else:  # no line to draw: the legend says it
        ax.plot([], [], " ", label="pays off from any AUC" if c.threshold is not None else "never pays off")
    for i, m in enumerate(marks):
        y = m.expected if m.expected is not None else 0.0
        color = f"C{i}"
        ax.errorbar([m.auc], [y], xerr=[[m.auc - m.low], [m.high - m.auc]], fmt="*", ms=13, capsize=4, color=color)
        left = m.auc > 0.75  # the label on the side with room
        text = f"{m.label} ({m.kind} {m.auc:.2f})"
        where = {"xytext": (-6 if left else 6, 7), "ha": "right" if left else "left"}
        ax.annotate(text, (m.auc, y), textcoords="offset points", fontsize=8, color=color, **where)
    ax.set_title(f"{c.method}: {c.dataset}", fontsize=9)
    ax.set_xlabel("judge ROC AUC")
    ax.set_ylabel(c.metric)
    ax.set_xlim(0.4, 1.03)
    ax.margins(y=0.12)  # room for the judges' labels
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)  # off the data
