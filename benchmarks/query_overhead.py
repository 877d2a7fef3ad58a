"""Query time of SciFact BM25 and hybrid, this checkout against an older commit, in one run.

The older package (``--before COMMIT``: its ``core/`` and ``integrations/`` exported with ``git archive``) and this
checkout each run in their own process over the same index folders (built once by this checkout under
``--work-dir``), alternately, ``--rounds`` times; each round times every dev claim through the core retriever
(``search``) and through the LlamaIndex retriever (``retrieve``: what a query engine calls). Prints the median
milliseconds per query of each and the ratio after/before. Index opening (which verifies checksums) is not timed:
it happens once per open, not per query.

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


def _run_child(args: argparse.Namespace, pythonpath: str | None, out: Path) -> None:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, __file__, "--child", "--data-dir", args.data_dir, "--work-dir", args.work_dir,
           "--out", str(out), "--methods", *args.methods]  # fmt: skip
    subprocess.run(cmd, env=env, check=True)


def _summary(rounds: dict[str, list[dict[str, Any]]], methods: list[str]) -> str:
    rows = ["| method | through | before ms/query | after ms/query | after / before |", "|---|---|---|---|---|"]
    for method in methods:
        for level in ("core", "llama_index"):
            med = {
                side: statistics.median(t for r in runs for t in r["methods"][method][level]) * 1000
                for side, runs in rounds.items()
            }
            before = med.get("before")
            ratio = f"{med['after'] / before:.3f}" if before else ""
            rows.append(f"| {method} | {level} | {before or 0:.3f} | {med['after']:.3f} | {ratio} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Build the indexes once, then time both packages alternately; print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--work-dir", required=True, help="index cache shared by both packages")
    p.add_argument("--before", default=None, help="the older commit to compare with")
    p.add_argument("--methods", nargs="+", default=["bm25", "hybrid"])
    p.add_argument("--rounds", type=int, default=3)
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
                _run_child(args, path, Path(tmp) / f"{side}{r}.json")
                rounds[side].append(json.loads((Path(tmp) / f"{side}{r}.json").read_text()))
    out.write_text(json.dumps({"before_commit": args.before, "rounds": rounds}))
    print(_summary(rounds, args.methods))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
