"""A token trie's arrays built with whole-array operations (``trie_build``) are the one-sequence-at-a-time build's, to
the node id: the reference below is the loop ``TokenTrie`` used before (sorted tuples, a path stack)."""

from __future__ import annotations

import numpy as np
import pytest

import retrievekit.core.index.trie_build as trie_build
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.index.trie_build import csr_arrays, packed, sorted_distinct


def _reference(sequences: list[tuple[int, ...]]) -> tuple[np.ndarray, ...]:
    seqs = sorted(set(sequences))
    parents: list[int] = []
    tokens: list[int] = []
    terminal = [False]
    path: list[int] = [0]
    prev: tuple[int, ...] = ()
    for seq in seqs:
        lcp = 0
        while lcp < min(len(seq), len(prev)) and seq[lcp] == prev[lcp]:
            lcp += 1
        del path[lcp + 1 :]
        for d in range(lcp, len(seq)):
            parents.append(path[d])
            tokens.append(seq[d])
            terminal.append(False)
            path.append(len(terminal) - 1)
        terminal[path[len(seq)]] = True
        prev = seq
    par = np.asarray(parents, dtype=np.int64)
    order = np.argsort(par, kind="stable")
    counts = np.bincount(par, minlength=len(terminal)) if len(par) else np.zeros(len(terminal), dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return start, np.asarray(tokens, dtype=np.int32)[order], (order + 1).astype(np.int32), np.asarray(terminal)


def _random_sequences(rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Sequences over a small vocabulary (many shared prefixes), with duplicates and sequences that are prefixes of
    others, of lengths 1 to 12."""
    vocab = int(rng.integers(2, 40))
    out = [
        tuple(int(t) for t in rng.integers(0, vocab, int(rng.integers(1, 13))))
        for _ in range(int(rng.integers(1, 300)))
    ]
    out += [s[: int(rng.integers(1, len(s) + 1))] for s in out[: len(out) // 3]]  # prefixes of held sequences
    return out + out[: len(out) // 5]  # and duplicates


def test_the_arrays_are_the_one_at_a_time_builds_to_the_node_id():
    rng = np.random.default_rng(63)
    for _ in range(300):
        seqs = _random_sequences(rng)
        tokens, lengths = packed(seqs)
        got = csr_arrays(tokens, lengths, *sorted_distinct(tokens, lengths))
        want = _reference(seqs)
        for g, w, name in zip(got, want, ("start", "child_tok", "child_node", "terminal"), strict=True):
            assert g.dtype == w.dtype and np.array_equal(g, w), (name, seqs)


def _long_sequences(rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Sequences of up to 150 tokens grown from a few long stems (ties over many chunks of WIDTH tokens), with
    lengths at the chunks' edges, prefixes of each other and duplicates."""
    stems = [tuple(int(t) for t in rng.integers(0, 5, int(rng.integers(1, 100)))) for _ in range(4)]
    out = []
    for _ in range(int(rng.integers(1, 120))):
        stem = stems[int(rng.integers(len(stems)))]
        tail = tuple(int(t) for t in rng.integers(0, 3, int(rng.integers(0, 50))))
        cut = int(rng.choice([len(stem), 31, 32, 33, 64, 65, int(rng.integers(1, len(stem) + 1))]))
        out.append((stem + tail)[:cut] or (0,))
    return out + out[: len(out) // 4]


@pytest.mark.parametrize("width", [1, 2, 3, 32])
def test_sorting_a_few_tokens_at_a_time_gives_the_same_arrays(monkeypatch, width):
    # ties over many chunks: the sort goes on only with the ties that go on, and still gives the reference's arrays
    monkeypatch.setattr(trie_build, "WIDTH", width)
    rng = np.random.default_rng(width)
    for i in range(120):
        seqs = _long_sequences(rng) if i % 2 else _random_sequences(rng)
        if i % 3 == 2:  # ids over every byte of an int32 (the key's byte order must be the ids' order)
            seqs = [tuple((t + 1) * 16_777_259 % (2**31 - 1) for t in s) for s in seqs]
        tokens, lengths = packed(seqs)
        order, shared = trie_build.sorted_distinct(tokens, lengths)
        distinct = [
            tuple(tokens[o : o + n].tolist()) for o, n in zip(np.cumsum(lengths) - lengths, lengths, strict=True)
        ]
        assert [distinct[j] for j in order] == sorted(set(seqs))
        got = csr_arrays(tokens, lengths, order, shared)
        for g, w in zip(got, _reference(seqs), strict=True):
            assert np.array_equal(g, w), seqs


def test_a_few_very_long_sequences_cost_their_own_tokens():
    # one sequence of a million tokens among 50,000 short ones: a padded layout would take 50,001 x 1M x 4 bytes
    rng = np.random.default_rng(5)
    seqs = [tuple(int(t) for t in rng.integers(0, 50, 6)) for _ in range(50_000)] + [tuple(range(1_000_000))]
    trie = TokenTrie(seqs, eos_token_id=None)
    assert len(trie) == len(set(seqs)) and trie.allowed(list(range(999_999))) == [999_999]
    assert trie.allowed([0, 1]) == sorted({s[2] for s in seqs if s[:2] == (0, 1) and len(s) > 2})


def test_a_trie_from_a_stream_answers_as_one_from_a_list():
    rng = np.random.default_rng(64)
    seqs = _random_sequences(rng) + [(2**31 - 1,)]
    streamed = TokenTrie((s for s in seqs), eos_token_id=None)  # a generator: read once, one sequence at a time
    listed = TokenTrie(seqs, eos_token_id=None)
    assert len(streamed) == len(set(seqs)) == len(listed)
    assert sorted(streamed) == sorted(set(seqs))
    for s in seqs:
        for j in range(len(s) + 1):
            assert streamed.allowed(list(s[:j])) == listed.allowed(list(s[:j]))


def test_an_empty_trie_and_bad_tokens():
    empty = TokenTrie([], eos_token_id=0)
    assert len(empty) == 0 and empty.allowed([]) == [] and empty.num_nodes == 1
    for bad in ([1, 2**31], np.array([1, 2**32 + 5], dtype=np.uint64), [1, -3]):  # every way a sequence comes in
        with pytest.raises(InvalidInputError, match="below 2\\*\\*31"):
            TokenTrie([bad])
        with pytest.raises(InvalidInputError, match="below 2\\*\\*31"):
            TokenTrie.keyed({"a": bad})
        keyed = TokenTrie.keyed({"b": [1]})
        with pytest.raises(InvalidInputError, match="below 2\\*\\*31"):
            keyed.add({"a": bad})
        assert keyed.ids() == ["b"] and keyed.allowed([]) == [1]  # nothing added
        with pytest.raises(InvalidInputError, match="below 2\\*\\*31"):
            TokenTrie([[1]]).add(bad)
    with pytest.raises(InvalidInputError, match="below 2\\*\\*31"):
        packed([[1, 2**31]])  # the packing's own check, for a caller of trie_build
    with pytest.raises(InvalidInputError, match="empty token sequence"):
        TokenTrie(iter([[1], []]))
