"""Where a ``BM25Index`` query's time goes on the tantivy engine, beside tantivy's own query (issue #63: "at 400k at
least level with tantivy").

On the corpus of ``benchmarks/scale.py`` (n documents), a child builds two folders as ``benchmarks/bm25_engines.py``
does: ``tantivy`` (ids stored) and ``bm25index_tantivy`` (``BM25Index`` on its tantivy engine, the objects in its
doc store). A fresh child opens both and times the same 200 SciFact dev claims (k = 10, one thread, CPU ms a claim,
the best of three passes after a warm-up pass), part by part:

* ``tantivy_ids``: tantivy's top 10 and each hit's stored id (the peer of ``bm25_engines.py``);
* ``bm25index``: ``BM25Index.search``, the whole;
* ``engine``: the engine's search alone (analyzed terms in, objects out), without the index's checks and trace;
* ``search_k``: tantivy's search with the engine's query, asked for k hits;
* ``search_ask``: the same, asked for ``2k + TIE_ROOM`` hits, what the engine asks (so that every hit tied with the
  k-th comes back and ties are broken by id, whatever the segments);
* ``read_kept``: reading the stored documents of the hits kept (down to the k-th score, its ties included);
* ``parse_k``: making the k objects from their stored JSON.

It also counts the claims whose k-th hit ties the next one (``claims_tied``) and the mean number of hits kept. Each
row is a line of ``--records``; a rerun skips a recorded n.

    python benchmarks/bm25_cost_split.py --data-dir "$RETRIEVEKIT_DATA_DIR" --sizes 400000 \
        --records benchmarks/records/bm25_engines/cost_split.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _records import append_row, recorded_rows  # noqa: E402
from bm25_engines import _THREADS, _claims, build_engine, open_engine  # noqa: E402
from scale import scale_corpus  # noqa: E402

K = 10


def _best_ms(fn: Callable[[int], Any], count: int, passes: int = 3) -> float:
    """CPU ms per item of ``fn(i)`` for ``i`` in ``range(count)``: one warm-up pass, then the best of ``passes``."""
    for i in range(count):
        fn(i)
    best = float("inf")
    for _ in range(passes):
        cpu = time.process_time()
        for i in range(count):
            fn(i)
        best = min(best, (time.process_time() - cpu) / count)
    return round(1000 * best, 3)


def split(data_dir: str, folder: Path, queries: int) -> dict[str, Any]:
    """The parts' CPU ms a claim (module docstring), measured in this process."""
    from retrievekit.core.index.bm25 import BM25Index
    from retrievekit.core.index.bm25_engine import analyze
    from retrievekit.core.index.tantivy_docs import stored_object
    from retrievekit.core.index.tantivy_scores import TIE_ROOM, top_with_ties

    claims = [q.text for q in _claims(data_dir, queries).queries]
    peer = open_engine("tantivy", folder / "tantivy")
    index = BM25Index.load(folder / "bm25index_tantivy")
    engine = index._engine
    assert engine is not None, "a BM25Index on the tantivy engine"
    searcher, _ = engine._view()
    terms = [analyze(q) for q in claims]
    asked = [engine._query(t) for t in terms]
    kept = [top_with_ties(lambda m, q=q: searcher.search(q, m, count=False).hits, K) for q in asked]
    docs = [[searcher.doc(a) for _, a in hits] for hits in kept]
    n = len(claims)
    return {
        "queries": n,
        "claims_tied": sum(len(h) > K for h in kept),
        "mean_kept": round(statistics.mean(len(h) for h in kept), 2),
        "tantivy_ids": _best_ms(lambda i: peer(claims[i], K), n),
        "bm25index": _best_ms(lambda i: index.search(claims[i], K), n),
        "engine": _best_ms(lambda i: engine.search(terms[i], K), n),
        "search_k": _best_ms(lambda i: searcher.search(asked[i], K, count=False), n),
        "search_ask": _best_ms(lambda i: searcher.search(asked[i], 2 * K + TIE_ROOM, count=False), n),
        "read_kept": _best_ms(lambda i: [searcher.doc(a) for _, a in kept[i]], n),
        "parse_k": _best_ms(lambda i: [stored_object(d) for d in docs[i][:K]], n),
    }


def _child(argv: Sequence[str]) -> dict[str, Any]:
    env = {**os.environ, **dict.fromkeys(_THREADS, "1")}
    out = subprocess.run([sys.executable, __file__, *argv], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{argv[:2]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_size(data_dir: str, n: int, queries: int, work_dir: str | None) -> dict[str, Any]:
    """Build both folders in one child, split a query's time in a fresh one; the folders are removed after."""
    tmp = tempfile.mkdtemp(prefix=f"bm25-split-{n}-", dir=work_dir)
    try:
        _child(["--child", "build", "--n", str(n), "--data-dir", data_dir, "--folder", tmp])
        row = _child(["--child", "split", "--data-dir", data_dir, "--folder", tmp, "--queries", str(queries)])
        return {"n": n, **row}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run the sizes not recorded yet, then print every recorded row."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--sizes", type=int, nargs="*", default=[400_000])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--records", default="runs/bm25_cost_split.jsonl")
    p.add_argument("--work-dir", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--folder", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child == "build":
        corpus = scale_corpus(args.data_dir, args.n)
        for engine in ("tantivy", "bm25index_tantivy"):
            build_engine(engine, corpus, Path(args.folder) / engine)
        print(json.dumps({}))
        return 0
    if args.child == "split":
        print(json.dumps(split(args.data_dir, Path(args.folder), args.queries)))
        return 0
    records = Path(args.records)
    done = {r["n"] for r in recorded_rows(records)}
    for n in args.sizes:
        if n not in done:
            append_row(run_size(args.data_dir, n, args.queries, args.work_dir), records)
    for row in recorded_rows(records):
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
