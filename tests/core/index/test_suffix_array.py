"""TokenSuffixArray / ShardedTokenSuffixArray: continuations and locations against a brute-force scan."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import retrievekit.core.index.suffix_array as sa_module
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.suffix_array import ShardedTokenSuffixArray, SuffixArrayTooLargeError, TokenSuffixArray


def brute_allowed(docs: list[list[int]], prefix: list[int]) -> list[int]:
    out: set[int] = set()
    m = len(prefix)
    for d in docs:
        for i in range(len(d)):
            if d[i : i + m] == prefix and i + m < len(d):
                out.add(d[i + m])
    if not prefix:
        out = {t for d in docs for t in d}
    return sorted(out)


def brute_locate(docs: list[list[int]], prefix: list[int]) -> list[tuple[int, int]]:
    m = len(prefix)
    return [(j, i) for j, d in enumerate(docs) for i in range(len(d) - m + 1) if d[i : i + m] == prefix]


docs_strategy = st.lists(st.lists(st.integers(0, 6), max_size=25), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None)
@given(docs=docs_strategy, data=st.data())
def test_matches_brute_force(docs: list[list[int]], data: st.DataObject) -> None:
    sa = TokenSuffixArray(docs)
    sharded = ShardedTokenSuffixArray(docs, shard_tokens=max(max((len(d) for d in docs), default=1), 1))
    # prefixes: substrings of the documents (found) and random ones (mostly found nowhere)
    subs = [d[i:j] for d in docs for i in range(len(d)) for j in range(i + 1, min(len(d), i + 4) + 1)]
    prefixes = [[]] + subs[:30] + [data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=4)) for _ in range(5)]
    for p in prefixes:
        assert sa.allowed(p) == brute_allowed(docs, p), p
        assert sharded.allowed(p) == brute_allowed(docs, p), p
        if p:
            assert sa.locate(p) == brute_locate(docs, p)
            assert sharded.locate(p) == brute_locate(docs, p)
            assert sa.count(p) == len(brute_locate(docs, p)) == sharded.count(p)


def test_prefixes_grown_step_by_step_match_a_fresh_array_and_the_memory_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # beam search asks for each prefix one token longer than the step before: those lookups narrow the range
    # remembered for the shorter prefix; the answers must be those of an array that has never been asked anything,
    # also for beams that leave the documents (a found-nowhere parent) and after the memory was cleared when full
    monkeypatch.setattr(sa_module, "_RANGE_CACHE", 16)
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 4, size=int(n)).tolist() for n in rng.integers(0, 40, size=6)]
    sa = TokenSuffixArray(docs, eos_token_id=9)
    beams = [d[i:] + [int(rng.integers(0, 5))] for d in docs for i in range(0, len(d), 5)]  # some leave the text
    assert len(beams) > 16
    for step in range(12):
        for beam in beams:
            prefix = beam[:step]
            fresh = TokenSuffixArray(docs, eos_token_id=9)
            expected = brute_allowed(docs, prefix)
            if prefix and brute_locate(docs, prefix):  # a generation may stop after any prefix that occurs
                expected = sorted({*expected, 9})
            assert sa.allowed(prefix) == fresh.allowed(prefix) == expected, prefix
            assert sa.range(prefix) == fresh.range(prefix)
            assert len(sa._ranges) <= 16  # noqa: SLF001 - the memory is bounded
    assert sa.allowed([5]) == [] and sa.allowed([5, 1]) == [] and sa.count([5, 1]) == 0  # off the text stays off it


def test_documents_are_separated_and_empty_documents_kept() -> None:
    sa = TokenSuffixArray([[1, 2], [], [3, 4]])
    assert sa.num_documents == 3 and sa.num_tokens == 4
    assert sa.allowed([2]) == []  # no continuation across the boundary into document 2
    assert sa.locate([2, 3]) == []
    assert sa.locate([3, 4]) == [(2, 0)]
    assert sa.document(1).tolist() == [] and sa.document(2).tolist() == [3, 4]
    assert sa.first_occurrence([4], 2) == 1 and sa.first_occurrence([4], 0) is None
    with pytest.raises(InvalidInputError):
        sa.document(3)


def test_all_empty_and_no_documents() -> None:
    for docs in ([], [[], []]):
        sa = TokenSuffixArray(docs)
        assert sa.allowed([]) == [] and sa.allowed([1]) == [] and sa.locate([1]) == []


def test_prefix_found_nowhere_and_bad_input() -> None:
    sa = TokenSuffixArray([[5, 6, 7]])
    assert sa.allowed([6, 5]) == [] and sa.count([9]) == 0 and sa.locate([7, 7]) == []
    assert sa.allowed([-1]) == []  # padding ids never match
    with pytest.raises(InvalidInputError, match="empty prefix"):
        sa.locate([])
    with pytest.raises(InvalidInputError, match="document 0: token ids must be >= 0"):
        TokenSuffixArray([[1, -2]])


def test_eos_allowed_after_found_prefix_only() -> None:
    sa = TokenSuffixArray([[1, 2, 3]], eos_token_id=0)
    assert sa.allowed([]) == [1, 2, 3]
    assert sa.allowed([3]) == [0]
    assert sa.allowed([1]) == [0, 2]
    assert sa.allowed([9]) == []


def test_large_vocabulary_ids() -> None:
    docs = [[150_000, 3, 151_000], [3, 99_999]]
    sa = TokenSuffixArray(docs)
    assert sa.allowed([3]) == [99_999, 151_000]
    assert isinstance(sa.allowed_array([3]), np.ndarray)


def test_too_big_for_memory_raises_or_shards() -> None:
    docs = [list(range(1, 40)) for _ in range(10)]  # 390 tokens
    with pytest.raises(SuffixArrayTooLargeError, match="max_tokens=100"):
        TokenSuffixArray(docs, max_tokens=100)
    with pytest.raises(MemoryError):  # also catchable as MemoryError
        TokenSuffixArray(docs, max_tokens=100)
    sharded = ShardedTokenSuffixArray(docs, shard_tokens=100)
    assert sharded.num_shards == 5 and sharded.num_documents == 10
    assert sharded.allowed([5]) == [6]
    assert len(sharded.locate([5, 6])) == 10
    assert sharded.document(9).tolist() == docs[9]
    with pytest.raises(SuffixArrayTooLargeError, match="document 0"):
        ShardedTokenSuffixArray(docs, shard_tokens=10)


def test_doctests() -> None:
    assert doctest.testmod(sa_module, optionflags=doctest.ELLIPSIS).failed == 0


def test_frequent_prefixes_of_a_zipf_corpus_match_brute_force() -> None:
    """Ranges of thousands of suffixes (where the next tokens are read around their changes, not one by one)."""
    rng = np.random.default_rng(7)
    docs = [(rng.zipf(1.4, size=int(rng.integers(20, 80))) % 60).tolist() for _ in range(400)]
    sa = TokenSuffixArray(docs)
    sharded = ShardedTokenSuffixArray(docs, shard_tokens=5_000)
    for p in [[1], [2], [1, 1], [3, 1], [1, 2, 1], [59], [0]]:
        assert sa.allowed(p) == brute_allowed(docs, p) == sharded.allowed(p), p
    assert sa.count([1]) > 3_000  # the range the skipping reads


def test_a_sharded_one_token_prefix_answers_from_the_merged_pairs_like_each_shard() -> None:
    """One-token prefixes come from one table of all shards' token pairs; it must agree with the shards' reads,
    with the end of text allowed only after a prefix that occurs, and a shard asked alone still answers."""
    docs = [[5, 6], [6], [7, 5, 5], [8]]
    sharded = ShardedTokenSuffixArray(docs, shard_tokens=3, eos_token_id=0)
    assert sharded.num_shards == 3
    assert sharded.allowed([5]) == [0, 5, 6]
    assert sharded.allowed([6]) == [0]  # a document's end only: the end of text
    assert sharded.allowed([9]) == [] and sharded.allowed([-1]) == []  # found nowhere: nothing, not even the end
    for p in ([5], [6], [7], [8]):
        union = sorted(
            {t for s in sharded.shards() for t in s.allowed(p) if s.count(p)} | ({0} if sharded.count(p) else set())
        )
        assert sharded.allowed(p) == union, p
