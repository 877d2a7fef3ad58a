"""One-SHOT selector: bad input (tiny budget, no scores, duplicates, empty pool), relevance order, the bench method."""

from __future__ import annotations

import math

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.oneshot import OneShotConfig, OneShotSelector, make_token_counter
from retrievekit.core.oneshot.method import OneShotRetriever, build_oneshot
from retrievekit.core.oneshot.tokens import RegexTokenCounter, TiktokenCounter
from retrievekit.core.options import config_from_options
from retrievekit.core.registry import MethodContext, available_methods
from retrievekit.core.types import Passage, ScoredHit


def words(pid: str, n: int) -> Passage:
    """A passage of exactly ``n`` regex tokens (one short letters-only word repeated), distinct per id."""
    word = "x" + "".join(chr(97 + int(c)) if c.isdigit() else c for c in pid)
    return Passage(id=pid, text=" ".join([word] * n))


def test_empty_pool():
    res = OneShotSelector().select("q", [])
    assert res.chunks == [] and res.tokens_used == 0
    assert res.trace.events[0].kind == "oneshot.empty"


def test_budget_below_smallest_chunk():
    pool = [(words("a", 20), 1.0), (words("b", 30), 0.5)]
    res = OneShotSelector(OneShotConfig(budget=10)).select("q", pool)
    assert res.chunks == []
    ev = [e for e in res.trace.events if e.kind == "oneshot.budget"]
    assert ev and "below the smallest candidate (20 tokens)" in ev[0].message
    with pytest.raises(InvalidInputError, match="below the smallest"):
        OneShotSelector(OneShotConfig(budget=10, if_nothing_fits="raise")).select("q", pool)


@pytest.mark.parametrize("budget", [0, -5, 2.5, True, "100"])
def test_invalid_budgets(budget):
    with pytest.raises(InvalidInputError):
        OneShotConfig(budget=budget)  # type: ignore[arg-type]


def test_nodes_without_scores_get_rank_based_relevance():
    pool = [words("a", 5), (words("b", 5), None), (words("c", 5), float("nan"))]
    res = OneShotSelector(OneShotConfig(budget=10)).select("q", pool)
    assert res.ids == ["a", "b"]
    assert [c.relevance for c in res.chunks] == [1.0, 0.5]
    assert any(e.kind == "oneshot.scores" and "3 of 3" in e.message for e in res.trace.events)


def test_negative_and_mixed_scale_scores():
    pool = [(words("a", 5), -0.2), (words("b", 5), -0.9), (words("c", 5), -0.5)]
    res = OneShotSelector(OneShotConfig(budget=10)).select("q", pool)
    assert res.ids == ["a", "c"]
    assert all(c.relevance > 0 for c in res.chunks)
    raw = OneShotSelector(OneShotConfig(budget=100, score_normalization="raw")).select("q", pool)
    assert raw.ids == []  # raw non-positive scores can never improve the objective


def test_duplicate_nodes_are_merged_and_noted():
    a = words("a", 5)
    pool = [(a, 0.9), (a, 0.1), (Passage(id="a2", text=a.text), 0.8), (words("b", 5), 0.5)]
    res = OneShotSelector(OneShotConfig(budget=100)).select("q", pool)
    assert res.ids == ["a", "b"]
    assert ("a", "duplicate id") in res.dropped and ("a2", "same text as a") in res.dropped
    assert any(e.kind == "oneshot.dedupe" for e in res.trace.events)


def test_selection_is_in_relevance_order_and_never_over_budget():
    pool = [(words(f"p{i}", 3 + (i * 7) % 11), 1.0 / (1 + i)) for i in range(40)]
    for budget in (1, 5, 17, 60, 200, 10_000):
        for k_max in (None, 3):
            res = OneShotSelector(OneShotConfig(budget=budget, k_max=k_max)).select("q", pool)
            assert res.tokens_used <= budget
            rels = [c.relevance for c in res.chunks]
            assert rels == sorted(rels, reverse=True)
            if k_max:
                assert len(res.chunks) <= k_max


def test_min_relevance_and_scoredhit_input():
    hits = [ScoredHit(words("a", 3), 10.0, 0), ScoredHit(words("b", 3), 1.0, 1), ScoredHit(words("c", 3), 0.0, 2)]
    res = OneShotSelector(OneShotConfig(budget=100, min_relevance=0.6)).select("q", hits)
    assert res.ids == ["a"]


