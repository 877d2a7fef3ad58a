"""benchmarks/vector_paths.py on 3,000 vectors: every path (DenseIndex over Chroma, the faiss store, a real
PostgreSQL + pgvector with vector and halfvec columns, raw faiss) is built, tuned to the recall asked and recorded;
a second run resumes (runs nothing) and prints the same table; the exact answers are the stream's own."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from _paths import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import vector_paths  # noqa: E402


def test_the_stream_is_the_same_vectors_at_every_size_and_the_truth_is_exact(tmp_path):
    small = np.concatenate(list(vector_paths.chunks(12_000, 32, 5)))
    big = np.concatenate(list(vector_paths.chunks(25_000, 32, 5)))
    assert np.array_equal(small, big[:12_000])
    assert np.allclose(np.linalg.norm(big, axis=1), 1.0, atol=1e-5)
    emb = vector_paths.LookupEmbedder(32, 5, vector_paths.queries(4, 32, 5))
    assert np.array_equal(emb.embed_query("d12345"), big[12345])
    qs = vector_paths.queries(7, 32, 5)
    want = np.argsort(-(qs @ big.T), axis=1, kind="stable")[:, :10]
    assert np.array_equal(vector_paths.truth(25_000, 32, 5, 7, tmp_path), want)


@pytest.mark.timeout(600)
def test_every_path_reaches_the_recall_and_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    records = tmp_path / "rows.jsonl"
    argv = ["--sizes", "3000", "--dim", "32", "--queries", "30", "--recall", "0.9", "--records", str(records)]
    argv += ["--work-dir", str(tmp_path / "work")]
    assert vector_paths.main(argv) == 0
    rows = {r["path"]: r for r in map(json.loads, records.read_text().splitlines())}
    assert sorted(rows) == sorted(vector_paths.PATHS)
    for path, row in rows.items():
        assert row["reached"] and row["recall@10"] >= 0.9, path
        assert row["disk_mb"] > 0 and row["build_peak_rss_mb"] > 0 and row["p95_ms"] >= row["p50_ms"] > 0, path
    assert "Index Scan using items_hnsw" in rows["pgvector-halfvec"]["plan"]
    first = capsys.readouterr().out

    def no_child(*a, **kw):
        raise AssertionError("every row is recorded: nothing should run")

    monkeypatch.setattr(subprocess, "run", no_child)
    assert vector_paths.main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-7:] == first.splitlines()[-7:]
