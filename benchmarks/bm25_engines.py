"""BM25 engines side by side in one run (issues #63 and #61): today's :class:`BM25Index`, tantivy, bm25s
memory-mapped, SQLite FTS5, :class:`BM25Index` on its tantivy engine (``bm25index_tantivy``: the hits' objects
read from its doc store), and tantivy storing each document's JSON (``tantivy_objects``: each hit's JSON read back
and parsed, as a user who wants the documents does), on the corpus of ``benchmarks/scale.py`` (SciFact's abstracts,
then seeded generated documents of the same length).

Every engine sees the same analyzer, today's: words of two or more word characters, lower-cased, bm25s' 33 English
stop words (Lucene's list) removed, then the Snowball English stemmer. tantivy runs it as its own analyzer
(``Tokenizer.regex(r"\\w\\w+")`` → lowercase → ``custom_stopword`` → ``stemmer("english")``); bm25s and FTS5 are
handed the tokens bm25s' tokenizer makes (FTS5 indexes them space-joined with ``unicode61``, which changes nothing
in them). k1 = 1.2, b = 0.75 everywhere (FTS5's are fixed at those).

Rows (each in its own child processes, one BLAS / OpenMP / numba thread):

* ``scale`` (engine, n): a child generates the corpus, builds the index and writes it to a folder (build CPU s, peak
  RSS above what the corpus took, disk MB: the folder, and the part that is not a copy of the documents); a fresh
  child opens the folder and answers 200 SciFact dev claims (k = 10; its peak RSS, the first query apart, wall ms a
  query p50 / p95 and CPU ms a query). A hit is read as its id (tantivy: a stored field; bm25s: a memory-mapped id
  array; FTS5: a column), not a whole document, except for :class:`BM25Index`, which holds its objects, and
  ``tantivy_objects``.
* ``quality`` (engine): SciFact dev nDCG@10 over the 5,183 abstracts (215 claims), as ``retrievekit bench``
  computes it (0.681 for today's).
* ``exact`` (engine that updates in place: tantivy, FTS5): over ``--exact-n`` documents, delete every tenth and add
  as many new ones, then compare the top 10 of 200 claims with a fresh build over the live documents: the largest
  score difference at equal ranks and whether the id lists are equal; again after a merge (FTS5: ``optimize``;
  tantivy: the Python bindings expose no merge, so the update is made in ten commits, enough segments for the
  default LogMergePolicy to merge on its own, and the segment count is recorded); and tantivy with additions
  only (``add_only``: no deletes, one commit). ``bm25index_tantivy`` (``BM25Index`` on the tantivy engine) makes the
  same update in one and in ten commits with its deletes left uncompacted, then compacts, and records the search
  time of each state beside a fresh build's (the 200 claims asked once, then ``again``: what a search reads for its
  second scoring is kept until the next change).

Each finished row is a line of ``--records`` (JSONL); a rerun skips what is recorded, then prints the tables. Needs
``pip install tantivy numba`` beside retrievekit (numba is bm25s' fast top-k; its first query compiles it).

    nice -n 10 python benchmarks/bm25_engines.py --data-dir "$RETRIEVEKIT_DATA_DIR" --sizes 10000 100000 400000 \
        --records benchmarks/records/bm25_engines/records.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import scale_corpus  # noqa: E402

ENGINES = ("bm25index", "tantivy", "bm25s_mmap", "sqlite_fts5", "bm25index_tantivy", "tantivy_objects")
UPDATABLE = ("tantivy", "sqlite_fts5", "bm25index_tantivy")
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")
Searcher = Callable[[str, int], list[tuple[str, float]]]


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _du_mb(path: Path, skip: Sequence[str] = ()) -> float:
    files = [p for p in path.rglob("*") if p.is_file() and p.name not in skip]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def _tokenizer() -> Any:
    from retrievekit.core.index.bm25 import BM25Config, _tokenizer

    return _tokenizer(BM25Config())


def _tokens(tok: Any, texts: list[str]) -> list[list[str]]:
    return tok.tokenize(texts, update_vocab=True, return_as="string", show_progress=False)  # type: ignore[no-any-return]


# --- tantivy -------------------------------------------------------------------------------------------------


def _tantivy_schema(objects: bool = False) -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    if objects:  # the document's JSON, stored to be read back per hit
        sb.add_bytes_field("obj", stored=True)
    sb.add_text_field("text", stored=False, tokenizer_name="rk_en", index_option="freq")
    return sb.build()


def _tantivy_index(folder: Path | None, objects: bool = False) -> Any:
    import tantivy
    from bm25s.stopwords import STOPWORDS_EN

    index = tantivy.Index(_tantivy_schema(objects), path=None if folder is None else str(folder))
    analyzer = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(r"\w\w+"))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.custom_stopword(list(STOPWORDS_EN)))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    index.register_tokenizer("rk_en", analyzer)
    return index, analyzer


def _tantivy_add(writer: Any, objs: Sequence[Any], objects: bool = False) -> None:
    import tantivy

    for o in objs:
        fields = {"id": o.id, "text": o.index_text()}
        if objects:
            fields["obj"] = json.dumps({"id": o.id, "title": o.title, "text": o.text}).encode("utf-8")
        writer.add_document(tantivy.Document(**fields))


def build_tantivy(objs: Sequence[Any], folder: Path | None, objects: bool = False) -> Any:
    """A tantivy index of ``objs`` in ``folder`` (in memory with None), one segment (one indexing thread);
    ``objects``: each document's JSON stored too (``tantivy_objects``)."""
    index, _ = _tantivy_index(folder, objects)
    writer = index.writer(heap_size=1_000_000_000, num_threads=1)
    _tantivy_add(writer, objs, objects)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def tantivy_searcher(index: Any, objects: bool = False) -> Searcher:
    """Top ``k`` ``(id, score)`` pairs; ``objects``: each hit's stored JSON read and parsed, its id taken from it (what
    a user who wants the documents back does)."""
    import tantivy

    _, analyzer = _tantivy_index(None)
    schema = index.schema
    searcher = index.searcher()

    def search(q: str, k: int) -> list[tuple[str, float]]:
        terms = analyzer.analyze(q)
        if not terms:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t)) for t in terms]
        )
        hits = searcher.search(query, k, count=False).hits
        if objects:
            return [(json.loads(bytes(searcher.doc(a).get_first("obj")))["id"], float(s)) for s, a in hits]
        return [(searcher.doc(a)["id"][0], float(s)) for s, a in hits]

    return search


