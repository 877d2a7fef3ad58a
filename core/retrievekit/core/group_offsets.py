"""Each element's place within its group, for groups laid end to end: the index arithmetic of vectorised
group-by code (which inner point of a part, which partner of a node's entries).

Examples:
    >>> group_offsets([3, 0, 2]).tolist()
    [0, 1, 2, 0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["group_offsets"]


def group_offsets(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """``0, 1, ..., c - 1`` for each count ``c``, concatenated (``int64``).

    Examples:
        >>> group_offsets([1, 1, 4]).tolist()
        [0, 0, 0, 1, 2, 3]
        >>> group_offsets([]).tolist()
        []
    """
    sizes = np.asarray(counts, dtype=np.int64)
    return np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
