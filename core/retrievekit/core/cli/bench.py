"""``retrievekit bench``: run one method over one dataset and write a JSON result.

Examples:
    $ retrievekit bench --dataset scifact --method bm25 --limit 50 --out bm25.json
"""

from __future__ import annotations

import argparse
from typing import Any

from retrievekit.core.cli.arguments import check_output_file, data_dir_argument
from retrievekit.core.cli.llm_arguments import add_llm_arguments, served_llm_spec, served_settings
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.as_embedder import add_embedder_argument
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.options import parse_options
from retrievekit.core.storage import write_json_atomic

__all__ = ["HELP", "add_arguments", "run"]

HELP = "run one method over one dataset and write a JSON result"


def add_arguments(bench: argparse.ArgumentParser) -> None:
    """The arguments of ``retrievekit bench`` (method choices from the registry at call time).

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["--dataset", "scifact", "--data-dir", "d", "--method", "bm25", "--out", "o"]).k
        100
    """
    from retrievekit.core.eval.datasets import available_datasets
    from retrievekit.core.registry import available_methods

    bench.add_argument("--dataset", required=True, choices=available_datasets())
    data_dir_argument(bench)
    bench.add_argument("--split", default="dev", help="which questions (default: dev)")
    bench.add_argument("--method", required=True, choices=available_methods())
    bench.add_argument("--limit", type=int, default=None, help="first N queries only")
    bench.add_argument(
        "--corpus-size",
        type=int,
        default=None,
        help="restrict the pool to the queries' gold objects plus seeded distractors, N objects in all",
    )
    bench.add_argument("--seed", type=int, default=0, help="seed of --corpus-size's distractors (default: 0)")
    add_llm_arguments(bench, default=None, help=f"LLM of the LLM-based methods (default: {DEFAULT_MODEL}, in-process)")
    add_embedder_argument(bench)
    bench.add_argument("--k", type=int, default=100, help="hits per query (default: 100)")
    bench.add_argument("--work-dir", default=None, help="folder for cached indexes")
    bench.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="method option (repeatable)")
    bench.add_argument("--out", required=True, help="result JSON file")
    bench.add_argument(
        "--records",
        default=None,
        metavar="FILE.jsonl",
        help="per-query records, written as each query finishes; a rerun with the same settings resumes from them",
    )
    bench.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only queries K, K+N, ... (one process per core sharing one --records file); "
        "a last run without --shard aggregates",
    )
    bench.add_argument("--tree-dir", default=None, help="LATTICE: tree folder to load (or build into)")
    bench.add_argument("--model-dir", default=None, help="Self-Retrieval: trained model folder (option model_dir)")
    bench.add_argument(
        "--judge",
        default=None,
        metavar="DIR|zero-shot|cosine|served|oracle[:S[:SEED]]",
        help="relevance judge the method uses (option judge_dir): a trained judge folder, zero-shot, cosine, served "
        "(the --llm CLIENT:MODEL@URL asked Yes/No per pair), or "
        "oracle[:S] -- a diagnostic that reads the gold labels, with seeded noise S in [0, 1] (expected AUC 1 - S/2)",
    )
    bench.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    bench.add_argument("--label", default=None, help="name of this run in reports and curves (default: the method)")


def _run_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """Settings beyond the method's that identify a run in its records: the pool restriction, the served LLM's."""
    settings: dict[str, Any] = {}
    if args.corpus_size:
        settings.update(corpus_size=args.corpus_size, seed=args.seed)
    served = served_settings(args)
    if served is not None:
        settings["served_llm"] = served
    return settings or None


def run(args: argparse.Namespace) -> int:
    """Run ``retrievekit bench`` with parsed ``args``; returns the exit code.

    Examples:
        >>> from retrievekit.core.cli import main
        >>> main(["bench", "--dataset", "scifact", "--data-dir", "d", "--method", "bm25", "--out", "o", "--limit", "0"])
        2
    """
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.eval.report import compare
    from retrievekit.core.eval.runner import run_benchmark

    if args.limit is not None and args.limit < 1:
        raise InvalidInputError(f"--limit must be >= 1, got {args.limit}")
    check_output_file(args.out)  # before the run, not after it
    if args.records:
        check_output_file(args.records, "--records")
    options = parse_options(args.option)
    if getattr(args, "tree_dir", None):
        options.setdefault("tree_dir", args.tree_dir)
    if getattr(args, "model_dir", None):
        options.setdefault("model_dir", args.model_dir)
    if getattr(args, "judge", None):
        options.setdefault("judge_dir", args.judge)
    dataset = load_dataset(
        args.dataset, args.data_dir, split=args.split, limit=args.limit, corpus_size=args.corpus_size, seed=args.seed
    )
    result = run_benchmark(
        dataset,
        args.method,
        k=args.k,
        llm=served_llm_spec(args) or args.llm,
        work_dir=args.work_dir,
        options=options,
        progress=not args.no_progress,
        records=args.records,
        shard=args.shard,
        settings=_run_settings(args),
        embedder=args.embedder,
    )
    if args.label:
        result["label"] = args.label
    out = write_json_atomic(result, check_output_file(args.out))
    print(compare([result]), end="")
    if result.get("n_failed"):
        print(f"warning: {result['n_failed']} queries failed (counted as empty rankings); see 'failures' in {out}")
    for line in result.get("warnings", []):  # stages that fell back too often: not the LLM method's results
        print(f"warning: {line}")
    judge = result.get("judge")
    if judge:
        auc = "n/a" if judge["auc"] is None else f"{judge['auc']:.3f}"
        print(
            f"judge {judge['name']}: AUC {auc} on {judge['scored_pairs']} scored pairs ({judge['positives']} relevant)"
        )
        if judge.get("warning"):
            print(f"warning: {judge['warning']}")
    print(f"wrote {out}")
    return 0
