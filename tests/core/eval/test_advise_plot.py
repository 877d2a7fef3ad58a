"""Issue #64 item 5: an advise report placed on the payoff curves (the notebooks draw their judges with it)."""

from __future__ import annotations

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.advise_plot import advice_marks, plot_advice
from retrievekit.core.eval.payoff_curves import curve, expected_quality


def _report(doc, summ, mode="labelled", widened=None):
    def a(x):
        return {"auc": x, "low": x - 0.05, "high": min(1.0, x + 0.05), "pairs": 80}

    return {"mode": mode, "auc": {"documents": a(doc), "summaries": a(summ)}, "widened": widened or {}}


def test_each_method_reads_its_own_auc_and_interval():
    reports = {"strong": _report(0.97, 0.93), "weak": _report(0.74, 0.65)}
    lattice = advice_marks(reports, "lattice")  # LATTICE reads the lower of the two AUCs
    assert [(m.label, m.kind, m.auc, m.pays_off) for m in lattice] == [
        ("strong", "summaries", 0.93, True),
        ("weak", "summaries", 0.65, False),
    ]
    assert (lattice[1].low, lattice[1].high) == pytest.approx((0.60, 0.70))
    assert lattice[0].expected == pytest.approx(expected_quality(curve("lattice"), 0.93))
    oneshot = advice_marks(reports, "oneshot")  # One-SHOT reads documents, and pays off from any AUC
    assert [(m.kind, m.auc, m.pays_off) for m in oneshot] == [("documents", 0.97, True), ("documents", 0.74, True)]


def test_a_label_free_report_is_drawn_with_its_widened_interval_and_no_verdict():
    free = _report(0.9, 0.95, mode="label-free", widened={"documents": [0.66, 1.0], "summaries": [0.7, 1.0]})
    (m,) = advice_marks({"label-free": free}, "arm")
    assert (m.low, m.high, m.pays_off) == (0.66, 1.0, None)


def test_the_plot_is_a_png_and_bad_input_is_refused(tmp_path):
    png = plot_advice({"strong": _report(0.97, 0.93)}, tmp_path / "sub" / "advice.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    with pytest.raises(InvalidInputError, match="no payoff curve for 'bm25'"):
        plot_advice({"strong": _report(0.97, 0.93)}, tmp_path / "x.png", ["bm25"])
    empty = {"mode": "labelled", "auc": {"documents": {"auc": None}, "summaries": {"auc": None}}}
    with pytest.raises(InvalidInputError, match="has no AUC on documents or summaries"):
        plot_advice({"broken": empty}, tmp_path / "x.png", ["lattice"])
    with pytest.raises(InvalidInputError, match="at least one report"):
        plot_advice({}, tmp_path / "x.png")
