"""Retrieval metrics: hand-computed values and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.metrics import (
    dcg_at_k,
    evaluate,
    evaluate_sets,
    evaluate_table_recall,
    hit_at_k,
    mrr_at_k,
    ndcg_at_k,
    perfect_recall_at_k,
    precision_at_k,
    recall_at_k,
    set_precision_recall_f1,
)

# Graded example (trec_eval ndcg_cut convention: linear gain, log2(rank+1) discount)
QRELS = {"d1": 3, "d2": 2, "d3": 3, "d4": 0, "d5": 1}
RANKED = ["d1", "d2", "d3", "d4", "x"]


def test_dcg_hand_computed() -> None:
    # 3/log2(2) + 2/log2(3) + 3/log2(4) + 0 = 3 + 1.261860 + 1.5
    assert dcg_at_k(RANKED, QRELS, 4) == pytest.approx(5.761860, abs=1e-6)


def test_ndcg_hand_computed() -> None:
    # ideal grades 3,3,2,1 -> 3 + 3/1.584963 + 2/2 + 1/2.321928 = 6.323466
    assert ndcg_at_k(RANKED, QRELS, 4) == pytest.approx(5.761860 / 6.323466, abs=1e-6)
    assert ndcg_at_k(RANKED, QRELS, 4) == pytest.approx(0.911187, abs=1e-5)
    # @1: the top doc has the maximum grade
    assert ndcg_at_k(RANKED, QRELS, 1) == 1.0
    # binary case: one relevant doc at rank 2 -> 1/log2(3)
    assert ndcg_at_k(["x", "a"], {"a": 1}, 10) == pytest.approx(1 / math.log2(3))


def test_zero_and_negative_grades_are_not_relevant() -> None:
    assert recall_at_k(["d4"], {"d4": 0, "a": 1}, 1) == 0.0
    assert hit_at_k(["n"], {"n": -1, "a": 1}, 1) == 0.0
    assert ndcg_at_k(["a"], {"n": -1, "a": 1}, 5) == 1.0


def test_recall_mrr_hit_perfect_precision() -> None:
    q = {"a": 1, "b": 1, "c": 1}
    ranked = ["x", "a", "y", "b", "c"]
    assert recall_at_k(ranked, q, 1) == 0.0
    assert recall_at_k(ranked, q, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, q, 4) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, q, 100) == 1.0
    assert mrr_at_k(ranked, q, 1) == 0.0
    assert mrr_at_k(ranked, q, 5) == 0.5
    assert hit_at_k(ranked, q, 1) == 0.0 and hit_at_k(ranked, q, 2) == 1.0
    assert perfect_recall_at_k(ranked, q, 4) == 0.0 and perfect_recall_at_k(ranked, q, 5) == 1.0
    assert precision_at_k(ranked, q, 5) == pytest.approx(3 / 5)


def test_duplicates_count_once() -> None:
    assert recall_at_k(["a", "a", "a"], {"a": 1, "b": 1}, 3) == 0.5
    assert dcg_at_k(["a", "a"], {"a": 1}, 2) == 1.0
    # the duplicate does not take a rank slot
    assert mrr_at_k(["x", "x", "a"], {"a": 1}, 2) == 0.5


def test_empty_ranking_and_no_relevant() -> None:
    assert ndcg_at_k([], {"a": 1}, 10) == 0.0
    assert recall_at_k(["a"], {}, 10) == 0.0
    assert perfect_recall_at_k(["a"], {}, 10) == 0.0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_k(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        ndcg_at_k(["a"], {"a": 1}, bad)  # type: ignore[arg-type]


def test_set_metrics() -> None:
    assert set_precision_recall_f1({"a", "x"}, {"a": 1, "b": 1}) == (0.5, 0.5, 0.5)
    assert set_precision_recall_f1(set(), {"a": 1}) == (0.0, 0.0, 0.0)
    p, r, f = set_precision_recall_f1(["a", "b", "x", "y"], {"a": 1, "b": 1})
    assert (p, r) == (0.5, 1.0) and f == pytest.approx(2 / 3)
    m = evaluate_sets({"q1": ["a"], "q2": ["z"]}, {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {}})
    assert m == {"set_precision": 0.5, "set_recall": 0.5, "set_f1": 0.5, "set_perfect_recall": 0.5, "set_size": 1.0}
    # perfect recall needs every relevant object in the set, not most of them
    m = evaluate_sets({"q1": ["a", "b", "x"], "q2": ["c"]}, {"q1": {"a": 1, "b": 1}, "q2": {"c": 1, "d": 1}})
    assert m["set_perfect_recall"] == 0.5 and m["set_size"] == 2.0 and m["set_recall"] == 0.75


def test_table_recall_counts_the_gold_table_at_each_cut_off() -> None:
    run = {"q1": ["t1", "p"], "q2": ["p", "p", "t2"], "q3": ["t9"]}
    m = evaluate_table_recall(run, {"q1": "t1", "q2": "t2", "q3": "t3", "q4": "t4"}, ks=(1, 2, 3))
    # duplicates count once (q2's "p"), a query absent from the run counts 0 (q4)
    assert m == {"table_recall@1": 0.25, "table_recall@2": 0.5, "table_recall@3": 0.5}
    assert evaluate_table_recall({}, {}) == {"table_recall@1": 0.0, "table_recall@5": 0.0, "table_recall@10": 0.0}
    with pytest.raises(InvalidInputError):
        evaluate_table_recall(run, {"q1": "t1"}, ks=(0,))


def test_evaluate_aggregate_beir_conventions() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}, "q_unjudged": {}, "q_zero": {"z": 0}}
    run = {"q1": ["a", "x"], "q2": ["x", "c"], "q_unjudged": ["a"], "q_zero": ["z"], "not_in_qrels": ["a"]}
    m = evaluate(run, qrels, ks=(1, 2, 10))
    # averaged over q1, q2 only (BEIR skips queries without relevant docs)
    assert m["recall@1"] == pytest.approx((1 + 0) / 2)
    assert m["recall@2"] == pytest.approx((1 + 0.5) / 2)
    assert m["mrr@2"] == pytest.approx((1 + 0.5) / 2)
    assert m["hit@1"] == 0.5
    assert m["perfect_recall@10"] == 0.5
    ndcg_q2 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert m["ndcg@10"] == pytest.approx((1 + ndcg_q2) / 2)
    assert {"ndcg@1", "recall@10", "precision@2", "mrr@1", "hit@10", "perfect_recall@1"} <= set(m)


def test_evaluate_missing_run_counts_zero_and_default_keys() -> None:
    m = evaluate({}, {"q": {"a": 1}})
    assert m["ndcg@10"] == 0.0 and m["recall@100"] == 0.0
    assert {"ndcg@10", "recall@100", "mrr@5", "hit@5", "perfect_recall@10", "recall@20", "ndcg@1"} <= set(m)
    assert evaluate({}, {})["ndcg@10"] == 0.0
    with pytest.raises(InvalidInputError):
        evaluate({}, {}, ks=())


ids = st.sampled_from([f"d{i}" for i in range(12)])
qrels_st = st.dictionaries(ids, st.integers(min_value=-1, max_value=3), max_size=8)
ranked_st = st.lists(ids, max_size=15)
k_st = st.integers(min_value=1, max_value=20)
FNS = [ndcg_at_k, recall_at_k, precision_at_k, mrr_at_k, hit_at_k, perfect_recall_at_k]


@settings(max_examples=200, deadline=None)
@given(ranked=ranked_st, qrels=qrels_st, k=k_st)
def test_metrics_are_in_unit_interval(ranked: list[str], qrels: dict[str, int], k: int) -> None:
    for fn in FNS:
        v = fn(ranked, qrels, k)
        assert 0.0 <= v <= 1.0 + 1e-12, fn.__name__


@settings(max_examples=200, deadline=None)
@given(qrels=qrels_st, noise=st.lists(st.sampled_from(["x1", "x2", "x3"]), max_size=3))
def test_perfect_ranking_scores_one(qrels: dict[str, int], noise: list[str]) -> None:
    rel = {d: g for d, g in qrels.items() if g > 0}
    if not rel:
        return
    ranked = sorted(rel, key=lambda d: -rel[d]) + noise
    for k in (len(rel), len(rel) + 3, 100):
        assert ndcg_at_k(ranked, qrels, k) == pytest.approx(1.0)
        assert recall_at_k(ranked, qrels, k) == 1.0
        assert perfect_recall_at_k(ranked, qrels, k) == 1.0
        assert mrr_at_k(ranked, qrels, k) == 1.0
    # nDCG@k is 1 for every k on an ideal ranking
    for k in range(1, len(rel) + 1):
        assert ndcg_at_k(ranked, qrels, k) == pytest.approx(1.0)
