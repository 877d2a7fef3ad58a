"""One-SHOT knapsack: optimality against brute force (property-based), budget, K_max, deterministic ties."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.oneshot.knapsack import KnapsackItem, knapsack_dp, knapsack_greedy, solve_knapsack


def brute_force(items: list[KnapsackItem], budget: int, k_max: int | None) -> float:
    best = 0.0
    for r in range(len(items) + 1):
        if k_max is not None and r > k_max:
            break
        for combo in itertools.combinations(items, r):
            if sum(i.tokens for i in combo) <= budget:
                best = max(best, sum(i.relevance for i in combo if i.relevance > 0))
    return best


item_lists = st.lists(
    st.tuples(
        st.one_of(st.floats(-1.0, 3.0, allow_nan=False), st.sampled_from([0.5, 1.0])),  # repeated values => ties
        st.integers(0, 15),
    ),
    max_size=8,
).map(lambda xs: [KnapsackItem(f"i{j}", r, t) for j, (r, t) in enumerate(xs)])


@settings(max_examples=300, deadline=None)
@given(items=item_lists, budget=st.integers(0, 40), k_max=st.one_of(st.none(), st.integers(1, 4)))
def test_dp_matches_brute_force(items, budget, k_max):
    res = knapsack_dp(items, budget, k_max=k_max)
    assert res.relevance == pytest.approx(brute_force(items, budget, k_max), abs=1e-9)
    assert res.tokens <= budget
    assert res.tokens == sum(i.tokens for i in items if i.id in res.ids)
    if k_max is not None:
        assert len(res.ids) <= k_max
    assert all(i.relevance > 0 for i in items if i.id in res.ids)


@settings(max_examples=300, deadline=None)
@given(items=item_lists, budget=st.integers(0, 40), k_max=st.one_of(st.none(), st.integers(1, 4)))
def test_greedy_within_budget_and_half_optimal(items, budget, k_max):
    res = knapsack_greedy(items, budget, k_max=k_max)
    assert res.tokens <= budget
    if k_max is None:
        assert res.relevance >= brute_force(items, budget, None) / 2 - 1e-9
        assert res.guarantee in (">=1/2 OPT", "optimal")
    else:
        assert len(res.ids) <= k_max


@settings(max_examples=100, deadline=None)
@given(items=item_lists, budget=st.integers(1, 40), bucket=st.integers(2, 5))
def test_bucketed_dp_never_exceeds_budget(items, budget, bucket):
    res = knapsack_dp(items, budget, bucket=bucket)
    assert res.tokens <= budget


@settings(max_examples=100, deadline=None)
@given(items=item_lists, budget=st.integers(0, 40), seed=st.integers(0, 1000))
def test_ties_are_deterministic_regardless_of_input_order(items, budget, seed):
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    assert knapsack_dp(items, budget).ids == knapsack_dp(shuffled, budget).ids
    assert knapsack_greedy(items, budget).ids == knapsack_greedy(shuffled, budget).ids


def test_exact_tie_prefers_stable_ids():
    items = [KnapsackItem("b", 1.0, 5), KnapsackItem("a", 1.0, 5), KnapsackItem("c", 1.0, 5)]
    assert knapsack_dp(items, 10).ids == ("a", "b")
    assert knapsack_dp(list(reversed(items)), 10).ids == ("a", "b")


def test_paper_quick_check():
    items = [KnapsackItem("r.9", 0.9, 500), KnapsackItem("r.7", 0.7, 100), KnapsackItem("r.6", 0.6, 200)]
    assert set(solve_knapsack(items, 600).ids) == {"r.9", "r.7"}


def test_auto_switches_to_greedy_for_huge_tables():
    items = [KnapsackItem(f"c{i}", 1.0 / (i + 1), 10 + i) for i in range(50)]
    assert solve_knapsack(items, 300, max_cells=100).algorithm == "greedy"
    assert solve_knapsack(items, 300).algorithm == "dp"


def test_bad_arguments():
    with pytest.raises(InvalidInputError):
        knapsack_dp([KnapsackItem("a", 1.0, 1), KnapsackItem("a", 2.0, 1)], 5)
    with pytest.raises(InvalidInputError):
        knapsack_dp([], -1)
    with pytest.raises(InvalidInputError):
        knapsack_dp([], 5, k_max=0)
    with pytest.raises(InvalidInputError):
        KnapsackItem("x", float("nan"), 1)
    with pytest.raises(InvalidInputError):
        KnapsackItem("x", 1.0, -3)
    with pytest.raises(InvalidInputError):
        solve_knapsack([], 5, method="magic")  # type: ignore[arg-type]
    assert knapsack_dp([], 5).ids == ()
