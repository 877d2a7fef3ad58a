"""LATTICE's leaf anchors: which already-predicted leaves join a leaf slate, and the mixture threshold they use.

Examples:
    >>> sample_anchors({"a": 0.9, "b": 0.1, "c": 0.5}, 2, mode="top")
    ['a', 'c']
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["gmm_threshold", "mixture_valley", "sample_anchors"]

_LOG_2PI = math.log(2 * math.pi)


def gmm_threshold(values: Sequence[float], iters: int = 50) -> float | None:
    """Density minimum between the means of a 2-component 1-D Gaussian mixture (None when it is degenerate).

    ``iters`` EM steps from the quartiles (the reference code's). A step is the textbook update written as two small
    matrix products over the rows ``1, x, x^2`` of the centred scores: each component's log-density is a quadratic
    in ``x`` (one product and one ``exp`` give both densities, each as the textbook computes it, so they underflow
    where the textbook's do), and the responsibilities' weighted sums of ``1, x, x^2`` (one product) give the new
    weights, means and variances: a third of the textbook loop's numpy calls (a leaf slate's anchor draw runs it
    once; it was about a third of a LATTICE query's CPU outside the model, ``benchmarks/async_burst.py``). The
    threshold is the textbook loop's to within 1e-8 of the scores' range and separates the same scores on thousands
    of inputs (``tests/core/lattice/test_gmm_threshold.py``, with the anchor draws of whole searches); where the two
    components start as mirror images, which one takes a score between them is decided by rounding, as in the
    textbook loop.

    Examples:
        >>> 0.2 < gmm_threshold([0.1, 0.12, 0.09, 0.11, 0.9, 0.88, 0.92]) < 0.8
        True
        >>> gmm_threshold([0.5, 0.5]) is None
        True
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2 or float(x.std()) < 1e-9:
        return None
    q = np.percentile(x, [25.0, 75.0])
    if q[0] == q[1]:
        q = np.array([x.min(), x.max()])
    shift = float(x.mean())  # EM moves with a shift of the scores: centred, the sums of x^2 lose no precision
    xc = x - shift
    rows = np.stack([np.ones_like(xc), xc, xc * xc])  # (3, n)
    (m0, m1), (v0, v1), (p0, p1) = (q - shift).tolist(), (max(float(x.var()), 1e-6),) * 2, (0.5, 0.5)
    dens, total = np.empty((2, x.size)), np.empty(x.size)
    for _ in range(iters):
        np.exp(np.matmul(np.array((_quadratic(m0, v0, p0), _quadratic(m1, v1, p1))), rows, out=dens), out=dens)
        np.divide(dens, np.maximum(np.add(dens[0], dens[1], out=total), 1e-300, out=total), out=dens)
        (a0, a1), (b0, b1), (e0, e1) = np.matmul(rows, dens.T).tolist()  # sums of r, r x, r x^2 per component
        n0, n1 = a0 + 1e-12, a1 + 1e-12
        m0, m1 = b0 / n0, b1 / n1
        v0, v1 = max((e0 - 2 * m0 * b0 + m0 * m0 * a0) / n0, 1e-6), max((e1 - 2 * m1 * b1 + m1 * m1 * a1) / n1, 1e-6)
        p0, p1 = n0 / (n0 + n1), n1 / (n0 + n1)
    return mixture_valley(np.array((m0 + shift, m1 + shift)), np.array((v0, v1)), np.array((p0, p1)))


def _quadratic(mu: float, var: float, pi: float) -> tuple[float, float, float]:
    """The coefficients of ``1, x, x^2`` in ``log(pi / sqrt(2 pi var)) - (x - mu)^2 / (2 var)`` (``pi`` is never 0:
    each weight carries the step's ``1e-12``)."""
    h = 0.5 / var
    return math.log(pi) - 0.5 * (_LOG_2PI + math.log(var)) - h * mu * mu, 2 * h * mu, -h


def mixture_valley(mu: np.ndarray, var: np.ndarray, pi: np.ndarray) -> float | None:
    """Where the density of the 1-D Gaussian mixture (weights ``pi``, means ``mu``, variances ``var``) is lowest
    between its two means, on a 201-point grid: :func:`gmm_threshold`'s last step (None when the means coincide).

    Examples:
        >>> mixture_valley(np.array([0.0, 1.0]), np.array([0.01, 0.01]), np.array([0.5, 0.5]))
        0.5
        >>> mixture_valley(np.array([0.3, 0.3]), np.array([0.1, 0.1]), np.array([0.5, 0.5])) is None
        True
    """
    lo, hi = sorted(mu.tolist())
    if hi - lo < 1e-9:
        return None
    grid = np.linspace(lo, hi, 201)
    dens = (pi / np.sqrt(2 * np.pi * var) * np.exp(-((grid[:, None] - mu) ** 2) / (2 * var))).sum(1)
    return float(grid[int(dens.argmin())])


def sample_anchors(
    scores: dict[str, float],
    n: int,
    *,
    mode: str = "gmm",
    rng: np.random.Generator | None = None,
    fitted: dict[tuple[float, ...], float | None] | None = None,
) -> list[str]:
    """Pick ``n`` anchor leaves from ``scores`` (calibrated scores of the leaves predicted so far).

    All of them when there are at most ``n``; else ``"top"`` takes the best, ``"softmax"`` samples proportionally
    to ``e^s`` (paper) and ``"gmm"`` samples with weight ``4^(2s)`` above the GMM threshold and ``1e-4`` below
    (reference code), without replacement. ``fitted`` keeps the latest threshold fitted, by its sorted scores: a
    search passes one per query, so the leaf slates of one iteration, which draw from the same scores, fit the
    mixture once (the draws themselves still differ: each takes its own numbers from ``rng``).

    Examples:
        >>> sample_anchors({"a": 0.9, "b": 0.1, "c": 0.5}, 2, mode="top")
        ['a', 'c']
        >>> sample_anchors({"a": 0.9}, 5)
        ['a']
        >>> fitted = {}
        >>> len(sample_anchors({"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.85}, 2, fitted=fitted)), list(fitted)
        (2, [(0.9, 0.85, 0.5, 0.1)])
    """
    ids = sorted(scores, key=lambda i: (-scores[i], i))
    if n <= 0:
        return []
    if len(ids) <= n:
        return ids
    if mode == "top":
        return ids[:n]
    rng = rng or np.random.default_rng(0)
    s = np.array([scores[i] for i in ids], dtype=np.float64)
    if mode == "softmax":
        w = np.exp(s - s.max())
    else:
        key = tuple(s.tolist())
        if fitted is not None and key in fitted:
            thr = fitted[key]
        else:
            thr = gmm_threshold(key)
            if fitted is not None:  # the latest fit only: an iteration's slates share it, the next one's scores differ
                fitted.clear()
                fitted[key] = thr
        w = np.where(s > thr, 4.0 ** (2 * s), 1e-4) if thr is not None else 4.0 ** (2 * s)
    w = w / w.sum()
    picked = rng.choice(len(ids), size=n, replace=False, p=w)
    return sorted((ids[int(i)] for i in picked), key=lambda i: (-scores[i], i))
