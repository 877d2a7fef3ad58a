"""Deterministic balanced clustering for the bottom-up build: groups of at most M items (numpy only).

:func:`balanced_groups` runs seeded k-means (k-means++ start) with ``k = ceil(n / M)`` and recurses into any
cluster larger than M. When k-means cannot split a set (identical vectors, e.g. duplicate documents) the set is
cut into equal chunks along its first principal direction, so every group ends up with at most M items and the
number of groups shrinks level after level. Groups and their members are returned in a canonical order.

Examples:
    >>> import numpy as np
    >>> x = np.array([[0, 0], [0, 0.1], [5, 5], [5, 5.1], [9, 0]], dtype=float)
    >>> balanced_groups(x, max_size=2, seed=0)
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import math

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["balanced_groups", "kmeans"]


def kmeans(x: np.ndarray, k: int, *, seed: int = 0, iters: int = 25) -> np.ndarray:
    """Labels of seeded k-means (k-means++ initialisation, Lloyd iterations); deterministic for a seed.

    Examples:
        >>> import numpy as np
        >>> kmeans(np.array([[0.0], [0.1], [9.0], [9.1]]), 2).tolist()
        [0, 0, 1, 1]
    """
    n = x.shape[0]
    if k < 1 or n == 0:
        raise InvalidInputError(f"kmeans needs k >= 1 and at least one point (k={k}, n={n})")
    k = min(k, n)
    rng = np.random.default_rng(seed)
    centers = [x[int(rng.integers(n))]]
    d2 = ((x - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        total = float(d2.sum())
        if total <= 1e-12:
            break
        idx = int(rng.choice(n, p=d2 / total))
        centers.append(x[idx])
        d2 = np.minimum(d2, ((x - x[idx]) ** 2).sum(1))
    c = np.stack(centers)
    labels = np.zeros(n, dtype=np.int64)
    x_sq = (x * x).sum(1)[:, None]
    for _ in range(iters):
        # squared distances as |x|^2 - 2 x.c + |c|^2: a matrix product, never an (n, k, dim) array
        dist = x_sq - 2.0 * (x @ c.T) + (c * c).sum(1)[None, :]
        new = dist.argmin(1)
        if _ > 0 and np.array_equal(new, labels):
            break
        labels = new
        for j in range(c.shape[0]):
            members = x[labels == j]
            if len(members):
                c[j] = members.mean(0)
    # canonical label order: by first member index
    order = {int(lab): i for i, lab in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[int(lab)] for lab in labels], dtype=np.int64)


def _chunk_by_projection(x: np.ndarray, idx: list[int], max_size: int) -> list[list[int]]:
    sub = x[idx] - x[idx].mean(0)
    if np.abs(sub).sum() > 1e-9:
        _, _, vt = np.linalg.svd(sub, full_matrices=False)
        proj = sub @ vt[0]
    else:
        proj = np.zeros(len(idx))
    order = [idx[i] for i in sorted(range(len(idx)), key=lambda i: (round(float(proj[i]), 9), idx[i]))]
    n_chunks = math.ceil(len(order) / max_size)
    base, extra = divmod(len(order), n_chunks)
    out, start = [], 0
    for c in range(n_chunks):
        size = base + (1 if c < extra else 0)
        out.append(order[start : start + size])
        start += size
    return out


def balanced_groups(x: np.ndarray, max_size: int, *, seed: int = 0) -> list[list[int]]:
    """Partition the rows of ``x`` into groups of at most ``max_size`` (sorted members, groups by first member).

    Examples:
        >>> import numpy as np
        >>> groups = balanced_groups(np.zeros((7, 3)), max_size=3)  # identical points: chunked, not stuck
        >>> [len(g) for g in groups]
        [3, 2, 2]
    """
    if max_size < 1:
        raise InvalidInputError(f"max_size must be >= 1, got {max_size}")
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if n == 0:
        return []
    out: list[list[int]] = []
    stack: list[list[int]] = [list(range(n))]
    while stack:
        idx = stack.pop()
        if len(idx) <= max_size:
            out.append(sorted(idx))
            continue
        k = math.ceil(len(idx) / max_size)
        labels = kmeans(x[idx], k, seed=seed)
        parts: dict[int, list[int]] = {}
        for i, lab in zip(idx, labels.tolist(), strict=True):
            parts.setdefault(int(lab), []).append(i)
        if len(parts) < 2:
            out.extend(sorted(p) for p in _chunk_by_projection(x, idx, max_size))
            continue
        stack.extend(parts.values())
    groups = sorted(out, key=lambda g: g[0])
    if len(groups) > max(1, math.ceil(0.75 * n)) and n > max_size:
        # k-means shattered the set into tiny groups: fall back to even chunks so the level shrinks.
        groups = sorted((sorted(g) for g in _chunk_by_projection(x, list(range(n)), max_size)), key=lambda g: g[0])
    return groups
