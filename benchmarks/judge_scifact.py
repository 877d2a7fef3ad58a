"""The fine-tuned relevance judge on SciFact dev (issue #9): BM25, dense, and BM25 top-K reranked by the zero-shot
and by the trained judge (nDCG@10, Recall@100, MRR@5), with training time and pairs/s scored.

Trains on SciFact *train* qrels only (+ BM25 hard negatives), or reuses ``--judge-dir``. Examples:

    # GPU: the acceptance run (SmolLM2; add --base-model qwen0.5b for Qwen)
    python benchmarks/judge_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --output-dir runs/judge-scifact \
        --epochs 1 --out runs/judge-scifact.json
    # CPU-sized: few pairs, 20 queries, top-20 rerank
    python benchmarks/judge_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --output-dir runs/judge-cpu --max-pairs 64 \
        --max-steps 20 --limit 20 --rerank-k 20 --out runs/judge-cpu.json
    # reuse a trained judge
    python benchmarks/judge_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --judge-dir runs/judge-scifact --out r.json

``pairs/s`` is the reranking throughput: ``rerank_k x queries / seconds`` of the judge-rerank run (first stage
included).

``--lattice`` adds LATTICE runs with the trained judge and with ``--judge zero-shot`` (same model, same search
settings, so the same budget of calls); ``--tree-dir`` and ``--lattice-option key=value`` are passed to
``retrievekit bench --method lattice``. A run that cannot start (e.g. LATTICE not wired to judges yet) is recorded
as skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from retrievekit.core.cli.train_arguments import add_train_arguments, train_config_from_args
from retrievekit.core.errors import RetrieveKitError
from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.options import parse_options
from retrievekit.core.storage import write_json_atomic


def _row(name: str, res: dict[str, Any], rerank_k: int | None = None) -> dict[str, Any]:
    m, c = res["metrics"], res["cost"]
    row = {
        "method": name,
        "ndcg@10": m.get("ndcg@10"),
        "recall@100": m.get("recall@100"),
        "mrr@5": m.get("mrr@5"),
        "llm_calls/q": c.get("llm_calls_per_query"),
        "s/q": c.get("seconds_per_query"),
    }
    if rerank_k is not None and c.get("seconds_per_query"):
        row["pairs/s"] = rerank_k / c["seconds_per_query"]
    return row


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; print a table and write ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--judge-dir", default=None, help="reuse a trained judge (skip training)")
    ap.add_argument("--output-dir", default="runs/judge-scifact", help="training folder when training")
    ap.add_argument("--base-model", default="smollm2")
    add_train_arguments(ap, defaults={"epochs": 1.0})
    ap.add_argument("--negatives", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=None, help="first N positive train pairs (CPU runs)")
    ap.add_argument("--limit", type=int, default=None, help="first N dev queries")
    ap.add_argument("--rerank-k", type=int, default=100)
    ap.add_argument("--score-batch-size", type=int, default=64)
    ap.add_argument("--mix", type=float, default=0.0)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--skip-zero-shot", action="store_true")
    ap.add_argument("--lattice", action="store_true", help="also LATTICE with the trained vs the zero-shot judge")
    ap.add_argument("--tree-dir", default=None, help="LATTICE tree folder (load or build)")
    ap.add_argument("--lattice-option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    summary: dict[str, Any] = {"args": vars(args)}
    judge_dir = args.judge_dir
    if judge_dir is None:
        from retrievekit.core.cli.train_judge import collect_pairs
        from retrievekit.core.judge.train import train_judge

        ns = argparse.Namespace(
            dataset="scifact", data_dir=args.data_dir, split="train", synthesize=None, synth_llm=None,
            negatives=args.negatives, miner="bm25", skip_top=0, max_pairs=args.max_pairs, seed=args.seed,
            base_model=args.base_model, device=None,
        )  # fmt: skip
        pairs, _, info = collect_pairs(ns)
        cfg = train_config_from_args(args)
        t0 = time.perf_counter()
        res = train_judge(pairs, output_dir=args.output_dir, llm=args.base_model, train_config=cfg)
        summary["training"] = {"data": info, "wall_seconds": time.perf_counter() - t0, **res.to_dict()}
        judge_dir = str(res.model_dir)
        print(
            f"trained in {summary['training']['wall_seconds']:.1f}s; holdout AUC "
            f"{res.holdout_auc_before} -> {res.holdout_auc_after}; platt {res.platt}",
            file=sys.stderr,
        )
    ds = load_dataset("scifact", args.data_dir, split="dev", limit=args.limit)
    rows = []
    results: dict[str, Any] = {}
    runs: list[tuple[str, str, dict[str, Any], str | None]] = [("bm25", "bm25", {}, None)]
    if not args.skip_dense:
        runs.append(("dense", "dense", {}, None))
    opts = {"candidates": args.rerank_k, "batch_size": args.score_batch_size, "mix": args.mix}
    if not args.skip_zero_shot:
        runs.append((f"bm25+zero-shot {args.base_model}", "judge-rerank", dict(opts), args.base_model))
    runs.append(("bm25+trained judge", "judge-rerank", {**opts, "judge_dir": judge_dir}, None))
    if args.lattice:
        lat = parse_options(args.lattice_option)
        if args.tree_dir:
            lat["tree_dir"] = args.tree_dir
        runs.append(("lattice+zero-shot judge", "lattice", {**lat, "judge_dir": "zero-shot"}, args.base_model))
        runs.append(("lattice+trained judge", "lattice", {**lat, "judge_dir": judge_dir}, args.base_model))
    skipped: dict[str, str] = {}
    for name, method, options, llm in runs:
        try:
            res = run_benchmark(ds, method, k=100, llm=llm, options=options, progress=False)
        except RetrieveKitError as e:
            skipped[name] = f"{type(e).__name__}: {e}"
            print(f"skipped {name}: {skipped[name]}", file=sys.stderr)
            continue
        results[name] = res
        rows.append(_row(name, res, args.rerank_k if method == "judge-rerank" else None))
        print(json.dumps(rows[-1]), file=sys.stderr)
    summary["results"] = results
    summary["skipped"] = skipped
    summary["table"] = rows
    cols = ["method", "ndcg@10", "recall@100", "mrr@5", "llm_calls/q", "s/q", "pairs/s"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        cells = [r.get(c) for c in cols]
        print(
            "| "
            + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v if v is not None else "") for v in cells)
            + " |"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(summary, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
