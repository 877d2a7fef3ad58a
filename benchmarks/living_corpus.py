"""A living corpus: quality and cost of indexes changed in place (``LiveIndex``) against a fresh build.

Quality (``--part quality``), SciFact dev: the index is built on half the corpus (a seeded half), the other half is
inserted in 10 batches, then 10 % of the final corpus is deleted; every dev claim is then searched in the updated
index and in an index built fresh on the final corpus, and nDCG@10 of both is printed with their largest per-claim
difference. Methods: ``bm25`` (the bm25s engine, and the tantivy engine: ``bm25_engine="tantivy"``, as left by the
deletions and after ``LiveIndex.compact()``), ``dense``
(all-MiniLM-L6-v2 in Chroma) and ``hybrid`` (RRF).

Cost (``--part cost``): on ``benchmarks/scale.py``'s corpus at ``--sizes`` documents (dense with its hashed-words
embedder, so the model's time is not what is measured), the ms per added document (100 added in one call) and per
deleted document (100 deleted in one call), beside a full build's seconds.

    python benchmarks/living_corpus.py --data-dir "$RETRIEVEKIT_DATA_DIR" --part quality cost --sizes 10000 100000 \\
        --records benchmarks/records/living_corpus/rows.jsonl

Each finished row is a line of ``--records``; a rerun skips the rows recorded there and prints them all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

METHODS = {
    "bm25": ("bm25", {}),
    "bm25-tantivy": ("bm25", {"bm25_engine": "tantivy"}),
    "bm25-tantivy-compacted": ("bm25", {"bm25_engine": "tantivy"}),  # quality only: LiveIndex.compact() at the end
    "dense": ("dense", {}),
    "hybrid": ("hybrid", {}),
}


def _ndcg(index: Any, queries: list[Any], qrels: dict[str, dict[str, int]]) -> list[float]:
    from retrievekit.core.eval.metrics import ndcg_at_k

    return [ndcg_at_k([h.id for h in index.search(q.text, k=10)], qrels.get(q.id, {}), 10) for q in queries]


def _quality(name: str, data_dir: str, folder: Path) -> dict[str, Any]:
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.index.live import LiveIndex

    ds = load_dataset("scifact", data_dir, split="dev")
    corpus = list(ds.corpus)
    rng = np.random.default_rng(0)
    order = [corpus[i] for i in rng.permutation(len(corpus))]
    half, rest = order[: len(order) // 2], order[len(order) // 2 :]
    gone = sorted(order[i].id for i in rng.choice(len(order), size=len(order) // 10, replace=False))
    method, options = METHODS[name]
    start = time.perf_counter()
    with LiveIndex.create(method, path=folder / "updated", options=options) as updated:
        updated.upsert(half)
        for batch in np.array_split(np.arange(len(rest)), 10):
            updated.upsert([rest[i] for i in batch])
        updated.delete(gone)
        if name.endswith("-compacted"):
            updated.compact()
        changed_s = time.perf_counter() - start
        live = set(updated.ids())
        final = [o for o in corpus if o.id in live]
        with LiveIndex.create(method, path=folder / "fresh", options=options) as fresh:
            fresh.upsert(final)
            a, b = _ndcg(updated, ds.queries, ds.qrels), _ndcg(fresh, ds.queries, ds.qrels)
    return {
        "part": "quality",
        "method": name,
        "claims": len(a),
        "documents": len(final),
        "ndcg_updated": round(float(np.mean(a)), 4),
        "ndcg_fresh": round(float(np.mean(b)), 4),
        "largest_claim_difference": round(float(np.max(np.abs(np.array(a) - np.array(b)))), 4),
        "seconds_for_the_changes": round(changed_s, 1),
    }


def _cost(name: str, data_dir: str, n: int, folder: Path) -> dict[str, Any]:
    from scale import HashedWords, scale_corpus

    from retrievekit.core.index.live import LiveIndex

    corpus = scale_corpus(data_dir, n + 100)
    base, extra = corpus[:n], corpus[n:]
    method, options = METHODS[name]
    embedder = HashedWords() if method != "bm25" else None
    with LiveIndex.create(method, path=folder / "idx", options=options, embedder=embedder) as idx:
        start = time.perf_counter()
        idx.upsert(base)
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        idx.upsert(extra)
        add_ms = 1000 * (time.perf_counter() - start) / len(extra)
        start = time.perf_counter()
        idx.delete([o.id for o in extra])
        delete_ms = 1000 * (time.perf_counter() - start) / len(extra)
    return {
        "part": "cost",
        "method": name,
        "documents": n,
        "build_s": round(build_s, 1),
        "ms_per_added": round(add_ms, 2),
        "ms_per_deleted": round(delete_ms, 2),
    }


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["part"], row["method"], row.get("documents") if row["part"] == "cost" else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    parser.add_argument("--part", nargs="+", default=["quality", "cost"], choices=["quality", "cost"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--records", type=Path)
    args = parser.parse_args(argv)
    rows = (
        [json.loads(x) for x in args.records.read_text().splitlines() if x.strip()]
        if args.records and args.records.exists()
        else []
    )
    done = {_key(r) for r in rows}
    jobs = [("quality", m, None) for m in args.methods if "quality" in args.part]
    costed = [m for m in args.methods if not m.endswith("-compacted")]
    jobs += [("cost", m, n) for n in args.sizes for m in costed if "cost" in args.part]
    for part, method, n in jobs:
        if (part, method, n) in done:
            continue
        with tempfile.TemporaryDirectory() as folder:
            row = (
                _quality(method, args.data_dir, Path(folder))
                if part == "quality"
                else _cost(method, args.data_dir, n, Path(folder))
            )
        row["load_average"] = round(os.getloadavg()[0], 2)
        rows.append(row)
        if args.records:
            args.records.parent.mkdir(parents=True, exist_ok=True)
            with args.records.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
