"""An index records which embedding model built it (name, dimension, probe fingerprint) and refuses another one with
a typed error: another dimension, and a swapped model under the same name and dimension; an index built before
fingerprints is accepted by name and dimension, with a warning. Real Chroma (embedded folder and in-process client)."""

from __future__ import annotations

import json

import chromadb
import numpy as np
import pytest

from retrievekit.core.errors import EmbedderMismatchError, IndexFormatError, UnverifiedIndexWarning
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.fingerprint import PROBE_TEXTS, check_embedder, embedder_fingerprint
from retrievekit.core.types import Passage

DOCS = [Passage(id="a", text="cats purr on the mat"), Passage(id="b", text="stock markets fell")]


class Hashed:
    """A deterministic stand-in model: each word adds a seeded random vector (``seed`` picks the model)."""

    def __init__(self, name: str = "hashed", dim: int = 16, seed: int = 0) -> None:
        self.name, self.dim, self.seed = name, dim, seed

    def _vec(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim)
        for w in text.lower().split():
            digest = int.from_bytes(w.encode()[:8].ljust(8, b"_"), "little")
            out += np.random.default_rng([self.seed, digest]).normal(size=self.dim)
        return out + 1e-3

    def embed_documents(self, texts, **kw):
        return np.stack([self._vec(t) for t in texts])

    def embed_query(self, text):
        return self._vec(text)


def test_the_fingerprint_is_small_rounded_and_stable():
    fp = embedder_fingerprint(Hashed())
    assert fp["name"] == "hashed" and fp["dim"] == 16 and len(fp["probes"]) == len(PROBE_TEXTS)
    assert all(len(row) == 16 and all(round(v, 3) == v for v in row) for row in fp["probes"])
    assert json.loads(json.dumps(fp)) == fp == embedder_fingerprint(Hashed())


def test_a_folder_index_refuses_another_dimension_and_a_swapped_model_of_the_same_name(tmp_path):
    DenseIndex.build(DOCS, tmp_path / "idx", embedder=Hashed()).close()
    with DenseIndex.open(tmp_path / "idx", embedder=Hashed()) as idx:
        assert idx.search("cats", k=1)[0].id == "a"
    with pytest.raises(EmbedderMismatchError, match=r"dim 16.*'hashed' \(dim 8\)"):
        DenseIndex.open(tmp_path / "idx", embedder=Hashed(dim=8))
    with pytest.raises(EmbedderMismatchError, match="another model under the same name") as info:
        DenseIndex.open(tmp_path / "idx", embedder=Hashed(seed=1))
    assert isinstance(info.value, IndexFormatError)  # existing `except IndexFormatError` clauses still catch it


def test_the_same_vectors_under_another_name_are_accepted(tmp_path):
    DenseIndex.build(DOCS, tmp_path / "idx", embedder=Hashed()).close()
    with DenseIndex.open(tmp_path / "idx", embedder=Hashed(name="hashed-v1-local-copy")) as idx:
        assert idx.search("stock", k=1)[0].id == "b"


def test_an_index_without_a_fingerprint_is_accepted_by_name_with_a_warning():
    client = chromadb.EphemeralClient()
    DenseIndex.build(DOCS, client=client, collection_name="old-index", embedder=Hashed())
    col = client.get_collection("old-index")
    col.modify(metadata={**col.metadata, "embedder_fingerprint": ""})  # as an index built before fingerprints
    with pytest.warns(UnverifiedIndexWarning, match="no fingerprint"):
        idx = DenseIndex.open(client=client, collection_name="old-index", embedder=Hashed(seed=1))
    assert len(idx) == 2
    with pytest.raises(EmbedderMismatchError, match="'other'"):  # a name that differs is still refused
        DenseIndex.open(client=client, collection_name="old-index", embedder=Hashed(name="other"))


def test_check_embedder_reads_a_recorded_fingerprint():
    recorded = embedder_fingerprint(Hashed())
    check_embedder(recorded, Hashed(), where="x")
    with pytest.raises(EmbedderMismatchError, match="^tree y was embedded with"):
        check_embedder(recorded, Hashed(seed=2), where="tree y")
