"""llm-rerank's budget: how many candidates, in how many slates, so a listwise rerank stays listwise.

``calls`` slates share ``candidates`` first-stage hits. The defaults (100 candidates, 40 calls: LATTICE's B*N) give
slates of two or three; given fewer candidates and no ``calls``, :func:`rerank_budget` derives the calls at that
same slate size (never more than 40), and it refuses ``calls >= candidates`` (every slate one candidate: a pointwise rerank, which judge-rerank is
for) with a message instead of quietly running it.

Examples:
    >>> rerank_budget(None, None)
    (100, 40)
    >>> rerank_budget(20, None)  # the 40 default calls would have been 20 one-candidate slates
    (20, 8)
    >>> rerank_budget(None, 10)
    (100, 10)
"""

from __future__ import annotations

import math

from retrievekit.core.errors import InvalidInputError

__all__ = ["DEFAULT_CALLS", "DEFAULT_CANDIDATES", "check_slates", "rerank_budget"]

DEFAULT_CANDIDATES = 100
"""First-stage hits llm-rerank scores when neither number is given."""

DEFAULT_CALLS = 40
"""Slates (LLM calls) per query when neither number is given (LATTICE's B*N)."""


def check_slates(candidates: int, calls: int) -> None:
    """Refuse a budget whose slates would hold one candidate each (``calls >= candidates >= 2``).

    Examples:
        >>> check_slates(20, 40)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm-rerank: calls=40 >= candidates=20 scores one candidate per slate (a pointwise rerank, not a listwise one); give fewer calls (e.g. calls=8) or more candidates, or use judge-rerank for pointwise scoring
        >>> check_slates(1, 1)
    """
    if candidates < 1 or calls < 0:
        raise InvalidInputError(f"candidates must be >= 1 and calls >= 0, got {candidates}, {calls}")
    if candidates >= 2 and calls >= candidates:
        suggest = max(1, round(candidates * DEFAULT_CALLS / DEFAULT_CANDIDATES))
        raise InvalidInputError(
            f"llm-rerank: calls={calls} >= candidates={candidates} scores one candidate per slate (a pointwise "
            f"rerank, not a listwise one); give fewer calls (e.g. calls={suggest}) or more candidates, or use "
            "judge-rerank for pointwise scoring"
        )


def rerank_budget(candidates: int | None, calls: int | None) -> tuple[int, int]:
    """``(candidates, calls)``: the given numbers; candidates default to 100; missing calls are 40, or fewer where
    the candidates would not fill slates of 2.5 (the default size); checked by :func:`check_slates`.

    Examples:
        >>> rerank_budget(6, 2)
        (6, 2)
        >>> rerank_budget(2, None), rerank_budget(300, None)
        ((2, 1), (300, 40))
    """
    if candidates is None:
        candidates = DEFAULT_CANDIDATES
    if calls is None:  # at most the default 40, fewer when the candidates would not fill slates of 2.5
        size = DEFAULT_CANDIDATES / DEFAULT_CALLS
        calls = max(1, min(DEFAULT_CALLS, int(candidates) - 1, math.floor(int(candidates) / size + 0.5)))
    check_slates(int(candidates), int(calls))
    return int(candidates), int(calls)
