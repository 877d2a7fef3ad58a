"""Benchmark (not a timed test): DP selection over 1,000 chunks at a 32k-token budget, beside greedy.

Run with ``python -m pytest tests/core/oneshot/test_oneshot_bench_selection.py -m slow --benchmark-only``
(pytest-benchmark prints the timings). Nothing here asserts on time.
"""

from __future__ import annotations

import random

import pytest

from retrievekit.core.oneshot.knapsack import KnapsackItem, knapsack_dp, knapsack_greedy

pytestmark = pytest.mark.slow


def _items(n: int = 1000, seed: int = 0) -> list[KnapsackItem]:
    rng = random.Random(seed)
    return [KnapsackItem(f"c{i:04d}", rng.random(), rng.randint(20, 300)) for i in range(n)]


@pytest.mark.parametrize("solver", ["dp", "greedy"])
def test_selection_1000_chunks_32k(benchmark, solver):
    items = _items()
    fn = knapsack_dp if solver == "dp" else knapsack_greedy
    res = benchmark(fn, items, 32_000)
    benchmark.extra_info.update(relevance=res.relevance, tokens=res.tokens, chunks=len(res.ids))
    assert res.tokens <= 32_000
