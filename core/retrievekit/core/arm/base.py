"""Base objects: ``score = 0.9 * dense + 0.1 * BM25``, each max-normalised over the candidate pool, top ``k``
(reference code ``peterbaile/arm``, base-object stage).

Examples:
    >>> fused = fuse_scores({"a": 0.8, "b": 0.4}, {"b": 10.0}, 0.9, 0.1)
    >>> {k: round(v, 3) for k, v in fused.items()}
    {'a': 0.9, 'b': 0.55}
    >>> top_k(fused, 1)
    ['a']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["fuse_scores", "max_normalise", "top_k"]


def max_normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """Divide by the maximum (negative scores become 0; all-zero stays zero).

    Examples:
        >>> max_normalise({"a": 2.0, "b": -1.0, "c": 1.0})
        {'a': 1.0, 'b': 0.0, 'c': 0.5}
        >>> max_normalise({"a": 0.0})
        {'a': 0.0}
    """
    top = max((v for v in scores.values()), default=0.0)
    if top <= 0:
        return {k: 0.0 for k in scores}
    return {k: max(0.0, float(v)) / top for k, v in scores.items()}


def fuse_scores(
    dense: Mapping[str, float],
    bm25: Mapping[str, float],
    dense_weight: float = 0.9,
    bm25_weight: float = 0.1,
    ids: Iterable[str] | None = None,
) -> dict[str, float]:
    """Weighted sum of max-normalised dense and BM25 scores over ``ids`` (default: the union; a missing score
    counts as 0).

    Examples:
        >>> fuse_scores({"a": 1.0}, {}, 0.9, 0.1)
        {'a': 0.9}
    """
    keys = list(dict.fromkeys(ids if ids is not None else [*dense, *bm25]))
    d = max_normalise({k: dense.get(k, 0.0) for k in keys})
    b = max_normalise({k: bm25.get(k, 0.0) for k in keys})
    return {k: dense_weight * d[k] + bm25_weight * b[k] for k in keys}


def top_k(scores: Mapping[str, float], k: int) -> list[str]:
    """The ``k`` best ids (ties by id, so the order is deterministic).

    Examples:
        >>> top_k({"b": 1.0, "a": 1.0, "c": 0.5}, 2)
        ['a', 'b']
    """
    return [i for i, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))[: max(k, 0)]]
