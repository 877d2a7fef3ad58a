"""Quality against judge accuracy for one judged method, beside a flat rerank that spends the same judged items.

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`). For each judge it runs
the method, then ``judge-rerank`` of the same first stage with ``rerank_k`` set to the judged items per query that
the method spent with that judge. Judges are the gold-label oracle at several noise levels
(``oracle:S``, S from 0 = oracle to 1 = chance) and any real judges (``cosine``, ``zero-shot``, a trained judge
folder). Each run keeps resumable per-query records in ``--out-dir`` (``<run>.jsonl``), so a stopped sweep picks up
where it stopped, and ``--shard K/N`` splits every run over N processes. Run the command without ``--shard`` last:
it aggregates. A flat rerank's size comes from its method's aggregated run, so shards split the methods only; to
split the flat reranks too, aggregate the methods first (the command without ``--shard``, with ``--no-flat``), then
run the shards again: each runs its share of every flat rerank whose method is aggregated. The figure and table
come from ``retrievekit report --curves``.

    python benchmarks/judge_curves.py --dataset scifact --data-dir "$RETRIEVEKIT_DATA_DIR" --method lattice \\
        --option tree_dir=runs/trees/scifact-bottom_up-smollm2 --noise 0 0.2 0.4 0.6 0.8 1 --judges cosine \\
        --out-dir runs/curves/lattice
    retrievekit report runs/curves/lattice/*.json --curves --png docs/figures/judge-curves-lattice.png

The agent's judge-driven delete, against no deletion (``--baseline``), each question's model replies recorded once
in the no-judge run and replayed at every noise level (``plan_cache``, see ``retrievekit.core.iterative.plan_cache``):

    python benchmarks/judge_curves.py --dataset hotpotqa --data-dir "$RETRIEVEKIT_DATA_DIR" --method iterative \
        --label agent --option plan_cache=true --baseline --no-flat --work-dir runs/cache \
        --out-dir runs/curves/agent-hotpotqa

ARM with and without the MIP on OTT-QA (keywords decoded once per question and cached in ``<work-dir>/arm-keywords``;
a memo that holds a pass of table-cell vectors makes every later run in the process fast), one process per core,
then the same command without ``--shard`` for each method:

    RETRIEVEKIT_EMBED_MEMO_SIZE=400000 python benchmarks/judge_curves.py --dataset ott_qa \
        --data-dir "$RETRIEVEKIT_DATA_DIR" --method arm --first-stage hybrid --judges cosine --limit 300 \
        --work-dir runs/cache --out-dir runs/curves/arm --shard 0/2

A trained judge on One-SHOT at several budgets: ``RETRIEVEKIT_JUDGE_MEMO_DIR=runs/cache/judge-scores`` keeps its
scores, so the chunks every budget crops are judged once (``retrievekit.core.judge.score_memo``):

    RETRIEVEKIT_JUDGE_MEMO_DIR=runs/cache/judge-scores python benchmarks/judge_curves.py --dataset obliqa \
        --data-dir "$RETRIEVEKIT_DATA_DIR" --method oneshot --option budget=4000 --noise \
        --judges judges/smollm2-scifact --no-flat --work-dir runs/cache --out-dir runs/curves/oneshot-adapter-4000
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from retrievekit.core.cli.llm_arguments import add_llm_arguments, served_llm_spec, served_settings
from retrievekit.core.eval.curves import curves_markdown
from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.options import parse_options
from retrievekit.core.storage import write_json_atomic


def _name(judge: str) -> str:
    return judge.replace(":", "-").replace("/", "_")


def _aggregated(out: Path, ds: Any) -> bool:
    """Whether ``out`` is a run aggregated over these questions (one made with another ``--limit`` is not)."""
    return out.is_file() and json.loads(out.read_text(encoding="utf-8")).get("n_queries") == len(ds.queries)


def _run(ds: Any, method: str, judge: str | None, options: dict[str, Any], args: argparse.Namespace, stem: str) -> Any:
    out = Path(args.out_dir) / f"{stem}.json"
    if _aggregated(out, ds) and not args.force:  # every query has run: a shard goes on to its flat rerank
        return out
    result = run_benchmark(
        ds,
        method,
        k=args.k,
        llm=args.served_llm or args.llm,
        work_dir=args.work_dir,
        options=options if judge is None else {**options, "judge_dir": judge},
        progress=not args.no_progress,
        records=Path(args.out_dir) / f"{stem}.jsonl",
        shard=args.shard,
        settings={"served_llm": served_settings(args)} if args.served_llm is not None else None,
    )
    if args.shard:
        return None
    result["label"] = (args.label or method) if method == args.method else f"flat rerank of {args.first_stage}"
    if judge is None:
        result["label"] += " (no judge)"
    return write_json_atomic(result, out)


def main(argv: list[str] | None = None) -> int:
    """Run the sweep; print the curve table when the runs are complete (not for a shard)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--split", default="dev")
    p.add_argument("--method", required=True, help="the judged method (lattice, arm, oneshot, iterative, ...)")
    p.add_argument("--option", action="append", default=[], help="method option KEY=VALUE (repeatable)")
    p.add_argument("--label", default=None, help="series name of the method's runs (default: the method)")
    p.add_argument("--first-stage", default="bm25", help="the flat rerank's first stage (bm25, dense, hybrid)")
    p.add_argument("--noise", nargs="*", type=float, default=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    p.add_argument("--judges", nargs="*", default=[], help="real judges: cosine, zero-shot, a trained judge folder")
    p.add_argument("--no-flat", action="store_true", help="skip the flat reranks")
    p.add_argument(
        "--baseline",
        action="store_true",
        help="first run the method without a judge (<method>--no-judge.json); with the agent's plan_cache option "
        "this run records the search plans the judged runs replay",
    )
    p.add_argument("--k", type=int, default=100)
    add_llm_arguments(p, default=None, help="LLM of the method (default: smollm2, in-process)")
    p.add_argument("--work-dir", default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--shard", default=None, help="K/N: this process runs queries K, K+N, ... of every run")
    p.add_argument("--force", action="store_true", help="rerun finished runs")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    args.served_llm = served_llm_spec(args)  # --llm openai:MODEL@URL puts your own served LLM on the curves
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    ds = load_dataset(args.dataset, args.data_dir, split=args.split, limit=args.limit)
    options = parse_options(args.option)
    judges = [f"oracle:{s:g}" for s in args.noise] + list(args.judges)
    written = []
    if args.baseline:
        _run(ds, args.method, None, options, args, f"{args.method}--no-judge")
    for judge in judges:
        path = _run(ds, args.method, judge, options, args, f"{args.method}--{_name(judge)}")
        if path is None or args.no_flat:
            written.append(path)
            continue
        per_query = json.loads(Path(path).read_text(encoding="utf-8"))["judge"]["pairs_per_query"]
        flat = {"first_stage": args.first_stage, "candidates": max(1, math.ceil(per_query))}
        # named by its judged items too: two methods in one folder (arm, arm-no-mip) share a flat rerank only when it
        # spends the same number of items
        stem = f"judge-rerank-{args.first_stage}-k{flat['candidates']}--{_name(judge)}"
        written += [path, _run(ds, "judge-rerank", judge, flat, args, stem)]
    done = [w for w in written if w is not None]
    if done and not args.shard:
        print(curves_markdown(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
