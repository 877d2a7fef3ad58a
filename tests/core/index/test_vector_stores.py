"""The store interface (#51 part 3) over Chroma, without a server: ChromaStore's calls, a DenseIndex's collection as a
store, the embedder check, the registry of kinds, the deadline on store calls, and the store as the dense side of
every method that embeds (hybrid, One-SHOT, ARM, llm-rerank, judge-rerank)."""

from __future__ import annotations

import json
import signal
import threading
import time

import numpy as np
import pytest
from _corpora import FRUIT

from retrievekit.core.errors import (
    EmbedderMismatchError,
    IndexFormatError,
    InvalidInputError,
    StoreUnavailableError,
    UnverifiedIndexWarning,
)
from retrievekit.core.fakes import WordJudge, WordScoreLLM
from retrievekit.core.index.chroma_store import ChromaStore
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.fingerprint import embedder_fingerprint
from retrievekit.core.index.store_deadline import StoreDeadline
from retrievekit.core.index.store_kinds import open_store
from retrievekit.core.index.store_retriever import StoreRetriever
from retrievekit.core.index.vector_store import PROBES_KEY, VectorStore
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.types import Passage

Q = "What is the highest mountain?"


class Spy:
    """A store that counts the searches and writes that reach the Chroma store it wraps."""

    def __init__(self, inner):
        self.inner, self.kind, self.label = inner, inner.kind, inner.label
        self.searches = self.writes = 0

    def add(self, objects, vectors, *, record):
        self.writes += 1
        self.inner.add(objects, vectors, record=record)

    def delete(self, ids):
        self.writes += 1
        self.inner.delete(ids)

    def search(self, vector, k, *, where=None):
        self.searches += 1
        return self.inner.search(vector, k, where=where)

    def count(self):
        return self.inner.count()

    def recorded_embedder(self):
        return self.inner.recorded_embedder()

    def close(self):
        self.inner.close()


@pytest.fixture
def filled(minilm):
    """A store holding FRUIT, written through retrievekit with MiniLM."""
    store = ChromaStore.in_memory()
    StoreRetriever(store, minilm).add(FRUIT)
    yield store
    store.close()


def test_chroma_store_adds_searches_filters_deletes_and_counts(minilm):
    store = ChromaStore.in_memory()
    assert isinstance(store, VectorStore)
    docs = [Passage(id=p.id, text=p.text, title=p.title, metadata={"n": i}) for i, p in enumerate(FRUIT)]
    r = StoreRetriever(store, minilm)
    r.add(docs)
    assert store.count() == len(docs)
    hit = r.search(Q, k=1)[0]
    assert hit.id == "everest" and hit.obj == docs[4]  # the object as written, record taken out
    vec = minilm.embed_query(Q)
    assert [h.id for h in store.search(vec, 3, where={"n": 1})] == ["banana"]
    store.delete(["everest"])
    assert store.count() == len(docs) - 1 and r.search(Q, k=1)[0].id != "everest"
    store.close()


def test_a_dense_index_collection_searched_as_a_store_ranks_as_the_index(minilm):
    idx = DenseIndex.build(FRUIT, embedder=minilm)
    via_store = StoreRetriever(ChromaStore.from_index(idx), minilm)
    for q in (Q, "memory safety", "tropical fruit"):
        assert [(h.id, round(h.score, 5)) for h in via_store.search(q, k=6)] == [
            (h.id, round(h.score, 5)) for h in idx.search(q, k=6)
        ]
    idx.close()


class Swapped:
    """Another model of MiniLM's dimension: MiniLM's vectors with their components reversed."""

    def __init__(self, inner, name):
        self.inner, self.name, self.dim = inner, name, inner.dim

    def embed_documents(self, texts, **kw):
        return np.asarray(self.inner.embed_documents(texts))[:, ::-1]

    def embed_query(self, text):
        return np.asarray(self.inner.embed_query(text))[::-1]


def test_a_store_written_by_another_model_is_refused(filled, minilm):
    with pytest.raises(IndexFormatError, match="'all-MiniLM-L6-v2'.*'bge-small-en-v1.5'"):
        StoreRetriever(filled, Swapped(minilm, "bge-small-en-v1.5"))


def test_a_swapped_model_of_the_same_name_and_dimension_is_refused_by_its_fingerprint(minilm):
    store = ChromaStore.in_memory()
    StoreRetriever(store, minilm).add(FRUIT)
    assert json.loads(store.recorded_embedder()[PROBES_KEY]) == embedder_fingerprint(minilm)["probes"]
    with pytest.raises(EmbedderMismatchError, match="another model under the same name"):
        StoreRetriever(store, Swapped(minilm, minilm.name))  # refused when the retriever is made
    # the rows carry the record too: a collection whose own metadata lost it is refused on the first hit
    bare = ChromaStore(store.client.get_or_create_collection("bare"), client=store.client)
    rows = store.collection.get(include=["embeddings", "documents", "metadatas"])
    bare.collection.add(
        ids=rows["ids"], embeddings=rows["embeddings"], documents=rows["documents"], metadatas=rows["metadatas"]
    )
    assert bare.recorded_embedder() is None
    with pytest.raises(EmbedderMismatchError, match=r"\(object '.+'\).*another model under the same name"):
        StoreRetriever(bare, Swapped(minilm, minilm.name))
    # the same weights under another name are accepted, and the record never reaches the caller
    hit = StoreRetriever(bare, Swapped(Swapped(minilm, "x"), "minilm-again")).search(Q, k=1)[0]
    assert hit.id == "everest" and not any(k.startswith("retrievekit_") for k in hit.obj.metadata)
    store.close()


