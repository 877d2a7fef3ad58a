"""Which tokens follow each token (or each run of two) anywhere in a corpus: sorted distinct codes, kept at build.

A constrained decoder's most frequent questions are the short prefixes ("what may follow *the*?", "... *of the*?"),
and in a suffix array their answers sit over the prefix's whole range of suffixes: millions of positions in a large
corpus, for a few thousand distinct answers, read at as many places of the text. :class:`Followers` answers them as
one slice of the corpus's distinct runs of ``order + 1`` tokens (``order`` 1: token pairs, 2: triples), and the
table of several shards merges into one, so a sharded corpus answers with one slice instead of one read per shard
(and a table on disk with a binary search, a few pages, instead of reads all over the text). It holds at most 8 bytes
per token (one ``int64`` per distinct run).

Examples:
    >>> f = Followers.of(np.asarray([2, 3, 0, 2, 4, 0]))  # stored ids, 0 between documents
    >>> f.after(2).tolist(), f.after(3).tolist(), f.after(9).tolist()
    ([3, 4], [0], [])
    >>> Followers.of(np.asarray([2, 3, 5, 0, 2, 3, 0]), order=2).after(2, 3).tolist()
    [0, 5]
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import numpy as np

from retrievekit.core.index.pread_array import PreadArray

__all__ = ["Followers"]

_MAX_CODE = np.iinfo(np.int64).max


def _distinct(codes: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``codes`` (sorted in place): NumPy 2.4's ``np.unique`` hashes instead, 19 times
    slower on 20M codes of which most are distinct."""
    codes.sort()
    return codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if codes.size else codes


class Followers:
    """The sorted distinct runs of ``order`` tokens and the token after them in token arrays, as one ``int64`` code
    each (``((t0 * base) + t1) * base + ... + next``).

    Examples:
        >>> a, b = Followers.of(np.asarray([1, 2, 0])), Followers.of(np.asarray([1, 5, 0]))
        >>> Followers.merge([a, b]).after(1).tolist()
        [2, 5]
    """

    def __init__(self, codes: np.ndarray | PreadArray, base: int, order: int = 1) -> None:
        self.codes = codes
        self.base = base
        self.order = order

    @staticmethod
    def fits(base: int, order: int) -> bool:
        """Whether runs of ``order + 1`` tokens below ``base`` have ``int64`` codes.

        Examples:
            >>> Followers.fits(50_000, 2), Followers.fits(2**31, 2)
            (True, False)
        """
        return base ** (order + 1) <= _MAX_CODE

    @classmethod
    def of(cls, text: np.ndarray, order: int = 1) -> Followers:
        """The runs of ``order + 1`` adjacent tokens of ``text`` (non-negative ids; 0, the documents' separator,
        is never inside a run's first ``order`` tokens); :class:`ValueError` when their codes would not fit
        (:meth:`fits`).

        Examples:
            >>> Followers.of(np.asarray([1, 1, 1])).after(1).tolist()
            [1]
        """
        base = int(text.max(initial=0)) + 1
        if not cls.fits(base, order):
            raise ValueError(f"token ids up to {base - 1} do not fit a code of {order + 1} tokens")
        if text.size <= order:
            return cls(np.zeros(0, dtype=np.int64), base, order)
        n = text.size - order
        codes = text[:n].astype(np.int64)
        inside = text[:n] != 0
        for j in range(1, order + 1):
            codes *= base
            codes += text[j : j + n]
            if j < order:
                inside &= text[j : j + n] != 0
        return cls(_distinct(codes[inside]), base, order)

    @classmethod
    def merge(cls, parts: Sequence[Followers]) -> Followers:
        """One table for several of the same order (the union of their runs).

        Examples:
            >>> Followers.merge([Followers.of(np.asarray([3, 1])), Followers.of(np.asarray([7, 2]))]).after(7).tolist()
            [2]
        """
        base, order = max((p.base for p in parts), default=1), parts[0].order if parts else 1
        if not cls.fits(base, order):
            raise ValueError(f"token ids up to {base - 1} do not fit a code of {order + 1} tokens")
        codes: list[np.ndarray] = []
        for p in parts:  # each part's digits again, in the common base
            held: np.ndarray = p.codes[:]  # a view of an array in memory; a table left in its file is read whole
            if p.base == base:
                codes.append(held)
                continue
            digits, rest = [], held
            for _ in range(order + 1):
                digits.append(rest % p.base)
                rest = rest // p.base
            code = np.zeros(held.size, dtype=np.int64)
            for d in reversed(digits):
                code = code * base + d
            codes.append(code)
        return cls(_distinct(np.concatenate(codes)) if codes else np.zeros(0, dtype=np.int64), base, order)

    def after(self, *tokens: int) -> np.ndarray:
        """Sorted distinct tokens that follow the run ``tokens`` (``order`` of them; empty when the run never
        occurs with a follower).

        Examples:
            >>> Followers.of(np.asarray([4, 6, 4, 5])).after(4).tolist()
            [5, 6]
        """
        if len(tokens) != self.order:
            raise ValueError(f"a table of order {self.order} is asked after {len(tokens)} tokens")
        key = 0
        for t in tokens:
            if not 0 <= t < self.base:
                return np.zeros(0, dtype=np.int64)
            key = key * self.base + int(t)
        first, stop, codes = key * self.base, (key + 1) * self.base, self.codes
        if isinstance(codes, np.ndarray):
            lo, hi = (int(i) for i in np.searchsorted(codes, [first, stop]))
        else:  # a table left in its file: a binary search of point reads
            lo = bisect_left(codes, first)
            hi = bisect_left(codes, stop, lo)
        return codes[lo:hi] - first

    @classmethod
    def grown(cls, tables: list[Followers] | None, text: np.ndarray, orders: int = 2) -> list[Followers]:
        """The tables of orders ``1..orders`` of the texts seen so far (``None`` before the first) with ``text``'s
        runs added: one table each for all of a corpus's shards. A table whose codes the token ids outgrow
        (:meth:`fits`) is left out from then on (a shorter list; the pairs always fit an ``int64`` token id + 1).

        Examples:
            >>> t = Followers.grown(None, np.asarray([1, 2, 3, 0]))
            >>> t = Followers.grown(t, np.asarray([1, 2, 4, 0]))
            >>> [f.order for f in t], t[0].after(1).tolist(), t[1].after(1, 2).tolist()
            ([1, 2], [2], [3, 4])
        """
        base = max([int(text.max(initial=0)) + 1, *(t.base for t in tables or [])])
        kept = orders if tables is None else len(tables)
        out = []
        for order in range(1, kept + 1):
            if order > 1 and not cls.fits(base, order):
                break
            found = cls.of(text, order)
            out.append(found if tables is None else cls.merge([tables[order - 1], found]))
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held.

        Examples:
            >>> Followers.of(np.asarray([1, 2, 1, 2])).nbytes
            16
        """
        return int(self.codes.nbytes)
