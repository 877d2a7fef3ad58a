"""Latent-score calibration: fit ``tau * s_obs ~ a * tau * theta_node + b_slate`` over all slates of a query.

The reference code (``CalibModel``, ``nilesh2797/llm-guided-retrieval`` ``src/calib_utils.py``) fits this with
AdamW (200 steps, pure weighted MSE at its default ``lambda_mse = 1``) and then uses ``a * theta`` normalised to a
maximum of 1. Since ``a`` and ``theta`` only appear as their product, the fit is linear in ``phi = a * theta`` and
the biases: we solve it in closed form with weighted least squares (numpy), weights ``max(sigmoid(s - 0.5),
floor)`` as in the code. The model's offset freedom (``phi + c``, ``b - c``) is fixed by a small ridge on the
biases, which mirrors the code's biases starting at 0. The calibrated score is ``phi / max(phi)`` (when the
maximum is positive).

Examples:
    >>> slates = [(["a", "b"], [0.9, 0.1]), (["b", "c"], [0.8, 0.2])]  # slate 2 is biased upwards
    >>> cal = fit_latent_scores(slates)
    >>> sorted(cal.scores, key=cal.scores.get, reverse=True)
    ['a', 'b', 'c']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.group_offsets import group_offsets

__all__ = ["Calibration", "fit_latent_scores"]


@dataclass(frozen=True)
class Calibration:
    """Result of a fit.

    Attributes:
        scores: calibrated latent score per node (``a * theta`` normalised to max 1).
        raw: ``a * theta`` before normalisation (on the ``0..1`` score scale).
        biases: fitted bias per slate (on the ``0..1`` score scale).

    Examples:
        >>> Calibration(scores={"a": 1.0}, raw={"a": 0.5}, biases=(0.0,)).scores["a"]
        1.0
    """

    scores: dict[str, float]
    raw: dict[str, float]
    biases: tuple[float, ...]


def fit_latent_scores(
    slates: Sequence[tuple[Sequence[str], Sequence[float]]],
    *,
    tau: float = 5.0,
    weight_floor: float = 0.1,
    bias_ridge: float = 0.01,
) -> Calibration:
    """Weighted least-squares fit of latent node scores from slates of observed ``0..1`` scores.

    Args:
        slates: ``(node ids, observed scores)`` per slate; a node may appear in many slates.
        tau: score scale of the model (reference ``pl_tau`` 5.0; it scales residuals and the bias ridge alike).
        weight_floor: lower bound of the per-score weight ``sigmoid(s - 0.5)``.
        bias_ridge: ridge on the slate biases (fixes the offset freedom).

    Examples:
        >>> fit_latent_scores([]).scores
        {}
        >>> fit_latent_scores([(["a"], [0.5, 0.2])])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: slate 0 has 1 ids but 2 scores
    """
    index: dict[str, int] = {}
    rows: list[tuple[int, int, float]] = []
    for si, (ids, scores) in enumerate(slates):
        if len(ids) != len(scores):
            raise InvalidInputError(f"slate {si} has {len(ids)} ids but {len(scores)} scores")
        for nid, s in zip(ids, scores, strict=True):
            rows.append((index.setdefault(nid, len(index)), si, float(s)))
    if not rows:
        return Calibration(scores={}, raw={}, biases=())
    n_nodes, n_slates = len(index), len(slates)
    phi, bias = _solve(rows, n_nodes, n_slates, tau=tau, weight_floor=weight_floor, bias_ridge=bias_ridge)
    biases = tuple(float(b) / tau for b in bias)
    top = float(phi.max())
    norm = phi / top if top > 1e-9 else phi
    ids = list(index)
    return Calibration(
        scores={nid: float(norm[i]) for i, nid in enumerate(ids)},
        raw={nid: float(phi[i]) for i, nid in enumerate(ids)},
        biases=biases,
    )


def _solve(
    rows: Sequence[tuple[int, int, float]],
    n_nodes: int,
    n_slates: int,
    *,
    tau: float,
    weight_floor: float,
    bias_ridge: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The weighted least-squares solution ``(node scores, slate biases)``.

    Each observed score is one row with two unknowns (its node's score times ``tau``, its slate's bias), and a ridge
    row per bias fixes the offset, so the normal equations are positive definite: nodes on the diagonal, slates in a
    small block. Eliminating the nodes leaves a slates-by-slates system (Schur complement), solved directly. Each
    node couples only the few slates it was shown in, so the complement is summed over the pairs of a node's own
    (node, slate) entries: the cost grows with the observations and the slates' square, not with nodes times
    slates, which a long search (hundreds of slates, thousands of nodes) would pay at every iteration.
    """
    ni = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    si = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    obs = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
    w = np.sqrt(np.maximum(1.0 / (1.0 + np.exp(-(obs - 0.5))), weight_floor))
    a_node, a_slate, y = tau * w, w, tau * obs * w
    d_node = np.bincount(ni, a_node * a_node, minlength=n_nodes)
    d_slate = np.bincount(si, a_slate * a_slate, minlength=n_slates) + max(bias_ridge, 1e-9)
    b_node = np.bincount(ni, a_node * y, minlength=n_nodes)
    b_slate = np.bincount(si, a_slate * y, minlength=n_slates)
    # the sparse node-by-slate coupling: one entry per (node, slate) pair seen, sorted by node
    pair, where = np.unique(ni * n_slates + si, return_inverse=True)
    cross = np.bincount(where.ravel(), a_node * a_slate, minlength=pair.size)
    node, slate = pair // n_slates, pair % n_slates
    per_node = np.bincount(node, minlength=n_nodes)
    first = np.cumsum(per_node) - per_node
    times = per_node[node]  # each entry pairs with every entry of its node, itself included
    left = np.repeat(np.arange(pair.size), times)
    right = first[node[left]] + group_offsets(times)
    coupling = np.bincount(
        slate[left] * n_slates + slate[right],
        cross[left] * cross[right] / d_node[node[left]],
        minlength=n_slates * n_slates,
    ).reshape(n_slates, n_slates)
    schur = np.diag(d_slate) - coupling
    rhs = b_slate - np.bincount(slate, cross * b_node[node] / d_node[node], minlength=n_slates)
    bias = np.linalg.solve(schur, rhs)
    phi = (b_node - np.bincount(node, cross * bias[slate], minlength=n_nodes)) / d_node
    return phi, bias
