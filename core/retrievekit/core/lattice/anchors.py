"""LATTICE's leaf anchors: which already-predicted leaves join a leaf slate, and the mixture threshold they use.

Examples:
    >>> sample_anchors({"a": 0.9, "b": 0.1, "c": 0.5}, 2, mode="top")
    ['a', 'c']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["gmm_threshold", "mixture_valley", "sample_anchors"]


def gmm_threshold(values: Sequence[float], iters: int = 50) -> float | None:
    """Density minimum between the means of a 2-component 1-D Gaussian mixture (None when it is degenerate).

    ``iters`` EM steps from the quartiles (the reference code's). Each step is the textbook update, computed in
    place with the same floating-point operations in the same order (``-(a) / b`` as ``a / -(b)``, which is the same
    number), so the result is the plain numpy loop's to the bit, at about a fifth less CPU: a leaf slate's anchor draw
    runs it once (``tests/core/lattice/test_gmm_threshold.py`` compares the two on many inputs).

    Examples:
        >>> 0.2 < gmm_threshold([0.1, 0.12, 0.09, 0.11, 0.9, 0.88, 0.92]) < 0.8
        True
        >>> gmm_threshold([0.5, 0.5]) is None
        True
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2 or float(x.std()) < 1e-9:
        return None
    mu = np.percentile(x, [25.0, 75.0])
    if mu[0] == mu[1]:
        mu = np.array([x.min(), x.max()])
    var = np.full(2, max(float(x.var()), 1e-6))
    pi = np.array([0.5, 0.5])
    col, add = x[:, None], np.add.reduce
    dens, resp, tmp, row = np.empty((x.size, 2)), np.empty((x.size, 2)), np.empty((x.size, 2)), np.empty((x.size, 1))
    for _ in range(iters):
        # dens = pi / sqrt(2 pi var) * exp(-((x - mu) ** 2) / (2 var))
        coef = pi / np.sqrt(2 * np.pi * var)
        np.exp(np.divide(np.square(np.subtract(col, mu, out=dens), out=dens), -(2 * var), out=dens), out=dens)
        np.multiply(coef, dens, out=dens)
        # resp = dens / max(row sums, 1e-300); nk = column sums + 1e-12
        np.divide(dens, np.maximum(add(dens, axis=1, keepdims=True, out=row), 1e-300, out=row), out=resp)
        nk = add(resp, axis=0) + 1e-12
        mu = add(np.multiply(resp, col, out=tmp), axis=0) / nk
        np.multiply(resp, np.square(np.subtract(col, mu, out=tmp), out=tmp), out=tmp)
        var = np.maximum(add(tmp, axis=0) / nk, 1e-6)
        pi = nk / add(nk)
    return mixture_valley(mu, var, pi)


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
    scores: dict[str, float], n: int, *, mode: str = "gmm", rng: np.random.Generator | None = None
) -> list[str]:
    """Pick ``n`` anchor leaves from ``scores`` (calibrated scores of the leaves predicted so far).

    All of them when there are at most ``n``; else ``"top"`` takes the best, ``"softmax"`` samples proportionally
    to ``e^s`` (paper) and ``"gmm"`` samples with weight ``4^(2s)`` above the GMM threshold and ``1e-4`` below
    (reference code), without replacement.

    Examples:
        >>> sample_anchors({"a": 0.9, "b": 0.1, "c": 0.5}, 2, mode="top")
        ['a', 'c']
        >>> sample_anchors({"a": 0.9}, 5)
        ['a']
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
        thr = gmm_threshold(s.tolist())
        w = np.where(s > thr, 4.0 ** (2 * s), 1e-4) if thr is not None else 4.0 ** (2 * s)
    w = w / w.sum()
    picked = rng.choice(len(ids), size=n, replace=False, p=w)
    return sorted((ids[int(i)] for i in picked), key=lambda i: (-scores[i], i))
