"""ARM aggregation math: 0.5 * mean log-prob + 0.5 * softmax(votes), thresholds, ties."""

from __future__ import annotations

import math

import pytest

from retrievekit.core.arm.aggregate import aggregate, softmax
from retrievekit.core.arm.base import fuse_scores, max_normalise, top_k


def test_softmax_is_stable_and_normalised():
    out = softmax([1000.0, 1000.0, 999.0])
    assert sum(out) == pytest.approx(1.0)
    assert out[0] == pytest.approx(out[1]) and out[2] < out[0]


def test_aggregate_formula():
    verdicts = [{"a": -0.2, "b": -1.0}, {"a": -0.4, "c": -0.1}, {"a": -0.3}]
    out = {o.id: o for o in aggregate(verdicts)}
    z = math.exp(3) + 2 * math.exp(1)
    assert out["a"].votes == 3 and out["a"].mean_logprob == pytest.approx(-0.3)
    assert out["a"].score == pytest.approx(0.5 * -0.3 + 0.5 * math.exp(3) / z)
    assert out["c"].score == pytest.approx(0.5 * -0.1 + 0.5 * math.exp(1) / z)
    assert [o.id for o in aggregate(verdicts)] == ["a", "c", "b"]


def test_threshold_weight_and_min_votes():
    verdicts = [{"a": -0.2, "b": -1.0}, {"a": -0.4}]
    assert [o.id for o in aggregate(verdicts, threshold=0.0)] == ["a"]
    only_votes = aggregate(verdicts, logprob_weight=0.0)
    assert only_votes[0].score == pytest.approx(softmax([2.0, 1.0])[0])
    assert [o.id for o in aggregate(verdicts, min_votes=2)] == ["a"]
    assert aggregate([]) == [] and aggregate([{}]) == []


def test_ties_break_by_votes_then_tiebreak_then_id():
    out = aggregate([{"x": 0.0, "y": 0.0, "z": 0.0}], tiebreak={"z": 0.9, "y": 0.1})
    assert [o.id for o in out] == ["z", "y", "x"]


def test_base_score_fusion():
    assert max_normalise({"a": 4.0, "b": 2.0}) == {"a": 1.0, "b": 0.5}
    fused = fuse_scores({"a": 0.5, "b": 0.25}, {"b": 3.0, "c": 6.0})
    assert fused["a"] == pytest.approx(0.9)
    assert fused["b"] == pytest.approx(0.9 * 0.5 + 0.1 * 0.5)
    assert fused["c"] == pytest.approx(0.1)
    assert top_k(fused, 2) == ["a", "b"]
