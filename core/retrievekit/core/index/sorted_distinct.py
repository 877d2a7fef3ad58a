"""The distinct values of a sorted run read at few positions: where two samples are equal, so is all between them.

A constrained decoder asks which tokens follow a prefix; in a suffix array those next tokens, over the prefix's
range of suffixes, are sorted, and a frequent prefix's range holds millions of suffixes but only thousands of
distinct next tokens. :func:`distinct_sorted` reads the two ends of the range, then splits every part whose ends
differ into :data:`BRANCH` pieces and reads their ends, until no part with differing ends has anything inside it.
Parts with equal ends are skipped whole. Reads grow with the number of distinct values times the depth of the
splitting (``log`` of the range over the distinct count, base :data:`BRANCH`), not with the range.

Examples:
    >>> import numpy as np
    >>> run = np.repeat([3, 5, 9], [1000, 1, 50000])
    >>> distinct_sorted(lambda p: run[p], 0, run.size).tolist()
    [3, 5, 9]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from retrievekit.core.group_offsets import group_offsets

__all__ = ["BRANCH", "DIRECT", "POINT_DIRECT", "distinct_sorted"]

BRANCH = 16
"""Pieces each part with differing ends is split into per round (parts this short are read whole)."""

DIRECT = 1 << 18
"""Runs this short are read whole (one gather costs less than the rounds of splitting)."""

POINT_DIRECT = 1 << 8
""":data:`DIRECT` where every position is a read of its own (a
:class:`~retrievekit.core.index.pread_array.PreadArray`): splitting reads fewer positions."""


def distinct_sorted(read: Callable[[np.ndarray], np.ndarray], lo: int, hi: int, *, direct: int = DIRECT) -> np.ndarray:
    """Sorted distinct values of a non-decreasing sequence whose values at positions ``[lo, hi)`` ``read`` returns
    (given an ``int64`` array of positions), reading far fewer than ``hi - lo`` positions when values repeat; a run
    of at most ``direct`` positions is read whole.

    Examples:
        >>> import numpy as np
        >>> seen = []
        >>> run = np.repeat(np.arange(4), 250_000)
        >>> def read(p):
        ...     seen.append(p.size)
        ...     return run[p]
        >>> distinct_sorted(read, 0, run.size).tolist(), sum(seen) < 1_000
        ([0, 1, 2, 3], True)
        >>> distinct_sorted(read, 5, 5).tolist()
        []
    """
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    if hi - lo <= direct:
        run = read(np.arange(lo, hi, dtype=np.int64))
        return run[np.concatenate(([True], run[1:] != run[:-1]))]
    a = np.asarray([lo], dtype=np.int64)  # parts [a, b], both ends read
    b = np.asarray([hi - 1], dtype=np.int64)
    va, vb = read(a), read(b)
    found = [va, vb]
    while True:
        todo = (va != vb) & (b - a > 1)  # equal ends: everything inside equals them
        a, b, va, vb = a[todo], b[todo], va[todo], vb[todo]
        if not a.size:
            return np.unique(np.concatenate(found))
        length = b - a
        inner = np.minimum(length - 1, BRANCH - 1)  # points read inside each part (all of a short one)
        whose = np.repeat(np.arange(a.size), inner)
        step = group_offsets(inner) + 1  # 1..inner within a part
        points = a[whose] + (step * length[whose]) // (inner[whose] + 1)
        values = read(points)
        found.append(values)
        # each part's ends with its inner points between them, then consecutive pairs within a part
        size = inner + 2
        start = np.cumsum(size) - size
        pos = np.empty(int(size.sum()), dtype=np.int64)
        val = np.empty(pos.size, dtype=values.dtype)
        pos[start], val[start] = a, va
        pos[start + size - 1], val[start + size - 1] = b, vb
        pos[start[whose] + step], val[start[whose] + step] = points, values
        pair = np.ones(pos.size - 1, dtype=bool)
        pair[(start + size - 1)[:-1]] = False  # the last point of a part and the first of the next are no pair
        a, b, va, vb = pos[:-1][pair], pos[1:][pair], val[:-1][pair], val[1:][pair]
