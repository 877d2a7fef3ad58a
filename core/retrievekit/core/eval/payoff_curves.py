"""The measured judge-AUC -> quality curves, as data: where each judged method pays off (``retrievekit advise``).

Each :class:`PayoffCurve` holds the oracle points of one method on one dataset (``--judge oracle:S``: a gold-label
judge of controlled accuracy, its measured AUC on the x axis), the first stage's quality on the same queries, and the
judge AUC from which the method pays off, all copied from ``docs/benchmarks.md`` ("Judge accuracy" tables and "Where
each judged method pays off"; the runs' commands and records are named there). :func:`expected_quality` reads a
curve at an AUC by linear interpolation between its points (clamped to its ends).

Examples:
    >>> c = curve("lattice")
    >>> c.first_stage, round(expected_quality(c, 0.906), 3), pays_off(c, 0.95)
    ('BM25', 0.768, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrievekit.core.errors import InvalidInputError

__all__ = ["CURVES", "PayoffCurve", "curve", "expected_quality", "pays_off"]

SOURCE = "docs/benchmarks.md, section 'Judge accuracy' (oracle:S runs) and 'Where each judged method pays off'"


@dataclass(frozen=True)
class PayoffCurve:
    """One method's quality against judge AUC, beside its first stage.

    Attributes:
        method: the registry name (``lattice``, ``arm``, ``oneshot``, ``iterative``).
        dataset: where it was measured.
        metric: the quality measure of ``points``.
        points: ``(judge AUC, quality)`` of the oracle runs, by AUC.
        first_stage: what the method is compared with.
        first_stage_quality: its quality on the same queries.
        threshold: the judge AUC from which the method pays off (None: never; 0: any judge, below chance included).
        cost: judge calls and judged items per query in the measured runs.
        note: what the threshold means.
        items_per_query: judged items per query in those runs (a pointwise judge makes one request each).
        auc_on: which AUC places a judge on the curve: ``"documents"``, or ``"summaries"`` (LATTICE reads the
            lower of the two: its judge rates the tree's summaries before it sees a document).

    Examples:
        >>> curve("arm").metric
        'table recall@1'
    """

    method: str
    dataset: str
    metric: str
    points: tuple[tuple[float, float], ...]
    first_stage: str
    first_stage_quality: float | None
    threshold: float | None
    cost: str
    note: str
    items_per_query: float = 0.0
    auc_on: str = "documents"
    source: str = SOURCE


CURVES: tuple[PayoffCurve, ...] = (
    PayoffCurve(
        "lattice",
        "SciFact dev (215 claims)",
        "nDCG@10",
        (
            (0.498, 0.000),
            (0.581, 0.004),
            (0.676, 0.024),
            (0.762, 0.206),
            (0.837, 0.567),
            (0.906, 0.768),
            (0.955, 0.889),
            (1.000, 1.000),
        ),
        "BM25",
        0.681,
        0.90,
        "39 slate calls, about 400 judged items (10-20 calls from N = 10)",
        "beats the best flat rerank of BM25 from AUC 0.90 (N = 10), from 0.95 at N = 5",
        168.0,
        "summaries",
    ),
    PayoffCurve(
        "arm",
        "OTT-QA dev",
        "table recall@1",
        ((0.519, 0.090), (0.613, 0.120), (0.713, 0.187), (0.832, 0.310), (0.919, 0.460), (1.000, 0.770)),
        "hybrid",
        0.340,
        0.90,
        "about 2 judge calls, 19 judged objects, plus 5 keyword calls",
        "beats a flat rerank from any judge; beats hybrid alone from AUC about 0.9",
        19.1,
    ),
    PayoffCurve(
        "oneshot",
        "ObliQA dev (2k-token budget)",
        "set recall",
        ((0.5, 0.816), (1.0, 0.825)),
        "no cropping",
        0.800,
        0.0,
        "one judge call per chosen chunk (about 8), 34-40 judged sentences",
        "any judge, chance included (+1.6 points from the freed budget; the oracle adds 0.9)",
        37.0,
    ),
    PayoffCurve(
        "iterative",
        "HotpotQA, MuSiQue",
        "recall",
        (),
        "no deletion",
        None,
        None,
        "5 judge calls, about 28 judged chunks",
        "never in recall (a delete adds no passage); it saves context tokens at any accuracy",
        28.0,
    ),
)


def curve(method: str) -> PayoffCurve:
    """The curve of ``method``.

    Examples:
        >>> curve("bm25")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: no payoff curve for 'bm25'; known: lattice, arm, oneshot, iterative
    """
    for c in CURVES:
        if c.method == method:
            return c
    raise InvalidInputError(f"no payoff curve for {method!r}; known: {', '.join(c.method for c in CURVES)}")


def expected_quality(c: PayoffCurve, auc: float) -> float | None:
    """The curve's quality at ``auc`` (linear between points, clamped to the ends; None for a curve without points).

    Examples:
        >>> expected_quality(curve("lattice"), 0.3), expected_quality(curve("lattice"), 1.0)
        (0.0, 1.0)
        >>> expected_quality(curve("iterative"), 0.9) is None
        True
    """
    pts: Sequence[tuple[float, float]] = c.points
    if not pts:
        return None
    x = float(auc)
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


def pays_off(c: PayoffCurve, auc: float) -> bool:
    """Whether a judge of ``auc`` clears the method's threshold.

    Examples:
        >>> pays_off(curve("iterative"), 1.0), pays_off(curve("oneshot"), 0.45)
        (False, True)
    """
    return c.threshold is not None and float(auc) >= c.threshold
