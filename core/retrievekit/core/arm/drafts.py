"""Expansion drafts: base objects plus, for each, its ``k`` best partners by ``relevance + compatibility``
(reference ``align_structure_expand.py``; one draft per ``k`` in ``expand_ks``, e.g. {3, 4, 5} for OTT-QA).

Partners come from the candidate pool (dense + BM25 top-N plus linked passages), not from the whole corpus: the
reference's all-pairs expansion is O(N^2) and was found infeasible by an independent reproduction
(``apostolhskouk/ARM``).

Examples:
    >>> import numpy as np
    >>> R = np.array([0.9, 0.2, 0.3, 0.1])
    >>> C = np.zeros((4, 4)); C[0, 3] = C[3, 0] = 0.9
    >>> expand([0], R, C, 1)
    [0, 3]
    >>> expand([0], R, C, 2)
    [0, 3, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["expand"]


def expand(base: Sequence[int], R: np.ndarray, C: np.ndarray, k: int) -> list[int]:
    """Base indices, then each base object's top-``k`` partners (not already in the list), in that order.

    Partners are ranked by ``R_j + C_bj`` (ties by index). ``k = 0`` returns the base itself.

    Examples:
        >>> expand([], np.zeros(2), np.zeros((2, 2)), 3)
        []
    """
    out = list(dict.fromkeys(int(b) for b in base))
    if k <= 0:
        return out
    n = len(R)
    for b in list(out):
        score = np.asarray(R, dtype=float) + np.asarray(C[b], dtype=float)
        order = sorted(range(n), key=lambda j: (-float(score[j]), j))
        added = 0
        for j in order:
            if added >= k:
                break
            if j == b or j in out:
                continue
            out.append(j)
            added += 1
    return out
