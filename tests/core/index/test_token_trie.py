"""TokenTrie: allowed-next-token sets over token-id sequences."""

from __future__ import annotations

import random

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.token_trie import TokenTrie

EOS = 0


def test_allowed_sets_and_eos() -> None:
    trie = TokenTrie([[1, 2, 3], [1, 2], [1, 4], [5]], eos_token_id=EOS)
    assert trie.allowed([]) == [1, 5]
    assert trie.allowed([1]) == [2, 4]
    assert trie.allowed([1, 2]) == [EOS, 3]  # complete sequence and a prefix of another
    assert trie.allowed([1, 2, 3]) == [EOS]
    assert trie.allowed([5]) == [EOS]
    assert trie.allowed([7]) == []
    assert trie.allowed([1, 2, 3, EOS]) == []  # past the end
    assert trie([1]) == trie.allowed([1])


def test_no_eos_id_means_no_eos() -> None:
    trie = TokenTrie([[1, 2]])
    assert trie.allowed([1, 2]) == []
    assert [1, 2] in trie


def test_contains_len_iter_and_duplicates() -> None:
    trie = TokenTrie([[3, 1], [3, 1], [2]], eos_token_id=EOS)
    assert len(trie) == 2
    assert [3, 1] in trie and (3, 1) in trie and [3, 1, EOS] in trie
    assert [3] not in trie and [] not in trie and "ab" not in trie and 3 not in trie
    assert list(trie) == [(2,), (3, 1)]
    assert trie.is_prefix([3]) and not trie.is_prefix([4])
    assert "2 sequences" in repr(trie)


@pytest.mark.parametrize("bad", [[], [1, -2], [1, EOS, 2]])
def test_bad_sequences_raise(bad: list[int]) -> None:
    with pytest.raises(InvalidInputError):
        TokenTrie([bad], eos_token_id=EOS)


def test_from_texts_and_empty_text() -> None:
    enc = lambda s: [ord(c) for c in s]  # noqa: E731
    trie = TokenTrie.from_texts(["ab", "ac", "b"], enc, eos_token_id=EOS)
    assert trie.allowed([]) == [ord("a"), ord("b")]
    assert trie.allowed([ord("a")]) == [ord("b"), ord("c")]
    with pytest.raises(InvalidInputError, match="no tokens"):
        TokenTrie.from_texts(["ok", ""], enc, eos_token_id=EOS)


def test_random_walks_match_a_brute_force_reference() -> None:
    rng = random.Random(0)
    seqs = {tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 6))) for _ in range(200)}
    trie = TokenTrie(seqs, eos_token_id=EOS)
    assert len(trie) == len(seqs)
    assert set(trie) == seqs
    prefixes = {s[:k] for s in seqs for k in range(len(s) + 1)}
    for p in prefixes:
        expected = {s[len(p)] for s in seqs if len(s) > len(p) and s[: len(p)] == p}
        if p in seqs:
            expected.add(EOS)
        assert trie.allowed(list(p)) == sorted(expected)


def test_lookups_that_grow_a_prefix_step_by_step_match_a_fresh_walk_and_follow_added_sequences() -> None:
    # beam search asks for each prefix one token longer than the step before: those lookups start from the node
    # remembered for the shorter prefix; the answers must be those of a trie that has never been asked anything
    rng = random.Random(1)
    seqs = [tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 7))) for _ in range(150)]
    trie = TokenTrie(seqs, eos_token_id=EOS)
    beams = [list(rng.choice(seqs)) + [rng.randint(1, 5)] for _ in range(40)]  # some run past a stored sequence
    for step in range(9):
        for beam in beams:
            prefix = beam[:step]
            assert trie.allowed(prefix) == TokenTrie(seqs, eos_token_id=EOS).allowed(prefix), prefix
    assert trie.allowed([9]) == [] and trie.allowed([9, 1]) == []  # off the trie stays off it
    assert trie.add([9, 1])  # a rebuild forgets every remembered node
    assert trie.allowed([9]) == [1] and trie.allowed([9, 1]) == [EOS]
