"""The per-process document-vector memo of MiniLMEmbedder: a text is encoded once, results are unchanged, bounded."""

from __future__ import annotations

import numpy as np

from retrievekit.core.index import embeddings


def test_repeated_texts_are_encoded_once_and_give_the_same_vectors(minilm, monkeypatch):
    texts = ["memo test: apples grow on trees", "memo test: rivers flow to the sea", "memo test: apples grow on trees"]
    fresh = minilm._encode(texts[:2])
    encoded: list[str] = []
    real = minilm._encode

    def counting(batch, **kw):
        encoded.extend(batch)
        return real(batch, **kw)

    monkeypatch.setattr(minilm, "_encode", counting)
    first = minilm.embed_documents(texts)
    assert encoded == texts[:2]  # the duplicate inside one call is encoded once too
    second = minilm.embed_documents(list(reversed(texts)))
    assert encoded == texts[:2]  # nothing new to encode
    np.testing.assert_allclose(first[:2], fresh, atol=1e-6)
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(second[::-1], first)
    # another embedder object over the same model shares the memo
    other = embeddings.MiniLMEmbedder.default()
    monkeypatch.setattr(other, "_encode", counting)
    other.embed_documents(texts[:1])
    assert encoded == texts[:2]


def test_queries_are_not_remembered(minilm):
    before = len(minilm._memo._vectors)
    minilm.embed_query("memo test: a query that is never stored")
    assert len(minilm._memo._vectors) == before


def test_the_memo_is_bounded_and_drops_the_least_recently_used():
    memo = embeddings._VectorMemo(2)
    a, b, c = (memo.digest(t) for t in "abc")
    memo.put(a, np.ones(2))
    memo.put(b, np.zeros(2))
    assert memo.get(a) is not None  # a is now the most recently used
    memo.put(c, np.ones(2))
    assert memo.get(b) is None and memo.get(a) is not None and memo.get(c) is not None


def test_the_memo_size_comes_from_the_environment(monkeypatch):
    import pytest

    from retrievekit.core.errors import InvalidInputError

    monkeypatch.delenv(embeddings.MEMO_ENV_VAR, raising=False)
    assert embeddings.memo_size() == embeddings.MEMO_SIZE
    monkeypatch.setenv(embeddings.MEMO_ENV_VAR, " 300000 ")
    assert embeddings.memo_size() == 300_000
    for bad in ("0", "-5", "lots", "1.5"):
        monkeypatch.setenv(embeddings.MEMO_ENV_VAR, bad)
        with pytest.raises(InvalidInputError, match="RETRIEVEKIT_EMBED_MEMO_SIZE must be a positive integer"):
            embeddings.memo_size()