def test_a_store_written_before_fingerprints_is_checked_by_name_and_dimension_with_a_warning(minilm):
    store = ChromaStore.in_memory()
    vecs = minilm.embed_documents([p.text for p in FRUIT])
    store.add(FRUIT, vecs, record={"retrievekit_embedder": minilm.name, "retrievekit_dim": minilm.dim})
    with pytest.warns(UnverifiedIndexWarning, match="records no fingerprint"):
        assert StoreRetriever(store, minilm).search(Q, k=1)[0].id == "everest"
    with pytest.raises(EmbedderMismatchError, match="'all-MiniLM-L6-v2'.*'bge-small-en-v1.5'"):
        StoreRetriever(store, Swapped(minilm, "bge-small-en-v1.5"))
    store.close()


def test_a_chroma_collection_written_by_another_tool_is_searched_with_its_own_ids_and_metadata(minilm):
    store = ChromaStore.in_memory()
    vecs = minilm.embed_documents([p.text for p in FRUIT]).tolist()
    store.collection.add(
        ids=[f"doc-{p.id}" for p in FRUIT],
        embeddings=vecs,
        documents=[p.text for p in FRUIT],
        metadatas=[{"source": "wiki"} for _ in FRUIT],
    )
    hit = StoreRetriever(store, minilm).search(Q, k=1)[0]
    assert (hit.id, hit.obj.text, dict(hit.obj.metadata)) == ("doc-everest", FRUIT[4].text, {"source": "wiki"})
    store.close()


def test_store_kinds_open_by_name_and_refuse_unknown_ones(tmp_path):
    store = open_store("chroma", path=tmp_path / "c", collection_name="mine", create=True)
    store.add([Passage(id="a", text="x")], np.ones((1, 2)), record={"retrievekit_embedder": "e", "retrievekit_dim": 2})
    store.close()
    again = open_store("chroma", path=tmp_path / "c", collection_name="mine")
    assert again.count() == 1 and again.recorded_embedder() == {"retrievekit_embedder": "e", "retrievekit_dim": 2}
    again.close()
    with pytest.raises(IndexFormatError, match="no Chroma collection 'other'"):
        open_store("chroma", path=tmp_path / "c", collection_name="other")
    with pytest.raises(InvalidInputError, match="unknown vector store kind"):
        open_store("nope")


def test_a_store_call_that_hangs_ends_at_the_deadline_and_connection_errors_are_typed():
    release = threading.Event()
    start = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="table t did not answer query within 0.3 s"):
        StoreDeadline(0.3, where="table t").run("query", lambda: release.wait(30))
    assert time.monotonic() - start < 2.0
    release.set()

    class OperationalError(Exception):  # the class name every SQL driver uses for a lost server
        pass

    def lost():
        raise OperationalError("server closed the connection unexpectedly")

    with pytest.raises(StoreUnavailableError, match="cannot reach table t for count"):
        StoreDeadline(5.0, where="table t").run("count", lost)
    with pytest.raises(KeyError):  # anything else is the caller's bug, raised as it is
        StoreDeadline(5.0, where="table t").run("count", lambda: {}["x"])


def _methods(store, minilm):
    ctx = {"corpus": FRUIT, "store": StoreRetriever(store, minilm)}
    return {
        "hybrid": build_method("hybrid", MethodContext(**ctx)),
        "oneshot": build_method("oneshot", MethodContext(**ctx, options={"budget": 60})),
        "arm": build_method("arm", MethodContext(**ctx, llm="none")),
        "llm-rerank": build_method(
            "llm-rerank", MethodContext(**ctx, llm=WordScoreLLM("mountain"), options={"calls": "1"})
        ),
        "judge-rerank": build_method(
            "judge-rerank", MethodContext(**ctx, judge=WordJudge("mountain"), options={"first_stage": "dense"})
        ),
    }


def test_the_store_is_the_dense_side_of_every_method_that_embeds_and_is_never_written(filled, minilm):
    spy = Spy(filled)
    for name, method in _methods(spy, minilm).items():
        before = spy.searches
        hits = method.search(Q, k=3)
        assert spy.searches > before, f"{name} did not search the store"
        assert hits and hits[0].id == "everest", name
    assert spy.writes == 0 and filled.count() == len(FRUIT)


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.timeout(300)
def test_a_chroma_server_behind_the_interface_ranks_as_the_index_and_fails_typed_when_paused(tmp_path, minilm):
    from _chroma_server import chroma_server

    with chroma_server(tmp_path / "srv") as (proc, client, port):
        idx = DenseIndex.build(FRUIT, client=client, collection_name="rk-live", embedder=minilm)
        store = open_store("chroma-server", host="127.0.0.1", port=port, timeout=2.0, collection_name="rk-live")
        dense = StoreRetriever(store, minilm)
        assert [h.id for h in dense.search(Q, k=6)] == [h.id for h in idx.search(Q, k=6)]
        proc.send_signal(signal.SIGSTOP)  # paused: accepts connections, never answers
        try:
            start = time.monotonic()
            with pytest.raises(StoreUnavailableError, match="did not answer"):
                dense.search(Q, k=1)
            assert time.monotonic() - start < 3 * 2.0 + 1.5 + 5.0  # three tries of 2 s, 1.5 s of backoff, slack
        finally:
            proc.send_signal(signal.SIGCONT)
        assert dense.search(Q, k=1)[0].id == "everest"
        store.close()
