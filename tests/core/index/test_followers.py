"""Followers: the distinct runs of one or two tokens and what follows them, against a scan of the texts."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.index.bigram_followers import Followers
from retrievekit.core.index.suffix_array import ShardedTokenSuffixArray, TokenSuffixArray


def _text(rng: np.random.Generator, vocab: int, docs: int) -> np.ndarray:
    """Stored ids (1..vocab) of a few documents, each followed by the separator 0."""
    parts = [np.append(rng.integers(1, vocab + 1, size=int(rng.integers(0, 12))), 0) for _ in range(docs)]
    return np.concatenate(parts)


def _scan(text: np.ndarray, run: tuple[int, ...]) -> list[int]:
    n = len(run)
    return sorted({int(text[i + n]) for i in range(text.size - n) if tuple(text[i : i + n].tolist()) == run})


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("order", [1, 2])
def test_after_a_run_is_what_follows_it_in_the_text_also_merged_from_parts(seed, order):
    rng = np.random.default_rng(seed)
    texts = [_text(rng, 6, 8) for _ in range(3)]
    whole = np.concatenate(texts)
    table = Followers.of(whole, order)
    merged = Followers.merge([Followers.of(t, order) for t in texts])
    grown = None
    for t in texts:
        grown = Followers.grown(grown, t)
    runs = [tuple(int(x) for x in rng.integers(1, 8, size=order)) for _ in range(60)]
    for run in runs:  # a run across a document's end (a 0 inside) is never asked: prefixes hold no separator
        want = _scan(whole, run)
        assert (
            table.after(*run).tolist() == merged.after(*run).tolist() == grown[order - 1].after(*run).tolist() == want
        )
    assert table.codes.tolist() == merged.codes.tolist()  # the same table, whichever way it was made
    with pytest.raises(ValueError, match="asked after"):
        table.after(*range(order + 1))


def test_token_ids_too_large_for_triples_keep_the_pairs_and_the_answers():
    # base ** 3 past int64: the triples' table is left out once an id that large is seen, and a sharded array
    # answers its two-token prefixes from the shards, as the whole array does
    big = 3_000_000
    assert Followers.fits(big, 1) and not Followers.fits(big, 2)
    docs = [[1, 2, 3], [1, 2, big], [big, 1, 2], [5, 1, 2]]
    tables = Followers.grown(None, np.asarray([2, 3, 4, 0]))
    assert [t.order for t in tables] == [1, 2]
    tables = Followers.grown(tables, np.asarray([big + 1, 2, 0]))
    assert [t.order for t in tables] == [1] and tables[0].after(big + 1).tolist() == [2]
    sharded, whole = ShardedTokenSuffixArray(docs, shard_tokens=3), TokenSuffixArray(docs)
    assert len(sharded._tables) == 1
    for prefix in ([1], [1, 2], [big], [big, 1], [2, big], [5, 1, 2]):
        assert sharded.allowed(prefix) == whole.allowed(prefix), prefix


def test_the_sharded_tables_answer_as_the_shards_would(monkeypatch):
    # the one- and two-token answers from the merged tables equal the union of the shards' own answers
    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 9, size=int(rng.integers(0, 15))).tolist() for _ in range(80)]
    sharded = ShardedTokenSuffixArray(docs, shard_tokens=40, eos_token_id=77)
    prefixes = [[int(a)] for a in range(11)] + [[int(a), int(b)] for a in range(10) for b in range(10)]
    from_tables = [sharded.allowed(p) for p in prefixes]
    monkeypatch.setattr(sharded, "_tables", [])
    assert sharded.num_shards > 3 and from_tables == [sharded.allowed(p) for p in prefixes]
