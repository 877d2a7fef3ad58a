"""Where a number goes in a sorted array, without copying the array: :func:`insertion_point`.

NumPy 2's ``np.searchsorted(array, value)`` with a Python ``int`` and an ``int32`` (or any narrower) array converts the
whole array first, at every call: time in proportion to the array instead of its logarithm. Index folders keep their
row and token arrays as ``int32`` (memory-mapped, or read with ``pread``: a :class:`PreadArray` searches itself), so
every lookup by number goes through here.

Examples:
    >>> import numpy as np
    >>> rows = np.array([2, 5, 9], dtype=np.int32)
    >>> insertion_point(rows, 5), insertion_point(rows, 6), insertion_point(rows, 2**40), insertion_point(rows, -2**40)
    (1, 2, 3, 0)
"""

from __future__ import annotations

import numpy as np

from retrievekit.core.index.pread_array import PreadArray

__all__ = ["insertion_point"]


def insertion_point(array: np.ndarray | PreadArray, value: int) -> int:
    """``np.searchsorted(array, value)`` (the left insertion point in a sorted 1-d integer array), with ``value``
    given as the array's own type so the array is never converted; a value outside that type's range goes before or
    after every element. Example: the module docstring."""
    info = np.iinfo(array.dtype)
    if value < info.min:
        return 0
    if value > info.max:
        return int(array.size)
    if isinstance(array, PreadArray):  # left in its file: one read past the fence it keeps in memory
        return array.insertion_point(array.dtype.type(value))
    return int(np.searchsorted(array, array.dtype.type(value)))
