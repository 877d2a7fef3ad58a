"""A sequence of token ids, checked once where it enters an index: integers, in range, or a typed error naming it.

The token tries and suffix arrays take token ids from callers (a tokenizer's output, a list, a NumPy array). NumPy
would turn ``[1.5, 2]`` into ``[1, 2]`` and ``[2**64 - 1]`` into ``-1`` without a word, so every structure reads its
input through :func:`as_token_ids`: a float, a bool, a string or an id out of ``[0, 2**31)`` is an
:class:`~retrievekit.core.errors.InvalidInputError` that names the sequence, before anything is stored.

Examples:
    >>> as_token_ids([5, 6], "document 0").tolist()
    [5, 6]
    >>> as_token_ids([1.5], "document 3")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: document 3: token ids must be integers, got float64
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["BELOW", "as_token_ids", "as_token_tuple"]

BELOW = 1 << 31
"""Token ids are below ``2**31`` in every trie and suffix array (they are stored as ``int32`` where that saves
memory, and a merged table's codes of three tokens must fit an ``int64``); real vocabularies are far smaller."""


def as_token_ids(sequence: Sequence[int] | np.ndarray | Any, where: str, *, below: int = BELOW) -> np.ndarray:
    """``sequence`` as a 1-d ``int64`` array of ids in ``[0, below)``; :class:`InvalidInputError` starting with
    ``where`` for anything else (an empty sequence is returned empty).

    Examples:
        >>> as_token_ids(np.asarray([3], dtype=np.uint8), "id 'a'").dtype
        dtype('int64')
        >>> as_token_ids([1, 2**31], "sequence")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: sequence: token ids must be >= 0 and below 2**31, got 2147483648
    """
    if isinstance(sequence, (str, bytes)):
        raise InvalidInputError(f"{where}: token ids must be integers, got {type(sequence).__name__} {sequence!r:.40}")
    try:
        arr = np.asarray(sequence)
    except (TypeError, ValueError, OverflowError) as e:  # ragged or otherwise not an array of numbers
        raise InvalidInputError(f"{where}: token ids must be integers ({e})") from e
    if arr.ndim == 0 and arr.dtype.kind == "O" and hasattr(sequence, "__next__"):  # a generator: read it once
        return as_token_ids(list(sequence), where, below=below)
    if arr.ndim != 1 and arr.size:
        raise InvalidInputError(f"{where}: token ids must be one flat sequence, got shape {arr.shape}")
    if not arr.size:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "O":  # Python objects: ints past 64 bits, or anything at all
        items = arr.tolist()
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
            raise InvalidInputError(f"{where}: token ids must be integers, got object")
        arr = np.asarray([x if 0 <= x < below else -1 for x in items], dtype=np.int64)  # -1: out of range
        if (arr < 0).any():
            worst = items[int(np.argmax(arr < 0))]
            raise InvalidInputError(f"{where}: token ids must be >= 0 and below {_power(below)}, got {worst}")
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{where}: token ids must be integers, got {arr.dtype}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high >= below:
        raise InvalidInputError(
            f"{where}: token ids must be >= 0 and below {_power(below)}, got {low if low < 0 else high}"
        )
    return arr.astype(np.int64, copy=False).reshape(-1)


def _power(n: int) -> str:
    return f"2**{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def as_token_tuple(sequence: Sequence[int] | np.ndarray | Any, where: str, *, below: int = BELOW) -> tuple[int, ...]:
    """:func:`as_token_ids` as a tuple of ints (a trie's key), with a quick path for a list or tuple of plain ints
    in range (a title: no array made).

    Examples:
        >>> as_token_tuple([5, 6], "a sequence"), as_token_tuple(np.asarray([7]), "a sequence")
        ((5, 6), (7,))
    """
    if isinstance(sequence, (tuple, list)):
        ids = tuple(sequence)
        if all(type(x) is int for x in ids) and (not ids or 0 <= min(ids) <= max(ids) < below):
            return ids
    return tuple(as_token_ids(sequence, where, below=below).tolist())
