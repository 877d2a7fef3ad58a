"""Dense index over the real all-MiniLM-L6-v2 and a real Chroma (embedded and server)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from _chroma_server import chroma_server

from retrievekit.core.errors import EmptyCorpusError, IndexFormatError, InvalidInputError, UnverifiedIndexWarning
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.hybrid import HybridRetriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


class _Other:
    """A different (fake) embedder: used only to prove an index refuses a mismatched model."""

    name, dim = "other-model", 384

    def embed_documents(self, texts):
        return np.ones((len(texts), 384), dtype=np.float32)

    def embed_query(self, text):
        return np.ones(384, dtype=np.float32)


def test_minilm_embeddings_are_normalised_and_semantic(minilm):
    v = minilm.embed_documents(["a cat sleeps", "a kitten naps", "quarterly tax filing"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_dense_in_memory_semantic_match(minilm, small_corpus):
    idx = DenseIndex.build(small_corpus, embedder=minilm)
    t = Trace()
    hits = idx.search("tallest peak in the world", k=3, trace=t)
    assert hits[0].id == "everest"
    assert hits[0].score > hits[1].score
    assert "dense.embed" in t.stage_seconds
    assert idx.search("coding", k=10)[0].id in {"python", "rust"}
    assert len(idx.search("x", k=100)) == len(small_corpus)


def test_dense_persistent_round_trip_and_guards(tmp_path, minilm, small_corpus):
    path = tmp_path / "dense"
    idx = DenseIndex.build(small_corpus, path=path, embedder=minilm)
    before = [(h.id, round(h.score, 4)) for h in idx.search("a long river", k=3)]
    again = DenseIndex.open(path, embedder=minilm)
    assert [(h.id, round(h.score, 4)) for h in again.search("a long river", k=3)] == before
    assert before[0][0] == "nile"
    # refuses to clobber an existing index unless asked
    with pytest.raises(InvalidInputError, match="overwrite=True"):
        DenseIndex.build(small_corpus, path=path, embedder=minilm)
    # refuses an embedder other than the one it was built with
    with pytest.raises(IndexFormatError, match="embedded with 'all-MiniLM-L6-v2'"):
        DenseIndex.open(path, embedder=_Other())
    # incremental add, and duplicate ids are refused
    again.add([Passage(id="amazon", text="The Amazon river flows through Brazil.")])
    with pytest.warns(UnverifiedIndexWarning, match="add"):  # unsealed until again.close()
        assert len(DenseIndex.open(path, embedder=minilm)) == len(small_corpus) + 1
    with pytest.raises(InvalidInputError, match="already in the index"):
        again.add([Passage(id="nile", text="dup")])


def test_dense_bad_folders(tmp_path, minilm):
    with pytest.raises(IndexFormatError, match="no manifest.json"):
        DenseIndex.open(tmp_path, embedder=minilm)
    bm = tmp_path / "bm25"
    BM25Index.build([Passage(id="a", text="x")]).save(bm)
    with pytest.raises(IndexFormatError, match="not 'retrievekit.dense'"):
        DenseIndex.open(bm, embedder=minilm)
    with pytest.raises(EmptyCorpusError):
        DenseIndex.build([], embedder=minilm)


def test_dense_missing_database_is_reported(tmp_path, minilm, small_corpus):
    path = tmp_path / "dense"
    DenseIndex.build(small_corpus[:2], path=path, embedder=minilm)
    from retrievekit.core.index.dense import _clear_chroma_cache

    _clear_chroma_cache()
    shutil.rmtree(path / "chroma")
    with pytest.raises(IndexFormatError, match="chroma.sqlite3"):
        DenseIndex.open(path, embedder=minilm)


def test_hybrid_dense_plus_bm25(minilm, small_corpus):
    h = HybridRetriever(
        [DenseIndex.build(small_corpus, embedder=minilm), BM25Index.build(small_corpus)], names=["dense", "bm25"]
    )
    assert h.search("yellow fruit with potassium", k=1)[0].id == "banana"


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_dense_over_a_chroma_server_on_loopback(tmp_path, minilm, small_corpus):
    """Start `chroma run` on 127.0.0.1 and use it through chromadb.HttpClient."""
    with chroma_server(tmp_path / "srv") as (_, client, _port):
        idx = DenseIndex.build(small_corpus, client=client, collection_name="rk-server", embedder=minilm)
        assert idx.search("highest mountain", k=1)[0].id == "everest"
        reopened = DenseIndex.open(client=client, collection_name="rk-server", embedder=minilm)
        assert len(reopened) == len(small_corpus)
        with pytest.raises(InvalidInputError, match="already exists"):
            DenseIndex.build(small_corpus, client=client, collection_name="rk-server", embedder=minilm)
        client.create_collection("foreign-col")
        with pytest.raises(IndexFormatError, match="not written by retrievekit"):
            DenseIndex.open(client=client, collection_name="foreign-col", embedder=minilm)