def test_bad_candidates():
    with pytest.raises(InvalidInputError):
        OneShotSelector().select("q", [(words("a", 2), "high")])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        OneShotSelector().select("q", ["just a string"])  # type: ignore[list-item]


def test_token_counters():
    assert make_token_counter("regex")("") == 0
    assert isinstance(make_token_counter(), RegexTokenCounter)
    tk = TiktokenCounter()  # offline: llama-index-core bundles cl100k_base
    assert tk("hello world") == 2
    sel = OneShotSelector(OneShotConfig(budget=5, per_chunk_overhead=2), token_counter=len)
    assert sel.tokens_of(Passage(id="a", text="abc")) == 5
    with pytest.raises(InvalidInputError):
        make_token_counter("bpe-of-my-dreams")


def test_oneshot_retriever_returns_a_set_in_relevance_order(small_corpus):
    r = OneShotRetriever(BM25Index.build(small_corpus), OneShotSelector(OneShotConfig(budget=30)), pool=6)
    hits = r.search("programming language")
    assert r.returns_set and hits and [h.rank for h in hits] == list(range(len(hits)))
    assert sum(r.selector.tokens_of(h.obj) for h in hits) <= 30
    assert all(not math.isnan(h.score) for h in hits)


def test_bench_method_registered_and_runs(small_corpus, tmp_path):
    assert "oneshot" in available_methods()
    ds = Dataset("toy", "dev", small_corpus, [Query("q1", "Which fruit is yellow?")], {"q1": {"banana": 1}})
    out = run_benchmark(ds, "oneshot", k=10, work_dir=tmp_path, options={"budget": 40, "pool": 5}, progress=False)
    assert out["metrics"]["recall@10"] == 1.0
    assert "set_recall" in out["metrics"]
    with pytest.raises(InvalidInputError):
        run_benchmark(ds, "oneshot", options={"crop": True}, progress=False)


def test_with_overrides_is_the_settings_rule():
    base = OneShotConfig(budget=200, k_max=3, filter=True)
    cfg = base.with_overrides(budget=1000, k_max=None)
    assert (cfg.budget, cfg.k_max, cfg.filter) == (1000, None, True)
    assert base.with_overrides() is base
    with pytest.raises(InvalidInputError, match="unknown OneShotConfig setting"):
        base.with_overrides(budgt=10)
    with pytest.raises(InvalidInputError, match="budget must be a positive int"):
        base.with_overrides(budget=0)  # overrides are validated like any config


def test_options_to_config_derives_keys_and_coercion_from_the_dataclass():
    cfg = config_from_options(
        OneShotConfig,
        {
            "budget": "300",
            "k_max": "null",
            "filter": "yes",
            "crop_refill": "false",
            "dedupe_text": 0,
            "relevance_floor": "0.2",
            "score_normalization": "minmax",
            "crop_judge_threshold": 1,
        },
    )
    assert (cfg.budget, cfg.k_max, cfg.filter, cfg.crop_refill, cfg.dedupe_text) == (300, None, True, False, False)
    assert (cfg.relevance_floor, cfg.score_normalization, cfg.crop_judge_threshold) == (0.2, "minmax", 1)
    assert config_from_options(OneShotConfig, {}) == OneShotConfig()
    with pytest.raises(InvalidInputError, match="unknown OneShotConfig option"):
        config_from_options(OneShotConfig, {"pool": 5})
    with pytest.raises(InvalidInputError, match="option filter must be true/false, got 'maybe'"):
        config_from_options(OneShotConfig, {"filter": "maybe"})
    with pytest.raises(InvalidInputError, match="option budget must be an int, got '2k'"):
        config_from_options(OneShotConfig, {"budget": "2k"})
    with pytest.raises(InvalidInputError, match="option min_relevance must be a number"):
        config_from_options(OneShotConfig, {"min_relevance": "low"})
    with pytest.raises(InvalidInputError, match="solver must be auto"):
        config_from_options(OneShotConfig, {"solver": "magic"})


def test_bench_method_takes_every_config_field_as_an_option(small_corpus):
    r = build_oneshot(
        MethodContext(corpus=small_corpus, options={"budget": 40, "pool": 5, "min_relevance": "0.1", "crop": "no"})
    )
    assert r.selector.config == OneShotConfig(budget=40, min_relevance=0.1)
    assert r.pool == 5
