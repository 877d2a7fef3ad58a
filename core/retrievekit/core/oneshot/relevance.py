"""One-SHOT's knapsack values: a candidate pool's retriever scores made relevances (``score_normalization``).

The rules for scores a retriever did not give properly:

- a NaN or infinite score ranks after every candidate with a finite score (in input order among themselves); the
  finite scores keep their order and their normalisation, as if the bad ones were not there (issue #62 item 8: one
  bad score used to switch the whole pool to input order);
- a missing score (``None``) switches the pool to rank-based relevance, 1/(1+rank), of the input order (the
  caller's own ranking is then the only order there is), non-finite scores still last;
- every case is noted in the trace.

Examples:
    >>> from retrievekit.core.trace import Trace
    >>> [round(r, 3) for r in pool_relevance([0.1, 0.9, float("nan")], "rank", 0.05, Trace())]
    [0.5, 1.0, 0.333]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from retrievekit.core.trace import Trace

__all__ = ["pool_relevance"]


def _reciprocal(order: Sequence[int], n: int) -> list[float]:
    """1/(1+r) for the candidate at place ``r`` of ``order``."""
    rel = [0.0] * n
    for r, i in enumerate(order):
        rel[i] = 1.0 / (1 + r)
    return rel


def _normalised(vals: list[float], mode: str, floor: float, trace: Trace) -> list[float]:
    """Finite scores as relevances by ``mode`` (``"rank"`` is handled by the caller)."""
    if mode == "raw":
        return vals
    if mode == "max":
        top = max(vals)
        if top > 0:
            return [v / top for v in vals]
        trace.note("oneshot.scores", "best score is not positive; 'max' normalisation fell back to 'minmax'")
    lo, hi = min(vals), max(vals)
    if hi - lo <= 1e-12:
        return [1.0] * len(vals)
    return [floor + (1 - floor) * (v - lo) / (hi - lo) for v in vals]


def pool_relevance(
    scores: Sequence[float | None], mode: str, floor: float, trace: Trace, *, ids: Sequence[str] | None = None
) -> list[float]:
    """The relevance of each candidate (in input order) from its score, by the rules in the module docstring.

    Args:
        scores: the candidates' scores, in input (rank) order; None when missing.
        mode: ``"rank"``, ``"minmax"``, ``"max"`` or ``"raw"`` (:class:`~retrievekit.core.oneshot.config.OneShotConfig`).
        floor: the value ``"minmax"`` gives the weakest finite score.
        trace: where a missing or non-finite score is noted.
        ids: the candidates' ids, for the note (default: their positions).

    Examples:
        >>> pool_relevance([2.0, float("inf"), 1.0], "minmax", 0.05, Trace())
        [1.0, 0.025, 0.05]
        >>> pool_relevance([None, 0.9, float("nan")], "minmax", 0.05, Trace())
        [1.0, 0.5, 0.3333333333333333]
    """
    n = len(scores)
    bad = [i for i, s in enumerate(scores) if s is not None and not math.isfinite(s)]
    missing = [i for i, s in enumerate(scores) if s is None]
    good = [i for i, s in enumerate(scores) if s is not None and math.isfinite(s)]
    if bad:
        trace.note(
            "oneshot.scores",
            f"{len(bad)} candidate(s) scored NaN or infinite: ranked last (after every candidate with a finite "
            "score, in input order); the finite scores keep their order",
            ids=[ids[i] if ids is not None else str(i) for i in bad],
        )
    if missing or not good:
        if missing:
            trace.note(
                "oneshot.scores",
                f"{len(missing) + len(bad)} of {n} candidates have no (finite) score; using relevance 1/(1+rank) of "
                "the input order for the whole pool",
                missing=len(missing) + len(bad),
            )
        return _reciprocal([i for i in range(n) if i not in set(bad)] + bad, n)
    if mode == "rank":
        return _reciprocal(sorted(good, key=lambda i: (-float(scores[i]), i)) + bad, n)  # type: ignore[arg-type]
    vals = _normalised([float(scores[i]) for i in good], mode, floor, trace)  # type: ignore[arg-type]
    rel = [0.0] * n
    for i, v in zip(good, vals, strict=True):
        rel[i] = v
    low = min(vals)
    for j, i in enumerate(bad):  # below every finite one, in input order
        rel[i] = low / (2 + j) if low > 0 else low - 1.0 - j
    return rel
