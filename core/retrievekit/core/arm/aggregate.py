"""Aggregation of verified drafts: ``score = 0.5 * mean log-prob + 0.5 * softmax(votes)`` (reference ``aggregate.py``).

Each draft's verdict maps the objects it kept to the mean log-probability of their name tokens (0 when the
verifier gives no log-probs, e.g. a chat LLM). Across drafts an object's *votes* is how many drafts kept it; the
softmax runs over the vote counts of all objects that got at least one vote; its *mean log-prob* averages over
the drafts that kept it. Objects scoring at or above ``threshold`` are kept, best first (ties: more votes, then
``tiebreak`` descending, then id).

Examples:
    >>> out = aggregate([{"a": -0.2, "b": -1.0}, {"a": -0.4}], threshold=-100)
    >>> [(o.id, o.votes, round(o.mean_logprob, 2), round(o.score, 3)) for o in out]
    [('a', 2, -0.3, 0.216), ('b', 1, -1.0, -0.366)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Aggregated", "aggregate", "softmax"]


@dataclass(frozen=True)
class Aggregated:
    """An object's aggregated verdict.

    Examples:
        >>> Aggregated("a", 0.5, 2, -0.1, 0.8).votes
        2
    """

    id: str
    score: float
    votes: int
    mean_logprob: float
    vote_share: float


def softmax(values: Sequence[float]) -> list[float]:
    """Numerically stable softmax.

    Examples:
        >>> [round(x, 3) for x in softmax([1, 1, 2])]
        [0.212, 0.212, 0.576]
        >>> softmax([])
        []
    """
    if not values:
        return []
    m = max(values)
    ex = [math.exp(v - m) for v in values]
    s = sum(ex)
    return [e / s for e in ex]


def aggregate(
    verdicts: Sequence[Mapping[str, float]],
    *,
    logprob_weight: float = 0.5,
    threshold: float = -100.0,
    min_votes: int = 1,
    tiebreak: Mapping[str, float] | None = None,
) -> list[Aggregated]:
    """Combine per-draft verdicts (module docstring); objects with fewer than ``min_votes`` votes are dropped.

    Examples:
        >>> [o.id for o in aggregate([{"a": 0.0}, {"b": 0.0}, {"b": 0.0}], min_votes=2)]
        ['b']
        >>> aggregate([])
        []
    """
    votes: dict[str, int] = {}
    lps: dict[str, list[float]] = {}
    for verdict in verdicts:
        for obj, lp in verdict.items():
            votes[obj] = votes.get(obj, 0) + 1
            lps.setdefault(obj, []).append(float(lp))
    ids = sorted(votes)
    shares = dict(zip(ids, softmax([float(votes[i]) for i in ids]), strict=True))
    tb = tiebreak or {}
    out = []
    for i in ids:
        mean_lp = sum(lps[i]) / len(lps[i])
        score = logprob_weight * mean_lp + (1.0 - logprob_weight) * shares[i]
        if votes[i] >= min_votes and score >= threshold:
            out.append(Aggregated(i, score, votes[i], mean_lp, shares[i]))
    out.sort(key=lambda a: (-a.score, -a.votes, -float(tb.get(a.id, 0.0)), a.id))
    return out
