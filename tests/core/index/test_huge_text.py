"""One huge document (issue #62 item 9): the real all-MiniLM-L6-v2 reads its first 256 tokens, so a text is cut to
``max_seq_length * CHARS_PER_TOKEN`` characters before it is tokenized. A 20 MB document among small ones is indexed
in a real Chroma index with the tokenizer never handed more than that bound (the model's own ``preprocess``, which
tokenizes, is watched), and its vector is the one the model gives the uncut text."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.embeddings import CHARS_PER_TOKEN
from retrievekit.core.types import Passage

SENTENCE = "The harbour master logged each ship that entered the bay before dawn, noting its flag and cargo. "
HUGE = SENTENCE * (20_000_000 // len(SENTENCE))  # 20 MB of prose


@pytest.fixture
def tokenized(minilm, monkeypatch):
    """The lengths of every text the model's tokenizing step receives."""
    seen: list[int] = []
    model = minilm._model
    real = model.preprocess

    def watch(texts, *args, **kwargs):
        seen.extend(len(t) for t in texts)
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(model, "preprocess", watch)
    return seen


def test_the_bound_is_max_seq_length_times_the_stated_ceiling(minilm):
    assert minilm.max_chars == minilm._model.max_seq_length * CHARS_PER_TOKEN == 256 * 64


def test_a_huge_document_reaches_the_tokenizer_cut_to_the_bound(minilm, tokenized):
    docs = [Passage(id=f"d{i}", text=f"note {i}: a ship of cargo number {i}") for i in range(30)]
    docs.append(Passage(id="huge", text=HUGE))
    with DenseIndex.build(docs, embedder=minilm) as idx:
        assert len(idx) == 31
        assert idx.search("harbour master logged ships entering the bay", k=1)[0].id == "huge"
    assert tokenized and max(tokenized) <= minilm.max_chars  # the 20 MB text was handed over cut
    minilm.embed_query(HUGE)  # a query is cut too
    assert max(tokenized) <= minilm.max_chars


def test_the_cut_text_gives_the_uncut_texts_vector(minilm, tokenized):
    whole = HUGE[:200_000]  # uncut by the model's own encode: 200 KB, far past the 256 tokens it reads
    uncut = minilm._model.encode([whole], normalize_embeddings=True, convert_to_numpy=True)[0]
    assert max(tokenized) == len(whole)  # the reference really was tokenized whole
    tokenized.clear()
    ours = minilm.embed_documents([whole, HUGE + " unseen"])
    assert max(tokenized) == minilm.max_chars  # both handed over cut, and still the uncut text's vector
    assert np.allclose(ours[0], uncut, atol=1e-6) and np.allclose(ours[1], uncut, atol=1e-6)
    assert np.allclose(minilm.embed_query(HUGE), uncut, atol=1e-6)
