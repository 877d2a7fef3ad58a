"""Which tokens follow each token anywhere in a corpus: the sorted distinct pairs, kept once at build.

A constrained decoder's most frequent question is the one-token prefix ("what may follow *the*?"), and in a suffix
array its answer sits over the token's whole range of suffixes: millions of positions in a large corpus, for a
few thousand distinct answers. :class:`Followers` answers it as a slice of the corpus's distinct token pairs, and
the table of several shards merges into one, so a sharded corpus answers with one slice instead of one read per
shard. It holds at most 8 bytes per token (one ``int64`` per distinct pair).

Examples:
    >>> f = Followers.of(np.asarray([2, 3, 0, 2, 4, 0]))  # stored ids, 0 between documents
    >>> f.after(2).tolist(), f.after(3).tolist(), f.after(9).tolist()
    ([3, 4], [0], [])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Followers"]


class Followers:
    """The sorted distinct ``(token, next token)`` pairs of token arrays, as one ``int64`` code each.

    Examples:
        >>> a, b = Followers.of(np.asarray([1, 2, 0])), Followers.of(np.asarray([1, 5, 0]))
        >>> Followers.merge([a, b]).after(1).tolist()
        [2, 5]
    """

    def __init__(self, codes: np.ndarray, base: int) -> None:
        self.codes = codes
        self.base = base

    @classmethod
    def of(cls, text: np.ndarray) -> Followers:
        """The pairs of adjacent tokens in ``text`` (non-negative ids; codes ``token * base + next``).

        Examples:
            >>> Followers.of(np.asarray([1, 1, 1])).after(1).tolist()
            [1]
        """
        base = int(text.max(initial=0)) + 1
        if text.size < 2:
            return cls(np.zeros(0, dtype=np.int64), base)
        return cls(np.unique(text[:-1].astype(np.int64) * base + text[1:]), base)

    @classmethod
    def merge(cls, parts: Sequence[Followers]) -> Followers:
        """One table for several (the union of their pairs).

        Examples:
            >>> Followers.merge([Followers.of(np.asarray([3, 1])), Followers.of(np.asarray([7, 2]))]).after(7).tolist()
            [2]
        """
        base = max((p.base for p in parts), default=1)
        codes = [(p.codes // p.base) * base + p.codes % p.base for p in parts]
        return cls(np.unique(np.concatenate(codes)) if codes else np.zeros(0, dtype=np.int64), base)

    def after(self, token: int) -> np.ndarray:
        """Sorted distinct tokens that follow ``token`` (empty when it never occurs with a follower).

        Examples:
            >>> Followers.of(np.asarray([4, 6, 4, 5])).after(4).tolist()
            [5, 6]
        """
        if not 0 <= token < self.base:
            return np.zeros(0, dtype=np.int64)
        lo, hi = np.searchsorted(self.codes, [token * self.base, (token + 1) * self.base])
        return self.codes[lo:hi] - token * self.base

    @property
    def nbytes(self) -> int:
        """Bytes held.

        Examples:
            >>> Followers.of(np.asarray([1, 2, 1, 2])).nbytes
            16
        """
        return int(self.codes.nbytes)
