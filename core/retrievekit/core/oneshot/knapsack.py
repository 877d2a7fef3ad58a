"""Token-Constrained Top-K_max selection as a 0/1 knapsack (mechanism 1 of "Fishing for Answers").

Maximise the total relevance of the chosen chunks subject to ``sum(tokens) <= budget`` and, optionally, at most
``k_max`` chunks. Two solvers:

* :func:`knapsack_dp` -- exact dynamic programming over token buckets (``bucket=1``: exact in tokens; ``bucket=g``
  rounds each weight *up* to a multiple of ``g``, so the budget is still never exceeded). With ``k_max`` the table
  gains a count dimension. Vectorised with numpy: O(n · (k_max+1) · budget/g) time, one bit per cell for the
  back-pointers.
* :func:`knapsack_greedy` -- relevance/token ratio order (skipping items that no longer fit), then the classic
  fallback: return the better of that and the best single item. Without ``k_max`` this is >= 1/2 of the optimum
  (the greedy prefix plus the first item that did not fit is >= the LP optimum >= OPT). With ``k_max`` it is a
  heuristic (no guarantee), and says so in :attr:`KnapsackResult.guarantee`.

:func:`solve_knapsack` picks DP when the table fits ``max_cells`` and greedy otherwise.

Ties are deterministic: items are processed in a canonical order (relevance desc, tokens asc, id asc) and an item is
taken only when it *strictly* improves the objective, so the same items in any input order give the same answer.
Items with non-positive relevance can never raise the objective and are never taken.

Examples:
    >>> items = [KnapsackItem("a", 0.9, 500), KnapsackItem("b", 0.7, 100), KnapsackItem("c", 0.6, 200)]
    >>> solve_knapsack(items, budget=600).ids
    ('a', 'b')
    >>> solve_knapsack(items, budget=600, k_max=1).ids
    ('a',)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["KnapsackItem", "KnapsackResult", "knapsack_dp", "knapsack_greedy", "solve_knapsack"]

_EPS = 1e-12


@dataclass(frozen=True)
class KnapsackItem:
    """One chunk for the solver: a stable id, its relevance (value) and token cost (weight, >= 0).

    Examples:
        >>> KnapsackItem("p1", relevance=0.8, tokens=120).tokens
        120
    """

    id: str
    relevance: float
    tokens: int

    def __post_init__(self) -> None:
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, (int, np.integer)) or self.tokens < 0:
            raise InvalidInputError(f"item {self.id!r}: tokens must be a non-negative int, got {self.tokens!r}")
        if not np.isfinite(self.relevance):
            raise InvalidInputError(f"item {self.id!r}: relevance must be finite, got {self.relevance!r}")


@dataclass(frozen=True)
class KnapsackResult:
    """The chosen item ids (best relevance first), their totals and how they were found.

    Attributes:
        ids: chosen ids, ordered by relevance desc then id.
        relevance: total relevance of the chosen items.
        tokens: total tokens of the chosen items (always <= the budget).
        algorithm: ``"dp"``, ``"greedy"``, ``"trivial"`` (everything fits) or ``"empty"``.
        guarantee: ``"optimal"``, ``"optimal-bucketed"`` (optimal for weights rounded up to the bucket),
            ``">=1/2 OPT"`` or ``"heuristic"``.

    Examples:
        >>> KnapsackResult(("a",), 1.0, 10, "dp", "optimal").ids
        ('a',)
    """

    ids: tuple[str, ...]
    relevance: float
    tokens: int
    algorithm: str
    guarantee: str


def _check(items: Sequence[KnapsackItem], budget: int, k_max: int | None) -> None:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise InvalidInputError(f"budget must be a non-negative int (tokens), got {budget!r}")
    if k_max is not None and (isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 1):
        raise InvalidInputError(f"k_max must be a positive int or None, got {k_max!r}")
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise InvalidInputError(f"duplicate item id {it.id!r}: deduplicate chunks before selection")
        seen.add(it.id)


def _canonical(items: Sequence[KnapsackItem]) -> list[KnapsackItem]:
    """Positive-relevance items in the canonical (deterministic) order."""
    return sorted((it for it in items if it.relevance > 0), key=lambda it: (-it.relevance, it.tokens, it.id))


def _result(chosen: Sequence[KnapsackItem], algorithm: str, guarantee: str) -> KnapsackResult:
    ordered = sorted(chosen, key=lambda it: (-it.relevance, it.id))
    return KnapsackResult(
        ids=tuple(it.id for it in ordered),
        relevance=float(sum(it.relevance for it in ordered)),
        tokens=int(sum(it.tokens for it in ordered)),
        algorithm=algorithm if ordered or algorithm != "trivial" else "empty",
        guarantee=guarantee,
    )


def _trivial(items: list[KnapsackItem], budget: int, k_max: int | None) -> KnapsackResult | None:
    if not items:
        return KnapsackResult((), 0.0, 0, "empty", "optimal")
    if sum(it.tokens for it in items) <= budget and (k_max is None or len(items) <= k_max):
        return _result(items, "trivial", "optimal")
    return None


def knapsack_dp(
    items: Sequence[KnapsackItem], budget: int, *, k_max: int | None = None, bucket: int = 1
) -> KnapsackResult:
    """Exact 0/1 knapsack by dynamic programming over token buckets (with a count dimension when ``k_max`` is set).

    Examples:
        >>> knapsack_dp([KnapsackItem("a", 3.0, 4), KnapsackItem("b", 2.0, 3), KnapsackItem("c", 2.0, 3)], 6).ids
        ('b', 'c')
        >>> knapsack_dp([KnapsackItem("a", 1.0, 7)], 5).ids
        ()
    """
    _check(items, budget, k_max)
    if isinstance(bucket, bool) or not isinstance(bucket, int) or bucket < 1:
        raise InvalidInputError(f"bucket must be a positive int, got {bucket!r}")
    cand = [it for it in _canonical(items) if it.tokens <= budget]
    trivial = _trivial(cand, budget, k_max)
    if trivial is not None:
        return trivial
    weights = [-(-it.tokens // bucket) for it in cand]  # ceil: never exceeds the budget after rounding
    cap = min(budget // bucket, sum(weights))
    kk = min(k_max, len(cand)) if k_max is not None else 0
    rows = kk + 1
    dp = np.zeros((rows, cap + 1), dtype=np.float64)
    take = np.zeros((len(cand), rows, cap + 1), dtype=bool)
    for i, (it, w) in enumerate(zip(cand, weights, strict=True)):
        v = float(it.relevance)
        if k_max is None:
            if w == 0:
                cand_vals = dp + v
                better = cand_vals > dp + _EPS
            else:
                cand_vals = np.full_like(dp, -np.inf)
                cand_vals[:, w:] = dp[:, : cap + 1 - w] + v
                better = cand_vals > dp + _EPS
        else:
            cand_vals = np.full_like(dp, -np.inf)
            if w == 0:
                cand_vals[1:, :] = dp[:-1, :] + v
            else:
                cand_vals[1:, w:] = dp[:-1, : cap + 1 - w] + v
            better = cand_vals > dp + _EPS
        take[i] = better
        dp = np.where(better, cand_vals, dp)
    chosen: list[KnapsackItem] = []
    c, k = cap, kk
    for i in range(len(cand) - 1, -1, -1):
        if take[i, k, c]:
            chosen.append(cand[i])
            c -= weights[i]
            if k_max is not None:
                k -= 1
    return _result(chosen, "dp", "optimal" if bucket == 1 else "optimal-bucketed")


def knapsack_greedy(items: Sequence[KnapsackItem], budget: int, *, k_max: int | None = None) -> KnapsackResult:
    """Greedy by relevance per token, then the better of that and the best single item (>= 1/2 OPT without k_max).

    Examples:
        >>> knapsack_greedy([KnapsackItem("small", 1.0, 1), KnapsackItem("big", 10.0, 10)], 10).ids
        ('big',)
    """
    _check(items, budget, k_max)
    cand = [it for it in _canonical(items) if it.tokens <= budget]
    guarantee = ">=1/2 OPT" if k_max is None else "heuristic"
    trivial = _trivial(cand, budget, k_max)
    if trivial is not None:
        return trivial
    order = sorted(cand, key=lambda it: (-(it.relevance / max(it.tokens, _EPS)), -it.relevance, it.id))
    chosen: list[KnapsackItem] = []
    used = 0
    for it in order:
        if k_max is not None and len(chosen) >= k_max:
            break
        if used + it.tokens <= budget:
            chosen.append(it)
            used += it.tokens
    best_single = cand[0]  # canonical order: highest relevance first (all fit)
    if best_single.relevance > sum(it.relevance for it in chosen) + _EPS:
        chosen = [best_single]
    return _result(chosen, "greedy", guarantee)


def solve_knapsack(
    items: Sequence[KnapsackItem],
    budget: int,
    *,
    k_max: int | None = None,
    method: Literal["auto", "dp", "greedy"] = "auto",
    bucket: int = 1,
    max_cells: int = 50_000_000,
) -> KnapsackResult:
    """Solve with DP when ``n · (k_max+1) · budget/bucket <= max_cells`` (``method="auto"``), else greedy.

    Examples:
        >>> items = [KnapsackItem(str(i), 1.0 / (i + 1), 10) for i in range(5)]
        >>> solve_knapsack(items, budget=25).ids
        ('0', '1')
        >>> solve_knapsack(items, budget=25, method="greedy").algorithm
        'greedy'
    """
    if method not in ("auto", "dp", "greedy"):
        raise InvalidInputError(f"method must be 'auto', 'dp' or 'greedy', got {method!r}")
    if method == "greedy":
        return knapsack_greedy(items, budget, k_max=k_max)
    if method == "auto":
        _check(items, budget, k_max)
        n = sum(1 for it in items if 0 < it.relevance and it.tokens <= budget)
        cap = min(budget // bucket, sum(-(-it.tokens // bucket) for it in items if it.relevance > 0))
        rows = (min(k_max, n) + 1) if k_max is not None else 1
        if n * rows * (cap + 1) > max_cells:
            return knapsack_greedy(items, budget, k_max=k_max)
    return knapsack_dp(items, budget, k_max=k_max, bucket=bucket)
