"""``retrievekit train-judge``: fine-tune a local LM into a relevance judge from qrels or from a corpus alone.

Examples:
    $ retrievekit train-judge --dataset scifact --data-dir ~/data/retrievekit --split train --output-dir runs/judge
    $ retrievekit train-judge --dataset scifact --synthesize 500 --output-dir runs/judge-syn --lora
    $ retrievekit bench --dataset scifact --method judge-rerank --judge runs/judge --out judge.json

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args(["--dataset", "scifact", "--data-dir", "d", "--output-dir", "o"]).negatives
    3
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from retrievekit.core.cli.arguments import data_dir_argument
from retrievekit.core.cli.train_arguments import add_train_arguments, train_config_from_args
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.models import DEFAULT_MODEL

__all__ = ["HELP", "add_arguments", "collect_pairs", "run"]

HELP = "fine-tune a local LM as a yes/no relevance judge (qrels or synthesised pairs + hard negatives)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``train-judge`` arguments to ``parser``.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args(["--dataset", "scifact", "--data-dir", "d", "--output-dir", "o", "--lora"]).lora
        True
    """
    parser.add_argument("--dataset", required=True, help="dataset name (scifact, ...)")
    data_dir_argument(parser)
    parser.add_argument("--split", default="train", help="split whose qrels give the positives (default: train)")
    parser.add_argument(
        "--synthesize", type=int, default=None, metavar="N", help="no qrels: ask the LLM for questions on N passages"
    )
    parser.add_argument("--synth-llm", default=None, help="LLM writing synthetic questions (default: --base-model)")
    parser.add_argument("--negatives", type=int, default=3, help="hard negatives per query (default: 3)")
    parser.add_argument("--miner", choices=("bm25", "dense"), default="bm25", help="negative miner (default: bm25)")
    parser.add_argument("--skip-top", type=int, default=0, help="non-positive top hits skipped before mining")
    parser.add_argument("--base-model", default=DEFAULT_MODEL, help="registry model to fine-tune (smollm2, qwen0.5b)")
    parser.add_argument("--output-dir", required=True, help="training folder (checkpoints, then model/)")
    parser.add_argument("--max-pairs", type=int, default=None, help="first N positive pairs only (CPU runs)")
    parser.add_argument("--holdout", type=float, default=0.1, help="share of queries held out for calibration")
    parser.add_argument("--max-passage-tokens", type=int, default=256)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_train_arguments(parser, defaults={"epochs": 1.0})


def collect_pairs(args: argparse.Namespace) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """``(pairs, corpus, info)``: positives (qrels or synthetic, capped by ``--max-pairs``) plus mined negatives.

    Examples:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> args = p.parse_args(["--dataset", "scifact", "--data-dir", "/nonexistent", "--output-dir", "o"])
        >>> collect_pairs(args)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent does not exist (...)
    """
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.judge.data import mine_hard_negatives, pairs_from_qrels, synthesize_pairs
    from retrievekit.core.registry import MethodContext, build_method

    info: dict[str, Any] = {}
    if args.synthesize is not None:
        from retrievekit.core.llm.local import LocalLM

        ds = load_dataset(args.dataset, args.data_dir, split=args.split)
        syn = synthesize_pairs(
            ds.corpus,
            LocalLM.load(args.synth_llm or args.base_model, device=args.device),
            args.synthesize,
            seed=args.seed,
        )
        positives = syn.pairs
        info["synthesis"] = {
            "requested": syn.requested,
            "kept": len(syn.pairs),
            "dropped_empty": syn.dropped_empty,
            "dropped_echo": syn.dropped_echo,
            "dropped_generic": syn.dropped_generic,
            "failed": syn.failed,
        }
        exclude = None
    else:
        ds = load_dataset(args.dataset, args.data_dir, split=args.split)
        positives = pairs_from_qrels(ds)
        exclude = {qid: list(rels) for qid, rels in ds.qrels.items()}
    if args.max_pairs is not None:
        positives = positives[: args.max_pairs]
    if not positives:
        raise InvalidInputError("no positive pairs to train on")
    miner = build_method(args.miner, MethodContext(corpus=ds.corpus))
    negatives = mine_hard_negatives(
        positives, ds.corpus, miner, n_negatives=args.negatives, skip_top=args.skip_top, seed=args.seed, exclude=exclude
    )
    info.update(positives=len(positives), negatives=len(negatives), miner=args.miner, dataset=args.dataset)
    return positives + negatives, ds.corpus, info


def run(args: argparse.Namespace) -> int:
    """Run ``train-judge``: collect pairs, train, calibrate; print a JSON summary. Returns the exit code.

    Examples:
        >>> from retrievekit.core.cli import main
        >>> main(["train-judge", "--dataset", "scifact", "--data-dir", "/nonexistent", "--output-dir", "o"])
        2
    """
    from retrievekit.core.judge.train import train_judge

    pairs, _, info = collect_pairs(args)
    config = train_config_from_args(args)
    print(
        f"train-judge: {info['positives']} positive + {info['negatives']} negative pairs "
        f"({args.miner} negatives), base {args.base_model}",
        file=sys.stderr,
    )
    result = train_judge(
        pairs,
        output_dir=args.output_dir,
        llm=args.base_model,
        train_config=config,
        holdout=args.holdout,
        max_passage_tokens=args.max_passage_tokens,
        seed=args.seed,
        resume=not args.no_resume,
        progress=not args.no_progress,
    )
    summary = {"data": info, **result.to_dict()}
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return 0
