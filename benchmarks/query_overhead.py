"""Query time of SciFact BM25 and hybrid, this checkout against an older commit, in one run.

The older package (``--before COMMIT``: its ``core/`` and ``integrations/`` exported with ``git archive``) and this
checkout each run in their own process over the same index folders (built once by this checkout under
``--work-dir``), alternately, ``--rounds`` times; each round times every dev claim through the core retriever
(``search``) and through the LlamaIndex retriever (``retrieve``: what a query engine calls). Prints the median
milliseconds per query of each and the ratio after/before. Index opening (which verifies checksums) is not timed:
it happens once per open, not per query.

One process of the same code can be 20-40 % slower than another on a small shared machine (memory layout, hash
seed, the host): 3 rounds once showed a +22 % "regression" of code that had not changed. Each side therefore runs in
``--rounds`` processes (8 by default; both sides of a round share a ``PYTHONHASHSEED``), and the table gives the
median of the processes' medians, their range, and the median of the rounds' after/before ratios.

    python benchmarks/query_overhead.py --data-dir "$RETRIEVEKIT_DATA_DIR" --before 1bca4f0 --work-dir runs/overhead
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _package_at import export_package

REPO = Path(__file__).resolve().parents[1]


def _time_queries(args: argparse.Namespace) -> dict[str, Any]:
    """One process: open each method over the cached indexes, time every dev claim (core and LlamaIndex)."""
    from llama_index.core.schema import QueryBundle

    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.registry import MethodContext, build_method
    from retrievekit.llama_index import RetrieveKitRetriever

    ds = load_dataset("scifact", args.data_dir, split="dev")
    queries = [q.text for q in ds.queries]
    out: dict[str, Any] = {"package": str(Path(sys.modules["retrievekit.core"].__file__).parent), "methods": {}}
    for method in args.methods:
        core = build_method(method, MethodContext(corpus=ds.corpus, work_dir=args.work_dir))
        llama = RetrieveKitRetriever(core, similarity_top_k=10)
        for q in queries[:10]:  # warm-up: caches, lazy imports, the embedder's first call
            core.search(q, k=10)
        per: dict[str, list[float]] = {"core": [], "llama_index": []}
        for q in queries:
            t = time.perf_counter()
            core.search(q, k=10)
            per["core"].append(time.perf_counter() - t)
            t = time.perf_counter()
            llama.retrieve(QueryBundle(q))
            per["llama_index"].append(time.perf_counter() - t)
        out["methods"][method] = per
        if hasattr(core, "close"):
            core.close()
    return out


def _run_child(args: argparse.Namespace, pythonpath: str | None, out: Path, seed: int = 0) -> None:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = str(seed)  # both sides of a round run with the same hash seed
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, __file__, "--child", "--data-dir", args.data_dir, "--work-dir", args.work_dir,
           "--out", str(out), "--methods", *args.methods]  # fmt: skip
    subprocess.run(cmd, env=env, check=True)


def _per_process(runs: list[dict[str, Any]], method: str, level: str) -> list[float]:
    """Each process's median milliseconds per query."""
    return [statistics.median(r["methods"][method][level]) * 1000 for r in runs]


def _summary(rounds: dict[str, list[dict[str, Any]]], methods: list[str]) -> str:
    """Median over processes of each process's median, the range over processes, and the median of the rounds'
    after/before ratios (one process of a side can be 20-40 % off another of the same code on this kind of machine,
    so a comparison needs many processes, not many queries)."""
    rows = [
        "| method | through | before ms/query (range) | after ms/query (range) | after / before | paired ratio |",
        "|---|---|---|---|---|---|",
    ]
    for method in methods:
        for level in ("core", "llama_index"):
            per = {side: _per_process(runs, method, level) for side, runs in rounds.items()}
            after = per["after"]
            cell = {s: f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})" for s, v in per.items()}
            if "before" in per:
                before = per["before"]
                ratio = f"{statistics.median(after) / statistics.median(before):.3f}"
                paired = f"{statistics.median(a / b for a, b in zip(after, before, strict=True)):.3f}"
            else:
                ratio = paired = ""
            rows.append(f"| {method} | {level} | {cell.get('before', '')} | {cell['after']} | {ratio} | {paired} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Build the indexes once, then time both packages alternately; print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--work-dir", required=True, help="index cache shared by both packages")
    p.add_argument("--before", default=None, help="the older commit to compare with")
    p.add_argument("--methods", nargs="+", default=["bm25", "hybrid"])
    p.add_argument("--rounds", type=int, default=8, help="processes per side (alternating order, paired seeds)")
    p.add_argument("--out", default=None, help="JSON file (default: <work-dir>/query_overhead.json)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        Path(args.out).write_text(json.dumps(_time_queries(args)))
        return 0
    out = Path(args.out or Path(args.work_dir) / "query_overhead.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    rounds: dict[str, list[dict[str, Any]]] = {"after": []} | ({"before": []} if args.before else {})
    with tempfile.TemporaryDirectory() as tmp:
        old = export_package(args.before, Path(tmp) / "before") if args.before else None
        _run_child(args, None, Path(tmp) / "warm.json")  # builds the indexes with this checkout (not timed)
        for r in range(args.rounds):
            for side in ("before", "after") if r % 2 == 0 else ("after", "before"):
                if side == "before" and old is None:
                    continue
                path = old if side == "before" else None
                _run_child(args, path, Path(tmp) / f"{side}{r}.json", seed=r)
                rounds[side].append(json.loads((Path(tmp) / f"{side}{r}.json").read_text()))
    out.write_text(json.dumps({"before_commit": args.before, "rounds": rounds}))
    print(_summary(rounds, args.methods))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
