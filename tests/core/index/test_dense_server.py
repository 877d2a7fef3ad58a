"""Dense indexes on a real Chroma server (``chroma run`` on loopback): all-or-nothing builds (#15 item 2) and a
finite timeout with typed errors for a frozen or stopped server (#15 item 11)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
from _chroma_server import chroma_server

from retrievekit.core.errors import IndexFormatError, StoreUnavailableError, UnverifiedIndexWarning
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

_BUILD_IN_CHILD = textwrap.dedent(
    """
    import sys, chromadb
    from retrievekit.core.index.dense import DenseIndex
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.types import Passage

    class Announcing:  # the real MiniLM, printing a line after each batch so the parent knows when to kill us
        def __init__(self, inner):
            self.inner, self.name, self.dim = inner, inner.name, inner.dim
        def embed_query(self, text):
            return self.inner.embed_query(text)
        def embed_documents(self, texts, **kw):
            out = self.inner.embed_documents(texts)
            print("BATCH", flush=True)
            return out

    client = chromadb.HttpClient(
        host="127.0.0.1", port=int(sys.argv[1]), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    objs = [Passage(id=f"new{i}", text=f"replacement passage number {i}") for i in range(2000)]
    DenseIndex.build(objs, client=client, collection_name="rk-live", embedder=Announcing(MiniLMEmbedder.default()),
                     batch_size=40, overwrite=True)
    print("DONE", flush=True)
    """
)


def _names(client) -> set[str]:
    return {c.name if hasattr(c, "name") else c for c in client.list_collections()}


def test_a_build_killed_part_way_never_replaces_the_index(tmp_path, minilm, small_corpus):
    with chroma_server(tmp_path / "srv") as (_, client, port):
        DenseIndex.build(small_corpus, client=client, collection_name="rk-live", embedder=minilm)
        child = subprocess.Popen(
            [sys.executable, "-c", _BUILD_IN_CHILD, str(port)], stdout=subprocess.PIPE, text=True, bufsize=1
        )
        batches = 0
        assert child.stdout is not None
        for line in child.stdout:
            batches += line.startswith("BATCH")
            if batches == 5:  # 200 of 2,000 objects sent: kill the build part-way
                child.kill()
                break
        child.wait()
        assert batches == 5, "the child build ended before it could be killed"
        old = DenseIndex.open(client=client, collection_name="rk-live", embedder=minilm)
        assert len(old) == len(small_corpus) and old.search("highest mountain", k=1)[0].id == "everest"
        (orphan,) = [n for n in _names(client) if "-rk-building-" in n]
        with pytest.raises(IndexFormatError, match="never finished"):
            DenseIndex.open(client=client, collection_name=orphan, embedder=minilm)


def test_overwrite_swaps_in_a_complete_collection(tmp_path, minilm, small_corpus):
    with chroma_server(tmp_path / "srv") as (_, client, _port):
        DenseIndex.build(small_corpus, client=client, collection_name="rk-live", embedder=minilm)
        new = [Passage(id="k2", text="K2 is the second highest mountain on Earth.")]
        DenseIndex.build(new, client=client, collection_name="rk-live", embedder=minilm, overwrite=True)
        assert _names(client) == {"rk-live"}  # no temporary or old collection left behind
        idx = DenseIndex.open(client=client, collection_name="rk-live", embedder=minilm)
        assert len(idx) == 1 and idx.search("mountain", k=5)[0].id == "k2"


def test_count_mismatch_on_the_server_is_refused(tmp_path, minilm, small_corpus):
    with chroma_server(tmp_path / "srv") as (_, client, _port):
        DenseIndex.build(small_corpus, client=client, collection_name="rk-live", embedder=minilm)
        client.get_collection("rk-live").delete(ids=["everest"])  # objects lost behind retrievekit's back
        with pytest.raises(IndexFormatError, match="marked complete with 6"):
            DenseIndex.open(client=client, collection_name="rk-live", embedder=minilm)


@pytest.mark.parametrize(("state", "match"), [(None, "no completion mark"), ("adding", "an add\\(\\) did not finish")])
def test_an_unmarked_or_half_added_collection_is_refused_unless_asked(tmp_path, minilm, small_corpus, state, match):
    with chroma_server(tmp_path / "srv") as (_, client, _port):
        DenseIndex.build(small_corpus, client=client, collection_name="rk-live", embedder=minilm)
        col = client.get_collection("rk-live")
        meta = {k: v for k, v in col.metadata.items() if k != "retrievekit_state"}
        col.modify(metadata=meta if state is None else {**meta, "retrievekit_state": state})
        with pytest.raises(IndexFormatError, match=match):
            DenseIndex.open(client=client, collection_name="rk-live", embedder=minilm)
        with pytest.warns(UnverifiedIndexWarning, match=match):
            idx = DenseIndex.open(client=client, collection_name="rk-live", embedder=minilm, verify=False)
        assert len(idx) == len(small_corpus)


def test_frozen_then_stopped_server_raise_typed_errors(tmp_path, minilm, small_corpus):
    with chroma_server(tmp_path / "srv") as (proc, client, _port):
        DenseIndex.build(small_corpus, client=client, collection_name="rk-live", embedder=minilm)
        idx = DenseIndex.open(client=client, collection_name="rk-live", embedder=minilm, timeout=1.0, retries=1)
        proc.send_signal(signal.SIGSTOP)  # frozen: it accepts connections but never answers
        try:
            with pytest.raises(StoreUnavailableError, match=r"did not answer query within 1.0 s \(2 tries\)"):
                idx.search("highest mountain", k=1)
        finally:
            proc.send_signal(signal.SIGCONT)
        assert idx.search("highest mountain", k=1)[0].id == "everest"  # recovers once the server answers
        proc.terminate()
        proc.wait(timeout=60)
        with pytest.raises(StoreUnavailableError, match="cannot reach http://127.0.0.1"):
            idx.search("highest mountain", k=1)


def test_http_client_gives_up_on_a_frozen_server_typed(tmp_path):
    import time

    from retrievekit.core.index.dense import http_client

    with chroma_server(tmp_path / "srv") as (proc, _client, port):
        assert http_client("127.0.0.1", port, timeout=30).heartbeat() > 0
        proc.send_signal(signal.SIGSTOP)  # accepts connections, never answers: chromadb.HttpClient() would hang
        try:
            start = time.monotonic()
            with pytest.raises(StoreUnavailableError, match=rf"127.0.0.1:{port} did not answer within 2 s"):
                http_client("127.0.0.1", port, timeout=2)
            assert time.monotonic() - start < 10
        finally:
            proc.send_signal(signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=60)
        with pytest.raises(StoreUnavailableError, match="cannot reach the Chroma server"):
            http_client("127.0.0.1", port, timeout=5)


def _kill_point(client, minilm, small_corpus, step: str) -> None:
    """Leave a real server as an overwrite of 'kbase' killed at ``step`` would (each step is one server call)."""
    from retrievekit.core.index.dense import DenseIndex as D

    new = [Passage(id=f"n{i}", text=f"replacement passage {i}") for i in range(3)]
    tmp = D._create(client, "kbase-rk-building-0000000000000001", minilm, len(new))
    D(tmp, minilm, client=client).add(new)  # the finished new build
    if step == "before the old rename":
        return
    client.get_collection("kbase", embedding_function=None).modify(name="kbase-rk-old-0000000000000001")
    if step == "between the renames":
        return
    tmp.modify(name="kbase")  # "before the delete": the old collection is left behind


@pytest.mark.parametrize("step", ["before the old rename", "between the renames", "before the delete"])
def test_an_overwrite_killed_at_any_step_is_recovered_on_open(tmp_path, minilm, small_corpus, step):
    with chroma_server(tmp_path / "srv") as (_proc, client, _port):
        DenseIndex.build(small_corpus, client=client, collection_name="kbase", embedder=minilm)
        _kill_point(client, minilm, small_corpus, step)
        idx = DenseIndex.open(client=client, collection_name="kbase", embedder=minilm)
        expected = small_corpus if step == "before the old rename" else None  # the old index, or the new one
        got = {h.id for h in idx.search("replacement passage", k=10)}
        assert got == ({p.id for p in expected} if expected else {"n0", "n1", "n2"})
        if step == "between the renames":  # the name was missing: open finished the swap and deleted the old one
            assert _names(client) == {"kbase"}
        # the next finished build sweeps what is left (an older build, an old collection)
        DenseIndex.build(small_corpus, client=client, collection_name="kbase", embedder=minilm, overwrite=True)
        assert _names(client) == {"kbase"}


def test_a_swap_killed_with_no_finished_build_rolls_back(tmp_path, minilm, small_corpus):
    with chroma_server(tmp_path / "srv") as (_proc, client, _port):
        DenseIndex.build(small_corpus, client=client, collection_name="kbase", embedder=minilm)
        DenseIndex._create(client, "kbase-rk-building-0000000000000002", minilm, 5)  # killed while adding
        client.get_collection("kbase", embedding_function=None).modify(name="kbase-rk-old-0000000000000002")
        idx = DenseIndex.open(client=client, collection_name="kbase", embedder=minilm)
        assert idx.search("highest mountain", k=1)[0].id == "everest"  # the old index took its name back
