"""Degenerate slate replies: scores that rank nothing (all equal, all zero, or a plain counting sequence).

A weak LLM asked to score a slate often answers without reading it: one value for every candidate (0 for all of
them, say), or the slots counted down or up in the order they were shown (``80, 70, ..., 0`` or ``1, 2, 3, ...``).
Such a reply parses and validates, so nothing else in the pipeline notices; :func:`degenerate_reason` names the
pattern so the slate scorer can count it as a fallback (the run's fallback rate and its warning above 5 %, see
:mod:`retrievekit.core.eval.fallbacks`). :func:`slate_spread` is the highest score less the lowest, recorded for
every LLM-scored slate.

Examples:
    >>> degenerate_reason([0.0, 0.0, 0.0])
    'all 3 scores are 0'
    >>> degenerate_reason([0.8, 0.7, 0.6, 0.5])
    'a counting sequence (step -0.1 over 4 slots in the order shown)'
    >>> degenerate_reason([0.9, 0.1, 0.4]) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MIN_COUNTING", "MIN_EQUAL", "degenerate_reason", "slate_spread"]

MIN_EQUAL = 3
"""A slate of at least this many scores, all equal, is degenerate (two candidates may both be irrelevant)."""

MIN_COUNTING = 4
"""A slate of at least this many scores stepping by one constant amount is degenerate (a counted-off reply)."""

_TOL = 1e-9


def slate_spread(scores: Sequence[float]) -> float:
    """The highest score less the lowest (0 for an empty or one-item slate).

    Examples:
        >>> slate_spread([0.2, 0.9, 0.5])
        0.7
        >>> slate_spread([])
        0.0
    """
    values = [float(s) for s in scores]
    return round(max(values) - min(values), 6) if len(values) > 1 else 0.0


def degenerate_reason(scores: Sequence[float]) -> str | None:
    """Why ``scores`` (one slate, in the order the LLM was shown the items) rank nothing, or None when they may.

    All equal (all zero among them) from :data:`MIN_EQUAL` items on; a counting sequence (every step the same
    non-zero amount, up or down) from :data:`MIN_COUNTING` items on.

    Examples:
        >>> degenerate_reason([5.0, 5.0, 5.0])
        'all 3 scores are equal (5)'
        >>> degenerate_reason([1, 2, 3, 4, 5])
        'a counting sequence (step +1 over 5 slots in the order shown)'
        >>> degenerate_reason([0.0, 0.0]) is None  # two irrelevant candidates is a fair answer
        True
    """
    values = [float(s) for s in scores]
    n = len(values)
    if n >= MIN_EQUAL and max(values) - min(values) <= _TOL:
        return f"all {n} scores are 0" if abs(values[0]) <= _TOL else f"all {n} scores are equal ({values[0]:g})"
    if n >= MIN_COUNTING:
        steps = [b - a for a, b in zip(values, values[1:], strict=False)]
        step = steps[0]
        if abs(step) > _TOL and all(abs(s - step) <= _TOL for s in steps):
            return f"a counting sequence (step {step:+.3g} over {n} slots in the order shown)"
    return None