def open_tantivy(folder: Path, objects: bool = False) -> Searcher:
    import tantivy

    index = tantivy.Index.open(str(folder))
    _, analyzer = _tantivy_index(None)
    index.register_tokenizer("rk_en", analyzer)
    return tantivy_searcher(index, objects)


# --- bm25s, memory-mapped --------------------------------------------------------------------------------------


def build_bm25s(objs: Sequence[Any], folder: Path) -> None:
    from retrievekit.core.index.bm25 import BM25Config, BM25Index

    idx = BM25Index.build(objs, BM25Config(engine="bm25s"))
    idx._model.save(str(folder / "bm25s"), show_progress=False)  # type: ignore[attr-defined]
    idx._tokenizer.save_vocab(str(folder / "bm25s"))  # type: ignore[attr-defined]
    np.save(folder / "ids.npy", np.array([o.id for o in objs]))


def open_bm25s(folder: Path) -> Searcher:
    import bm25s

    model = bm25s.BM25.load(str(folder / "bm25s"), mmap=True, load_corpus=False, show_progress=False, verbosity=0)
    tok = _tokenizer()
    tok.load_vocab(str(folder / "bm25s"))
    ids = np.load(folder / "ids.npy", mmap_mode="r")

    def search(q: str, k: int) -> list[tuple[str, float]]:
        qt = tok.tokenize([q], update_vocab=False, return_as="ids", show_progress=False)[0]
        known = [t for t in qt if t != 0]
        if not known:
            return []
        docs, scores = model.retrieve([known], k=k, backend_selection="numba", n_threads=1, show_progress=False)
        return [(str(ids[d]), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return search


# --- SQLite FTS5 ---------------------------------------------------------------------------------------------

_FTS = "CREATE VIRTUAL TABLE fts USING fts5(doc_id UNINDEXED, body, tokenize='unicode61')"


def fts_add(con: sqlite3.Connection, objs: Sequence[Any], tok: Any) -> None:
    rows = _tokens(tok, [o.index_text() for o in objs])
    con.executemany(
        "INSERT INTO fts(doc_id, body) VALUES (?, ?)", ((o.id, " ".join(t)) for o, t in zip(objs, rows, strict=True))
    )


def build_fts(objs: Sequence[Any], path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(_FTS)
    tok = _tokenizer()
    for i in range(0, len(objs), 10_000):
        fts_add(con, objs[i : i + 10_000], tok)
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return con


def fts_searcher(con: sqlite3.Connection) -> Searcher:
    tok = _tokenizer()
    sql = "SELECT doc_id, -bm25(fts) AS s FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?"

    def search(q: str, k: int) -> list[tuple[str, float]]:
        terms = _tokens(tok, [q])[0]
        if not terms:
            return []
        return [(str(i), float(s)) for i, s in con.execute(sql, (" OR ".join(f'"{t}"' for t in terms), k))]

    return search


# --- today's BM25Index ----------------------------------------------------------------------------------------


def open_bm25index(folder: Path) -> Searcher:
    from retrievekit.core.index.bm25 import BM25Index

    return open_bm25(BM25Index.load(folder))


def build_engine(engine: str, objs: Sequence[Any], folder: Path) -> None:
    """Build ``engine``'s index of ``objs`` and write it to ``folder``."""
    if engine == "bm25index":  # BM25Index on bm25s (the default engine until tantivy)
        from retrievekit.core.index.bm25 import BM25Config, BM25Index

        BM25Index.build(objs, BM25Config(engine="bm25s")).save(folder)
    elif engine == "bm25index_tantivy":  # written straight into its folder, as a folder index is built
        from retrievekit.core.index.bm25 import BM25Config, BM25Index

        BM25Index.build(objs, BM25Config(engine="tantivy"), folder=folder)
    elif engine in ("tantivy", "tantivy_objects"):
        folder.mkdir(parents=True)
        build_tantivy(objs, folder, objects=engine == "tantivy_objects")
    elif engine == "bm25s_mmap":
        folder.mkdir(parents=True)
        build_bm25s(objs, folder)
    else:
        folder.mkdir(parents=True)
        build_fts(objs, str(folder / "fts.sqlite")).close()


def open_engine(engine: str, folder: Path) -> Searcher:
    """Open ``engine``'s index in ``folder`` in this process."""
    if engine in ("bm25index", "bm25index_tantivy"):
        return open_bm25index(folder)
    if engine in ("tantivy", "tantivy_objects"):
        return open_tantivy(folder, objects=engine == "tantivy_objects")
    if engine == "bm25s_mmap":
        return open_bm25s(folder)
    return fts_searcher(sqlite3.connect(f"file:{folder / 'fts.sqlite'}?mode=ro", uri=True))


def _claims(data_dir: str, limit: int | None = None) -> Any:
    from retrievekit.core.eval.datasets import load_dataset

    return load_dataset("scifact", data_dir, split="dev", limit=limit)


def child_build(engine: str, data_dir: str, n: int, folder: Path) -> dict[str, Any]:
    import bm25s  # noqa: F401  (the engines' modules, so that their import is not counted as the build's)
    import tantivy  # noqa: F401

    import retrievekit.core.index.bm25  # noqa: F401

    corpus = scale_corpus(data_dir, n)
    before = _rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    build_engine(engine, corpus, folder)
    row = {"build_cpu_s": round(time.process_time() - cpu, 2), "build_wall_s": round(time.perf_counter() - started, 2)}
    row["build_peak_rss_above_corpus_mb"] = round(_rss_mb() - before, 1)
    row["disk_mb"] = _du_mb(folder)
    row["disk_mb_without_documents"] = _du_mb(folder, skip=("objects.jsonl",))
    return row


def child_open(engine: str, data_dir: str, folder: Path, queries: int) -> dict[str, Any]:
    claims = [q.text for q in _claims(data_dir, queries).queries]
    base = _rss_mb()
    started = time.perf_counter()
    search = open_engine(engine, folder)
    t0 = time.perf_counter()
    search(claims[0], 10)
    row = {"open_ms": round(1000 * (t0 - started), 1), "first_query_ms": round(1000 * (time.perf_counter() - t0), 1)}
    ms: list[float] = []
    cpu = time.process_time()
    for q in claims:
        t = time.perf_counter()
        search(q, 10)
        ms.append(1000 * (time.perf_counter() - t))
    row["cpu_ms_per_query"] = round(1000 * (time.process_time() - cpu) / len(claims), 3)
    row["ms_per_query_p50"] = round(statistics.median(ms), 3)
    row["ms_per_query_p95"] = round(sorted(ms)[int(0.95 * len(ms)) - 1], 3)
    row["open_python_rss_mb"], row["open_peak_rss_mb"], row["queries"] = base, _rss_mb(), len(claims)
    return row


def child_quality(engine: str, data_dir: str) -> dict[str, Any]:
    from retrievekit.core.eval.metrics import ndcg_at_k

    ds = _claims(data_dir)
    corpus = list(ds.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        build_engine(engine, corpus, Path(tmp) / "index")
        search = open_engine(engine, Path(tmp) / "index")
        scores = [ndcg_at_k([i for i, _ in search(q.text, 10)], ds.qrels.get(q.id, {}), 10) for q in ds.queries]
    return {"ndcg@10": round(sum(scores) / len(scores), 4), "claims": len(scores), "n": len(corpus)}


# --- exactness after updates -----------------------------------------------------------------------------------


def compare(got: Searcher, fresh: Searcher, claims: Sequence[str]) -> dict[str, Any]:
    """Top 10 of ``got`` against ``fresh`` over ``claims``: the largest score difference at equal ranks, and the
    claims whose id lists differ."""
    worst, rel, other = 0.0, 0.0, 0
    for q in claims:
        a, b = got(q, 10), fresh(q, 10)
        other += [i for i, _ in a] != [i for i, _ in b]
        worst = max([worst] + [abs(x[1] - y[1]) for x, y in zip(a, b, strict=False)])
        rel = max([rel] + [abs(x[1] - y[1]) / abs(y[1]) for x, y in zip(a, b, strict=False) if y[1]])
    return {
        "max_abs_score_diff": float(f"{worst:.3g}"),
        "max_rel_score_diff": float(f"{rel:.3g}"),
        "claims_with_other_ids": other,
        "exact_1e-6": worst <= 1e-6,
    }


def _update_plan(data_dir: str, n: int) -> tuple[list[Any], list[str], list[Any], list[Any]]:
    """(base corpus, ids deleted, objects added, live objects): every tenth deleted, as many added."""
    objs = scale_corpus(data_dir, n + n // 10)
    base, added = objs[:n], objs[n:]
    deleted = [o.id for i, o in enumerate(base) if i % 10 == 3]
    gone = set(deleted)
    return base, deleted, added, [o for o in base if o.id not in gone] + added


def _tantivy_update(index: Any, deleted: list[str], added: list[Any], commits: int) -> None:
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for c in range(commits):
        for i in deleted[c::commits]:
            writer.delete_documents_by_term("id", i)
        _tantivy_add(writer, added[c::commits])
        writer.commit()
    writer.wait_merging_threads()
    index.reload()


def exact_tantivy(data_dir: str, n: int, claims: list[str]) -> dict[str, Any]:
    base, deleted, added, live = _update_plan(data_dir, n)
    fresh = tantivy_searcher(build_tantivy(live, None))
    row: dict[str, Any] = {}
    for name, commits in (("one_commit", 1), ("ten_commits_merged", 10)):
        index = build_tantivy(base, None)
        _tantivy_update(index, deleted, added, commits)
        row[name] = {**compare(tantivy_searcher(index), fresh, claims), "segments": index.searcher().num_segments}
    index = build_tantivy(base, None)  # additions alone: a new segment, no deletes
    _tantivy_update(index, [], added, 1)
    fresh = tantivy_searcher(build_tantivy(base + added, None))
    row["add_only"] = {**compare(tantivy_searcher(index), fresh, claims), "segments": index.searcher().num_segments}
    return row


def exact_fts(data_dir: str, n: int, claims: list[str]) -> dict[str, Any]:
    base, deleted, added, live = _update_plan(data_dir, n)
    rowid = {o.id: i + 1 for i, o in enumerate(base)}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = fts_searcher(build_fts(live, f"{tmp}/fresh.sqlite"))
        con = build_fts(base, f"{tmp}/updated.sqlite")
        con.executemany("DELETE FROM fts WHERE rowid = ?", ((rowid[i],) for i in deleted))
        fts_add(con, added, _tokenizer())
        con.commit()
        row = {"one_commit": compare(fts_searcher(con), fresh, claims)}
        con.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        con.commit()
        row["optimized"] = compare(fts_searcher(con), fresh, claims)
    return row


def _timed(search: Searcher, claims: Sequence[str]) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for q in claims:
        search(q, 10)
    return {
        "ms_per_query": round(1000 * (time.perf_counter() - wall) / len(claims), 3),
        "cpu_ms_per_query": round(1000 * (time.process_time() - cpu) / len(claims), 3),
    }


def exact_bm25index_tantivy(data_dir: str, n: int, claims: list[str]) -> dict[str, Any]:
    """``BM25Index`` on the tantivy engine: the same update (deletes left uncompacted), then compacted; each with its
    search time (while deleted documents are counted, the candidates are scored again over the live statistics)."""
    from retrievekit.core.index.bm25 import BM25Config, BM25Index

    cfg = BM25Config(engine="tantivy")
    base, deleted, added, live = _update_plan(data_dir, n)
    fresh = BM25Index.build(live, cfg)
    row: dict[str, Any] = {"fresh": _timed(open_bm25(fresh), claims)}
    for name, commits in (("one_commit", 1), ("ten_commits_merged", 10)):
        idx = BM25Index.build(base, cfg)
        for c in range(commits):
            idx.delete(deleted[c::commits], compact=False)
            idx.add(added[c::commits])
        row[name] = {"pending_deletes": idx.pending_deletes, **_timed(open_bm25(idx), claims)}  # first: cold
        row[name]["again"] = _timed(open_bm25(idx), claims)  # the same claims asked again
        row[name] |= compare(open_bm25(idx), open_bm25(fresh), claims)
    idx.compact()
    row["compacted"] = {**_timed(open_bm25(idx), claims), **compare(open_bm25(idx), open_bm25(fresh), claims)}
    return row


def open_bm25(idx: Any) -> Searcher:
    return lambda q, k: [(h.id, h.score) for h in idx.search(q, k)]


def child_exact(engine: str, data_dir: str, n: int, queries: int) -> dict[str, Any]:
    claims = [q.text for q in _claims(data_dir, queries).queries]
    probes = {"tantivy": exact_tantivy, "sqlite_fts5": exact_fts, "bm25index_tantivy": exact_bm25index_tantivy}
    probe = probes[engine]
    return {"deleted": n // 10, "added": n // 10, **probe(data_dir, n, claims)}


# --- driver ----------------------------------------------------------------------------------------------------


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _child(args: argparse.Namespace, spec: str, folder: str = "") -> dict[str, Any]:
    env = {**os.environ, **dict.fromkeys(_THREADS, "1")}
    cmd = [sys.executable, __file__, "--child", spec, "--data-dir", args.data_dir, "--queries", str(args.queries)]
    out = subprocess.run([*cmd, "--folder", folder], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{spec} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_child(spec: str, data_dir: str, folder: str, queries: int) -> dict[str, Any]:
    """One child's measurement (``kind:engine:n``), in this process."""
    kind, engine, n = spec.split(":")
    if kind == "build":
        return child_build(engine, data_dir, int(n), Path(folder))
    if kind == "open":
        return child_open(engine, data_dir, Path(folder), queries)
    if kind == "quality":
        return child_quality(engine, data_dir)
    return child_exact(engine, data_dir, int(n), queries)


def _todo(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    rows = [("quality", e, 0) for e in args.engines]
    rows += [("exact", e, args.exact_n) for e in args.engines if e in UPDATABLE]
    return rows + [("scale", e, n) for n in sorted(args.sizes) for e in args.engines]


def _run_row(args: argparse.Namespace, kind: str, engine: str, n: int) -> dict[str, Any]:
    row: dict[str, Any] = {"kind": kind, "engine": engine, "n": n}
    if kind != "scale":
        return {**row, **_child(args, f"{kind}:{engine}:{n}")}
    tmp = tempfile.mkdtemp(prefix=f"bm25-{engine}-{n}-", dir=args.work_dir)
    try:
        folder = str(Path(tmp) / "index")
        row.update(_child(args, f"build:{engine}:{n}", folder))
        return {**row, **_child(args, f"open:{engine}:{n}", folder)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_tables(rows: list[dict[str, Any]]) -> None:
    print("| engine | n | build CPU s | build peak RSS above corpus MB | disk MB (without documents) | open + 200 claims"
          " peak RSS MB | ms a query p50 / p95 | CPU ms a query |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted((r for r in rows if r["kind"] == "scale"), key=lambda r: (r["n"], ENGINES.index(r["engine"]))):
        disk = f"{r['disk_mb']:,.1f} ({r['disk_mb_without_documents']:,.1f})"
        cells = [f"{r['n']:,}", f"{r['build_cpu_s']:,.1f}", f"{r['build_peak_rss_above_corpus_mb']:,.0f}", disk]
        cells += [f"{r['open_peak_rss_mb']:,.0f}", f"{r['ms_per_query_p50']} / {r['ms_per_query_p95']}"]
        print(f"| {r['engine']} | " + " | ".join(cells) + f" | {r['cpu_ms_per_query']} |")
    for r in rows:
        if r["kind"] == "quality":
            print(f"quality {r['engine']}: SciFact dev nDCG@10 {r['ndcg@10']} ({r['claims']} claims)")
        elif r["kind"] == "exact":
            rest = {k: v for k, v in r.items() if k not in ("kind", "engine")}
            print(f"exact {r['engine']}: {json.dumps(rest)}")


def main(argv: list[str] | None = None) -> int:
    """Run the rows not recorded yet, then print the tables (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 400_000])
    p.add_argument("--engines", nargs="*", default=list(ENGINES), choices=ENGINES)
    p.add_argument("--queries", type=int, default=200, help="SciFact dev claims a fresh process answers")
    p.add_argument("--exact-n", type=int, default=10_000, help="documents of the exactness probe")
    p.add_argument("--records", default="runs/bm25_engines/records.jsonl")
    p.add_argument("--work-dir", default=None, help="where index folders are written (removed after each row)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--folder", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child is not None:
        print(json.dumps(run_child(args.child, args.data_dir, args.folder, args.queries)))
        return 0
    records = Path(args.records)
    records.parent.mkdir(parents=True, exist_ok=True)
    for kind, engine, n in _todo(args):
        if any((r["kind"], r["engine"], r["n"]) == (kind, engine, n) for r in _recorded(records)):
            continue
        row = _run_row(args, kind, engine, n)
        print(json.dumps(row), flush=True)
        with open(records, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
    print_tables(_recorded(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
