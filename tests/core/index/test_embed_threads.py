"""The local embedder encodes on :func:`embed_threads` torch threads, restores the caller's count, and gives the same
vectors (to 1e-5) on one thread and on two."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _thread_watch import on_threads

from retrievekit.core import threads
from retrievekit.core.errors import InvalidInputError

TEXTS = [
    "Aspirin lowers the risk of a second heart attack.",
    "Vitamin D",
    "Mutations in BRCA1 raise the lifetime risk of breast and ovarian cancer in carriers by several times.",
    "A short one.",
    "Sleep deprivation impairs working memory, attention and the consolidation of new motor skills in adults.",
]


@pytest.fixture(autouse=True)
def _reset():
    yield
    threads.set_embed_threads(None)


def test_embed_threads_order(monkeypatch):
    monkeypatch.delenv(threads.EMBED_ENV_VAR, raising=False)
    assert threads.embed_threads() == threads.available_cpus()  # the default: every free core
    monkeypatch.setenv(threads.EMBED_ENV_VAR, "3")
    assert threads.embed_threads() == 3
    threads.set_embed_threads(2)
    assert threads.embed_threads() == 2
    monkeypatch.setenv(threads.EMBED_ENV_VAR, "zero")
    threads.set_embed_threads(None)
    with pytest.raises(InvalidInputError, match="RETRIEVEKIT_EMBED_THREADS"):
        threads.embed_threads()
    with pytest.raises(InvalidInputError):
        threads.set_embed_threads(0)


def _encode_seeing_threads(minilm, n: int) -> tuple[np.ndarray, set[int]]:
    """Encode TEXTS (past the memo) on ``n`` threads; the thread counts torch reports inside the forward pass."""
    seen: set[int] = set()
    handle = minilm._model.register_forward_pre_hook(lambda *_: seen.add(torch.get_num_threads()))
    try:
        threads.set_embed_threads(n)
        return minilm._encode(TEXTS), seen
    finally:
        handle.remove()


def test_vectors_equal_across_thread_counts_and_callers_count_restored(minilm):
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        one, seen_one = _encode_seeing_threads(minilm, 1)
        two, seen_two = _encode_seeing_threads(minilm, 2)
        assert seen_one == {1} and seen_two == {2}
        assert torch.get_num_threads() == 3  # the caller's count, back after each encode
        np.testing.assert_allclose(one, two, atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(two, axis=1), 1.0, atol=1e-5)
    finally:
        torch.set_num_threads(before)


def test_concurrent_encodes_agree_and_restore(minilm):
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    threads.set_embed_threads(2)
    alone = minilm._encode(TEXTS)
    results: list[np.ndarray] = []

    def call() -> None:
        results.append(minilm._encode(TEXTS))

    try:
        on_threads(call, 3)
        assert len(results) == 3
        for r in results:
            np.testing.assert_allclose(r, alone, atol=1e-5)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
