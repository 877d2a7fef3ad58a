"""A token-level suffix array: the FM-index role of constrained passage decoding.

:class:`TokenSuffixArray` indexes a few token-id documents (pydivsufsort over an integer array; documents are
separated by a sentinel so no match crosses a document boundary) and answers, from the prefix alone:

* :meth:`~TokenSuffixArray.allowed` -- which tokens follow ``prefix`` somewhere in the documents (the allowed-next
  set of a constrained decoder; stateless, hence beam-safe);
* :meth:`~TokenSuffixArray.locate` -- where ``prefix`` occurs, as ``(document, token offset)`` pairs;
* :meth:`~TokenSuffixArray.count` -- how often it occurs.

Each query finds the prefix's range of suffixes (its first token's from the token counts, then two scalar binary
searches a further token: ``O(m log n)`` for an ``m``-token prefix) and reads the next tokens over that range. They
are sorted there, so :func:`~retrievekit.core.index.sorted_distinct.distinct_sorted` reads only around the places
where they change; a one-token prefix, the most frequent question and the one with the largest range, is answered
from the corpus's distinct token pairs (:class:`~retrievekit.core.index.bigram_followers.Followers`) without
reading the range at all. The array remembers the range of every prefix it was asked (up to 8,192 prefixes), and a
prefix one token longer than a remembered one is found inside its parent's range, so a beam, one token longer at
each step, costs ``O(log n)`` a step. Memory is 16 bytes per token (text and suffix array as ``int64``) plus 8 per
distinct token pair (at most 24 bytes per token); a corpus above ``max_tokens`` raises
:class:`SuffixArrayTooLargeError` before allocating anything, and :class:`ShardedTokenSuffixArray` splits a large
corpus into shards that each stay under a limit, with the same query API and, for all shards, one table of the
distinct token pairs and one of the distinct runs of three tokens, so that a one- or two-token prefix is one slice
of a table, not a search in every shard.

Examples:
    >>> sa = TokenSuffixArray([[5, 6, 7, 6, 8], [6, 9]])
    >>> sa.allowed([]), sa.allowed([6]), sa.allowed([6, 7]), sa.allowed([4])
    ([5, 6, 7, 8, 9], [7, 8, 9], [6], [])
    >>> sa.locate([6]), sa.count([6])
    ([(0, 1), (0, 3), (1, 0)], 3)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.index.bigram_followers import Followers
from retrievekit.core.index.insertion_point import insertion_point
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.index.sorted_distinct import DIRECT, POINT_DIRECT, distinct_sorted
from retrievekit.core.index.token_ids import as_token_ids

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "ShardedTokenSuffixArray",
    "SuffixArrayTooLargeError",
    "TokenSuffixArray",
    "shard_batches",
]

DEFAULT_MAX_TOKENS = 20_000_000
"""Default cap on indexed tokens (320 to 480 MB of arrays); raise it, or shard, for bigger corpora."""

#: How many asked prefixes a suffix array remembers the range of (cleared when full; 50 beams over 16 steps ask for
#: at most 800).
_RANGE_CACHE = 1 << 13
_SENTINEL = 0  # tokens are stored as id + 1, so 0 separates documents and sorts before every token
_EMPTY = np.zeros(0, dtype=np.int64)


def _allowed(following: np.ndarray, eos_token_id: int | None) -> np.ndarray:
    """Token ids from the sorted stored ids that follow a prefix (the sentinel, a document's end, sorts first)."""
    toks = (following[1:] if following.size and following[0] == _SENTINEL else following).astype(np.int64) - 1
    if eos_token_id is not None:
        toks = np.union1d(toks, np.asarray([eos_token_id], dtype=np.int64))
    return toks


class SuffixArrayTooLargeError(InvalidInputError, MemoryError):
    """A corpus with more tokens than the suffix array is allowed to hold in memory.

    Examples:
        >>> isinstance(SuffixArrayTooLargeError("too big"), MemoryError)
        True
    """


def _divsufsort() -> Any:
    try:
        from pydivsufsort import divsufsort
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise MissingDependencyError("pydivsufsort", 'pip install "retrievekit[local]"', str(e)) from e
    return divsufsort


def shard_batches(
    documents: Iterable[Sequence[int] | np.ndarray], shard_tokens: int
) -> Iterator[tuple[int, list[np.ndarray]]]:
    """Consecutive runs of ``documents`` of at most ``shard_tokens`` tokens each, as ``(index of the run's first
    document, its documents as int64 arrays)``, read one document at a time (at least one run, empty for no
    documents); a document longer than ``shard_tokens`` is a :class:`SuffixArrayTooLargeError`.

    Examples:
        >>> [(first, [d.tolist() for d in run]) for first, run in shard_batches([[1, 2], [3], [4, 5]], 3)]
        [(0, [[1, 2], [3]]), (2, [[4, 5]])]
    """
    batch: list[np.ndarray] = []
    size = first = 0
    for i, doc in enumerate(documents):
        ids = as_token_ids(doc, f"document {i}")
        if ids.size > shard_tokens:
            raise SuffixArrayTooLargeError(
                f"document {i} has {ids.size} tokens, more than shard_tokens={shard_tokens}; raise shard_tokens"
            )
        if batch and size + ids.size > shard_tokens:
            yield first, batch
            first, batch, size = i, [], 0
        batch.append(ids)
        size += int(ids.size)
    yield first, batch  # the last run (never empty but for no documents at all)


class TokenSuffixArray:
    """Suffix array over token-id documents (the continuation / locate queries of an FM-index).

    Args:
        documents: token-id sequences; empty documents are allowed (they match nothing but keep their index).
        eos_token_id: when set, EOS is also allowed after any non-empty prefix that occurs (a generation may stop
            anywhere); ``None`` (the default, as in MindRef's reference code) never allows it.
        max_tokens: refuse to index more tokens than this (:class:`SuffixArrayTooLargeError`).
        followers: keep the table of distinct token pairs that answers one-token prefixes (a
            :class:`ShardedTokenSuffixArray` keeps one table for all its shards instead).

    Raises:
        SuffixArrayTooLargeError: more than ``max_tokens`` tokens (or the allocation fails).
        InvalidInputError: token ids that are not integers >= 0 (naming the document).

    Examples:
        >>> sa = TokenSuffixArray([[1, 2, 3], []], eos_token_id=0)
        >>> sa.allowed([2]), sa.allowed([3]), sa.num_documents
        ([0, 3], [0], 2)
    """

    def __init__(
        self,
        documents: Sequence[Sequence[int] | np.ndarray],
        *,
        eos_token_id: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        followers: bool = True,
    ) -> None:
        docs = [as_token_ids(d, f"document {i}") for i, d in enumerate(documents)]
        total = sum(int(d.size) for d in docs)
        if total > max_tokens:
            raise SuffixArrayTooLargeError(
                f"{total} tokens in {len(docs)} documents exceed max_tokens={max_tokens} "
                f"(~{16 * total / 1e6:.0f} to {24 * total / 1e6:.0f} MB of arrays); raise max_tokens if memory allows, or use "
                "ShardedTokenSuffixArray(documents, shard_tokens=...)"
            )
        self.eos_token_id = eos_token_id
        self.max_tokens = max_tokens
        lengths = np.asarray([d.size for d in docs], dtype=np.int64)
        self._doc_len = lengths
        self._doc_start = np.concatenate([[0], np.cumsum(lengths + 1)])[: len(docs)].astype(np.int64)
        try:
            parts: list[np.ndarray] = []
            for d in docs:
                parts.append(d + 1)
                parts.append(np.zeros(1, dtype=np.int64))
            self._text = np.concatenate(parts) if parts else np.zeros(1, dtype=np.int64)
            del parts, docs  # the text holds them now: not kept through the sort
            divsufsort = _divsufsort()
            self._sa = np.asarray(divsufsort(self._text), dtype=np.int64)
        except MemoryError as e:
            raise SuffixArrayTooLargeError(
                f"not enough memory for a suffix array over {total} tokens; shard the corpus "
                "(ShardedTokenSuffixArray) or lower max_tokens"
            ) from e
        vocab, counts = np.unique(self._text, return_counts=True)
        # suffixes sort by their first token, so a one-token prefix's range is where that token's count starts
        self._stored, self._starts = vocab, np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self._followers = Followers.of(self._text) if followers else None
        self._ranges: dict[tuple[int, ...], tuple[int, int]] = {}
        self._vocab_ids: np.ndarray | None = None

    @classmethod
    def _of_arrays(
        cls,
        arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        followers: Followers | None,
        *,
        eos_token_id: int | None,
        max_tokens: int,
    ) -> TokenSuffixArray:
        """An array from its saved parts ``(text, suffix array, document lengths, stored tokens, their starts)``,
        as they are (memory-mapped ones stay mapped): no sort, nothing read but the document lengths."""
        out = cls.__new__(cls)
        out._text, out._sa, out._doc_len, out._stored, out._starts = arrays
        out.eos_token_id, out.max_tokens, out._followers = eos_token_id, max_tokens, followers
        lengths = np.asarray(out._doc_len, dtype=np.int64)
        out._doc_start = np.concatenate([[0], np.cumsum(lengths + 1)])[: lengths.size].astype(np.int64)
        out._ranges, out._vocab_ids = {}, None
        return out

    @property
    def _vocab(self) -> np.ndarray:
        """The distinct token ids held (sorted), made at the first question that needs them."""
        if self._vocab_ids is None:
            self._vocab_ids = self._stored[self._stored != _SENTINEL].astype(np.int64) - 1
        return self._vocab_ids

    # ------------------------------------------------------------------ basics
    @property
    def num_documents(self) -> int:
        """Number of indexed documents (empty ones included).

        Examples:
            >>> TokenSuffixArray([[1], []]).num_documents
            2
        """
        return int(self._doc_len.size)

    @property
    def num_tokens(self) -> int:
        """Number of indexed tokens (sentinels excluded).

        Examples:
            >>> TokenSuffixArray([[1, 2], [3]]).num_tokens
            3
        """
        return int(self._doc_len.sum())

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays.

        Examples:
            >>> TokenSuffixArray([[1, 2]]).nbytes > 0
            True
        """
        held = self._text.nbytes + self._sa.nbytes + self._doc_start.nbytes + self._doc_len.nbytes
        return int(held + (self._followers.nbytes if self._followers is not None else 0))

    def document(self, index: int) -> np.ndarray:
        """Token ids of document ``index``.

        Examples:
            >>> TokenSuffixArray([[4, 5]]).document(0).tolist()
            [4, 5]
        """
        if not 0 <= index < self.num_documents:
            raise InvalidInputError(f"document index {index} out of range [0, {self.num_documents})")
        start = int(self._doc_start[index])
        return self._text[start : start + int(self._doc_len[index])].astype(np.int64) - 1

    # ------------------------------------------------------------------ search
    def _token_range(self, token: int) -> tuple[int, int]:
        """The range of the suffixes starting with ``token`` (stored id), from the token counts: no search."""
        i = insertion_point(self._stored, token)
        if i < self._stored.size and int(self._stored[i]) == token:
            return int(self._starts[i]), int(self._starts[i + 1])
        return 0, 0

    def _narrow(self, lo: int, hi: int, depth: int, token: int) -> tuple[int, int]:
        """The part of ``[lo, hi)`` (suffixes sharing their first ``depth`` tokens) whose next token is ``token``
        (stored id): the next tokens are sorted within the range, so two scalar binary searches find it."""
        text = self._text

        def next_token(pos: Any) -> int:
            return int(text[int(pos) + depth])

        first = bisect_left(self._sa, token, lo, hi, key=next_token)
        return first, bisect_right(self._sa, token, first, hi, key=next_token)

    def _find(self, prefix: Sequence[int]) -> tuple[int, int]:
        """Interval of ``prefix`` (ids as given), narrowed from its parent's when that one is remembered."""
        key = tuple(map(int, prefix))
        found = self._ranges.get(key)
        if found is not None:
            return found
        if not key:
            found = 0, int(self._sa.size)
        elif min(key) < 0:
            found = 0, 0  # a negative id (padding) never occurs
        else:
            parent = self._ranges.get(key[:-1]) if len(key) > 1 else None
            if parent is None:  # the first token's range from the counts, then narrowed one token at a time
                found = self._token_range(key[0] + 1)
                for depth in range(1, len(key)):
                    if found[0] == found[1]:
                        break
                    found = self._narrow(found[0], found[1], depth, key[depth] + 1)
            elif parent[0] == parent[1]:
                found = parent
            else:
                found = self._narrow(parent[0], parent[1], len(key) - 1, key[-1] + 1)
        if len(self._ranges) >= _RANGE_CACHE:
            self._ranges.clear()
        self._ranges[key] = found
        return found

    def range(self, prefix: Sequence[int]) -> tuple[int, int]:
        """Half-open suffix-array interval of the suffixes starting with ``prefix``.

        Examples:
            >>> lo, hi = TokenSuffixArray([[1, 2, 1]]).range([1])
            >>> hi - lo
            2
        """
        return self._find(prefix)

    def count(self, prefix: Sequence[int]) -> int:
        """Number of occurrences of ``prefix`` (0 for the empty prefix).

        Examples:
            >>> TokenSuffixArray([[1, 2, 1], [1]]).count([1])
            3
        """
        if len(prefix) == 0:
            return 0
        lo, hi = self.range(prefix)
        return hi - lo

    def allowed_array(self, prefix: Sequence[int]) -> np.ndarray:
        """Sorted distinct token ids that follow ``prefix`` somewhere (``int64`` array).

        The empty prefix allows every token that occurs; a prefix that occurs nowhere allows nothing.

        Examples:
            >>> TokenSuffixArray([[1, 2], [1, 3]]).allowed_array([1]).tolist()
            [2, 3]
        """
        lo, hi = self._find(prefix)
        if lo == hi:
            return _EMPTY
        depth = len(prefix)
        if depth == 0:
            return self._vocab
        if depth == 1 and self._followers is not None:
            return _allowed(self._followers.after(int(prefix[0]) + 1), self.eos_token_id)
        sa, text = self._sa, self._text
        # sorted: the suffixes share their first `depth` tokens; read where the next tokens change
        direct = POINT_DIRECT if isinstance(text, PreadArray) else DIRECT  # a position read costs a pread there
        return _allowed(distinct_sorted(lambda pos: text[sa[pos] + depth], lo, hi, direct=direct), self.eos_token_id)

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """:meth:`allowed_array` as a list of ints (the ``allowed_tokens`` signature).

        Examples:
            >>> TokenSuffixArray([[7, 8, 9]]).allowed([7, 8])
            [9]
        """
        return [int(x) for x in self.allowed_array(prefix)]

    def __call__(self, prefix: Sequence[int]) -> list[int]:
        """Same as :meth:`allowed`, so the array can be passed directly as ``allowed_tokens``.

        Examples:
            >>> TokenSuffixArray([[7, 8]])([7])
            [8]
        """
        return self.allowed(prefix)

    def locate(self, prefix: Sequence[int]) -> list[tuple[int, int]]:
        """Every occurrence of ``prefix`` as ``(document index, token offset)``, sorted.

        Examples:
            >>> TokenSuffixArray([[3, 4, 3], [9, 3]]).locate([3])
            [(0, 0), (0, 2), (1, 1)]
        """
        if len(prefix) == 0:
            raise InvalidInputError("cannot locate the empty prefix (it occurs everywhere)")
        lo, hi = self.range(prefix)
        if lo == hi:
            return []
        pos = np.sort(self._sa[lo:hi])
        doc = np.searchsorted(self._doc_start, pos, side="right") - 1
        off = pos - self._doc_start[doc]
        return [(int(d), int(o)) for d, o in zip(doc, off, strict=True)]

    def first_occurrence(self, prefix: Sequence[int], document: int) -> int | None:
        """Token offset of the first occurrence of ``prefix`` in ``document`` (``None`` when absent).

        Examples:
            >>> TokenSuffixArray([[3, 4, 3], [9, 3]]).first_occurrence([3], 1)
            1
        """
        for d, off in self.locate(prefix):
            if d == document:
                return off
        return None

    def __repr__(self) -> str:
        return f"TokenSuffixArray(<{self.num_documents} documents, {self.num_tokens} tokens>)"


class ShardedTokenSuffixArray:
    """Several :class:`TokenSuffixArray` shards behind one API, for corpora above one array's ``max_tokens``.

    Documents are packed in order into shards of at most ``shard_tokens`` tokens; answers are merged (``allowed``
    is the union, ``locate`` maps back to global document indices). A one- or two-token prefix's ``allowed`` is read
    from the shards' merged tables of distinct runs of two and three tokens (up to 16 bytes a token more), one slice
    for all shards. A single document longer than ``shard_tokens`` raises :class:`SuffixArrayTooLargeError`.

    Examples:
        >>> sh = ShardedTokenSuffixArray([[1, 2], [1, 3], [2, 1]], shard_tokens=4)
        >>> sh.num_shards, sh.allowed([1]), sh.locate([1])
        (2, [2, 3], [(0, 0), (1, 0), (2, 1)])
    """

    def __init__(
        self,
        documents: Sequence[Sequence[int] | np.ndarray],
        *,
        shard_tokens: int = DEFAULT_MAX_TOKENS,
        eos_token_id: int | None = None,
    ) -> None:
        if shard_tokens < 1:
            raise InvalidInputError(f"shard_tokens must be >= 1, got {shard_tokens}")
        self.eos_token_id = eos_token_id
        self._shards: list[TokenSuffixArray] = []
        self._offsets: list[int] = []
        for first, batch in shard_batches(documents, shard_tokens):
            self._add(batch, first, shard_tokens)
        tables: list[Followers] | None = None
        for shard in self._shards:  # one table of pairs and one of triples for all shards
            tables = Followers.grown(tables, shard._text)
        self._tables: list[Followers] = tables or []

    @classmethod
    def _of_shards(
        cls, shards: list[TokenSuffixArray], tables: list[Followers], *, eos_token_id: int | None
    ) -> ShardedTokenSuffixArray:
        """Shards already made (opened from a folder, say) and their merged tables (:meth:`Followers.grown`), as one
        array: nothing sorted."""
        out = cls.__new__(cls)
        out.eos_token_id, out._shards, out._tables = eos_token_id, shards, tables
        out._offsets = np.cumsum([0, *(s.num_documents for s in shards)])[:-1].tolist()
        return out

    def _add(self, batch: list[np.ndarray], first: int, shard_tokens: int) -> None:
        shard = TokenSuffixArray(batch, eos_token_id=self.eos_token_id, max_tokens=shard_tokens, followers=False)
        self._shards.append(shard)
        self._offsets.append(first)

    @property
    def num_shards(self) -> int:
        """Number of shards.

        Examples:
            >>> ShardedTokenSuffixArray([[1], [2]], shard_tokens=1).num_shards
            2
        """
        return len(self._shards)

    @property
    def num_documents(self) -> int:
        """Number of indexed documents.

        Examples:
            >>> ShardedTokenSuffixArray([[1], [2]], shard_tokens=1).num_documents
            2
        """
        return sum(s.num_documents for s in self._shards)

    def shards(self) -> Iterator[TokenSuffixArray]:
        """The shards, in document order.

        Examples:
            >>> len(list(ShardedTokenSuffixArray([[1]]).shards()))
            1
        """
        return iter(self._shards)

    def allowed_array(self, prefix: Sequence[int]) -> np.ndarray:
        """Union of the shards' allowed sets.

        Examples:
            >>> ShardedTokenSuffixArray([[1, 2], [1, 3]], shard_tokens=2).allowed_array([1]).tolist()
            [2, 3]
        """
        if 1 <= len(prefix) <= len(self._tables):  # one slice of the shards' merged runs, not a read per shard
            stored = [int(t) + 1 for t in prefix]
            following = self._tables[len(prefix) - 1].after(*stored) if min(stored) >= 1 else _EMPTY
            return _allowed(following, self.eos_token_id) if following.size else _EMPTY  # every token has a follower
        parts = [s.allowed_array(prefix) for s in self._shards]
        parts = [p for p in parts if p.size]
        if not parts:
            return _EMPTY
        return parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """:meth:`allowed_array` as a list.

        Examples:
            >>> ShardedTokenSuffixArray([[1, 2]]).allowed([1])
            [2]
        """
        return [int(x) for x in self.allowed_array(prefix)]

    def __call__(self, prefix: Sequence[int]) -> list[int]:
        """Same as :meth:`allowed`.

        Examples:
            >>> ShardedTokenSuffixArray([[1, 2]])([])
            [1, 2]
        """
        return self.allowed(prefix)

    def count(self, prefix: Sequence[int]) -> int:
        """Occurrences over all shards.

        Examples:
            >>> ShardedTokenSuffixArray([[1], [1]], shard_tokens=1).count([1])
            2
        """
        return sum(s.count(prefix) for s in self._shards)

    def locate(self, prefix: Sequence[int]) -> list[tuple[int, int]]:
        """Occurrences as ``(global document index, token offset)``, sorted.

        Examples:
            >>> ShardedTokenSuffixArray([[1], [2, 1]], shard_tokens=2).locate([1])
            [(0, 0), (1, 1)]
        """
        out: list[tuple[int, int]] = []
        for shard, first in zip(self._shards, self._offsets, strict=True):
            out.extend((first + d, o) for d, o in shard.locate(prefix))
        return sorted(out)

    def document(self, index: int) -> np.ndarray:
        """Token ids of global document ``index``.

        Examples:
            >>> ShardedTokenSuffixArray([[1], [2, 3]], shard_tokens=1 + 1).document(1).tolist()
            [2, 3]
        """
        for shard, first in zip(self._shards, self._offsets, strict=True):
            if first <= index < first + shard.num_documents:
                return shard.document(index - first)
        raise InvalidInputError(f"document index {index} out of range [0, {self.num_documents})")
