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
    n_rows = len(rows) + n_slates
    a_mat = np.zeros((n_rows, n_nodes + n_slates))
    y = np.zeros(n_rows)
    for r, (ni, si, s) in enumerate(rows):
        w = np.sqrt(max(1.0 / (1.0 + np.exp(-(s - 0.5))), weight_floor))
        a_mat[r, ni] = tau * w
        a_mat[r, n_nodes + si] = w
        y[r] = tau * s * w
    lam = np.sqrt(max(bias_ridge, 1e-9))
    for si in range(n_slates):
        a_mat[len(rows) + si, n_nodes + si] = lam
    sol, *_ = np.linalg.lstsq(a_mat, y, rcond=None)
    phi = sol[:n_nodes]
    biases = tuple(float(b) / tau for b in sol[n_nodes:])
    top = float(phi.max())
    norm = phi / top if top > 1e-9 else phi
    ids = list(index)
    return Calibration(
        scores={nid: float(norm[i]) for i, nid in enumerate(ids)},
        raw={nid: float(phi[i]) for i, nid in enumerate(ids)},
        biases=biases,
    )
