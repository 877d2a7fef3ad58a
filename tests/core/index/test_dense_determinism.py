"""A dense folder answers the same in every process (Chroma's HNSW graph is built with one thread).

Chroma persists its HNSW segment every ``sync_threshold`` additions and re-inserts the rest from its log each time a
process opens the folder, by default on one thread per core, so the graph (and an approximate top-k) could differ
from one process to the next. Two fresh processes open the same 1,500-object folder and must return the same
top-100 for every query. The embedder is a fixed random projection (the point is the index, not the model).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap

from retrievekit.core.index import hnsw_writes
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage

_EMBEDDER = textwrap.dedent(
    """
    import hashlib
    import numpy as np

    class HashEmbedder:
        name, dim = "hash-64", 64
        def _one(self, text):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            return v / np.linalg.norm(v)
        def embed_documents(self, texts):
            return np.stack([self._one(t) for t in texts])
        def embed_query(self, text):
            return self._one(text)
    """
)
_QUERY_IN_CHILD = _EMBEDDER + textwrap.dedent(
    """
    import json, sys
    from retrievekit.core.index.dense import DenseIndex
    idx = DenseIndex.open(sys.argv[1], embedder=HashEmbedder())
    print(json.dumps([[h.id for h in idx.search(f"query {q}", k=100)] for q in range(20)]))
    """
)


def _top_100_in_two_processes(folder):
    runs = [
        subprocess.run([sys.executable, "-c", _QUERY_IN_CHILD, str(folder)], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    return [json.loads(r.stdout.strip().splitlines()[-1]) for r in runs]


def test_a_build_written_in_parts_ends_on_its_last_object(tmp_path, monkeypatch):
    """1,730 objects with a write every 500: writes at 500 and 1,000, then requests one object short of 1,500 and a
    last one with the remaining 231, so the graph on disk holds every object (none left in Chroma's log to insert
    again at open) and processes agree."""
    monkeypatch.setattr(hnsw_writes, "SYNC_EVERY", 500)
    namespace: dict = {}
    exec(_EMBEDDER, namespace)
    corpus = [Passage(id=f"p{i:04d}", text=f"passage number {i}") for i in range(1730)]
    DenseIndex.build(corpus, path=tmp_path / "dense", embedder=namespace["HashEmbedder"](), batch_size=100).close()
    with sqlite3.connect(tmp_path / "dense" / "chroma" / "chroma.sqlite3") as db:
        (logged,) = db.execute("SELECT count(*) FROM embeddings_queue").fetchone()
    assert logged <= 1  # Chroma keeps its last log position; the 230 would be here had the last write not landed
    first, second = _top_100_in_two_processes(tmp_path / "dense")
    assert all(len(ids) == 100 for ids in first)
    assert first == second


def test_two_processes_get_the_same_top_100(tmp_path):
    namespace: dict = {}
    exec(_EMBEDDER, namespace)  # the same embedder class the children use
    corpus = [Passage(id=f"p{i:04d}", text=f"passage number {i}") for i in range(1500)]
    DenseIndex.build(corpus, path=tmp_path / "dense", embedder=namespace["HashEmbedder"]()).close()
    first, second = _top_100_in_two_processes(tmp_path / "dense")
    assert all(len(ids) == 100 for ids in first)
    assert first == second
