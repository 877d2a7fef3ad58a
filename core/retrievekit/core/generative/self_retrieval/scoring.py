"""Self-assessment scoring of Self-Retrieval (pure numpy; paper §3.4, reference ``get_retrieve_from_generation.py``).

For titles ``t_1..t_m`` (length-normalised beam log-probabilities ``l_i``) and, per title, passages with the mean
token cross-entropy ``L_ij`` of the rejection response after them:

* ``S^T_i = softmax_i(exp(l_i) / tau)`` -- the reference softmaxes the title *probability* (``exp`` of the
  sequence score), as the paper's ``Softmax(P(t|q)/tau)``;
* ``s_ij = 1 - exp(-L_ij)`` (about ``1 - P(rejection)``);
* ``S^P_ij = softmax_j(s_ij / delta)`` over the passages of title ``i``;
* ``S_ij = S^T_i * S^P_ij``.

The first-token passage scores of the decoding are not used (as in the reference).

Examples:
    >>> out = combine_scores([-0.5, -1.0], [[2.0, 0.1], [1.0]], tau=0.4, delta=0.4)
    >>> [round(float(x), 4) for x in out[0]], [round(float(x), 4) for x in out[1]]
    ([0.5627, 0.0822], [0.3551])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["assessment_score", "combine_scores", "softmax"]


def softmax(x: Sequence[float] | np.ndarray) -> np.ndarray:
    """Numerically stable softmax of a 1-D array (empty in, empty out).

    Examples:
        >>> softmax([0.0, 0.0]).tolist()
        [0.5, 0.5]
    """
    a = np.asarray(x, dtype=np.float64)
    if a.size == 0:
        return a
    e = np.exp(a - a.max())
    return np.asarray(e / e.sum())


def assessment_score(rejection_ce: Sequence[float] | np.ndarray) -> np.ndarray:
    """``s = 1 - exp(-L)`` for mean rejection cross-entropies ``L`` (high when the model would not reject).

    Examples:
        >>> assessment_score([0.0, np.log(2)]).tolist()
        [0.0, 0.5]
    """
    ce = np.asarray(rejection_ce, dtype=np.float64)
    if np.any(ce < 0) or not np.all(np.isfinite(ce)):
        raise InvalidInputError("rejection cross-entropies must be finite and >= 0")
    return np.asarray(1.0 - np.exp(-ce))


def combine_scores(
    title_scores: Sequence[float],
    rejection_ce: Sequence[Sequence[float]],
    *,
    tau: float = 0.4,
    delta: float = 0.4,
) -> list[np.ndarray]:
    """Final scores ``S^T_i * S^P_ij``, one array per title (same order and lengths as ``rejection_ce``).

    Raises:
        InvalidInputError: lengths differ, or a temperature is not positive.

    Examples:
        >>> [a.tolist() for a in combine_scores([-1.0], [[0.5, 0.5]])]
        [[0.5, 0.5]]
    """
    if len(title_scores) != len(rejection_ce):
        raise InvalidInputError(f"{len(title_scores)} title scores but {len(rejection_ce)} passage groups")
    if not (tau > 0 and delta > 0):
        raise InvalidInputError(f"tau and delta must be > 0, got {tau}, {delta}")
    st = softmax(np.exp(np.asarray(title_scores, dtype=np.float64)) / tau)
    out = []
    for i, group in enumerate(rejection_ce):
        sp = softmax(assessment_score(group) / delta)
        out.append(st[i] * sp)
    return out
