"""``retrievekit train-self-retrieval``: fine-tune a local LM on a corpus (+ train queries) for Self-Retrieval.

Examples (a reduced SciFact corpus on CPU; the full corpus on a GPU)::

    retrievekit train-self-retrieval --dataset scifact --data-dir "$RETRIEVEKIT_DATA_DIR" --split train \\
        --corpus-limit 200 --max-steps 300 --output-dir runs/sr-scifact-200
    retrievekit bench --method self-retrieval --model-dir runs/sr-scifact-200 --dataset scifact ...

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> p.parse_args(["--output-dir", "x"]).base_model == DEFAULT_MODEL
    True
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from retrievekit.core.cli.arguments import data_dir_argument
from retrievekit.core.cli.train_arguments import add_train_arguments, train_config_from_args
from retrievekit.core.eval.datasets import restrict_objects
from retrievekit.core.llm.models import DEFAULT_MODEL

__all__ = ["HELP", "add_arguments", "reduced_corpus", "run"]

HELP = "fine-tune a local LM to internalise a corpus for Self-Retrieval (writes a trained-model folder)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``retrievekit train-self-retrieval``.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["--output-dir", "o", "--lora"]).lora
        True
    """
    parser.add_argument("--dataset", default="scifact", help="benchmark dataset whose corpus to internalise")
    parser.add_argument("--corpus", default=None, help="a JSONL corpus instead (objects as `retrievekit` writes them)")
    data_dir_argument(parser, optional=True)  # --corpus reads no data folder
    parser.add_argument("--split", default="train", help="queries used as supervision ('none': indexing data only)")
    parser.add_argument("--eval-split", default="dev", help="split whose gold documents a reduced corpus keeps")
    parser.add_argument("--base-model", default=DEFAULT_MODEL, help="registry model to fine-tune")
    parser.add_argument("--output-dir", required=True, help="checkpoints and the trained model go here")
    parser.add_argument("--index-mode", choices=("full", "prefix"), default="full")
    parser.add_argument("--corpus-limit", type=int, default=None, help="reduced corpus: gold docs + random distractors")
    parser.add_argument("--corpus-ids-from", default=None, help="reduced corpus: a file with one document id per line")
    parser.add_argument("--query-limit", type=int, default=None, help="eval queries whose gold docs are kept")
    parser.add_argument("--option", action="append", default=[], help="SelfRetrievalConfig field key=value")
    add_train_arguments(parser)  # learning rate 2e-5, as in the reference code, also with --lora


def reduced_corpus(corpus: list[Any], gold: set[str], size: int | None, seed: int) -> list[Any]:
    """Every gold document plus seeded random distractors, ``size`` documents in all (corpus order kept).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id=str(i), text="x") for i in range(10)]
        >>> [o.id for o in reduced_corpus(docs, {"3"}, 3, seed=0)][:1] != []
        True
    """
    return restrict_objects(corpus, gold, size, seed=seed)


def load_corpus_and_pairs(args: argparse.Namespace) -> tuple[list[Any], list[tuple[str, str]]]:
    """The (possibly reduced) corpus and the supervision pairs of the train split, from the CLI arguments."""
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.types import object_from_dict

    pairs: list[tuple[str, str]] = []
    if args.corpus:
        with open(args.corpus, encoding="utf-8") as f:
            corpus = [object_from_dict(json.loads(line)) for line in f if line.strip()]
    else:
        corpus = list(load_dataset(args.dataset, args.data_dir, args.eval_split).corpus)
    keep_gold: set[str] = set()
    if args.split and args.split != "none" and not args.corpus:
        train = load_dataset(args.dataset, args.data_dir, args.split)
        for q in train.queries:
            for doc, grade in sorted(train.qrels.get(q.id, {}).items()):
                if grade > 0:
                    pairs.append((q.text, doc))
    if args.corpus_ids_from:
        ids = {ln.strip() for ln in Path(args.corpus_ids_from).read_text(encoding="utf-8").splitlines() if ln.strip()}
        corpus = [o for o in corpus if o.id in ids]
    elif args.corpus_limit and not args.corpus:
        ev = load_dataset(args.dataset, args.data_dir, args.eval_split, limit=args.query_limit)
        keep_gold = {d for q in ev.queries for d, g in ev.qrels.get(q.id, {}).items() if g > 0}
        keep_gold |= {d for _, d in pairs}
        keep_gold = {d for d in keep_gold if d in {o.id for o in corpus}}
        if len(keep_gold) > args.corpus_limit:  # too many train gold docs: keep the eval ones first
            eval_gold = {d for q in ev.queries for d, g in ev.qrels.get(q.id, {}).items() if g > 0}
            extra = sorted(keep_gold - eval_gold)
            random.Random(args.seed).shuffle(extra)
            keep_gold = eval_gold | set(extra[: max(0, args.corpus_limit - len(eval_gold))])
        corpus = reduced_corpus(corpus, keep_gold, args.corpus_limit, args.seed)
    ids = {o.id for o in corpus}
    pairs = [(q, d) for q, d in pairs if d in ids]
    return corpus, pairs


def run(args: argparse.Namespace) -> int:
    """Train and print the result as JSON (the model lands in ``--output-dir/model``).

    Examples:
        >>> from retrievekit.core.cli import main
        >>> main(["train-self-retrieval", "--data-dir", "/nonexistent", "--output-dir", "o"])  # no data there: exit 2
        2
    """
    from retrievekit.core.generative.self_retrieval.config import SelfRetrievalConfig
    from retrievekit.core.generative.self_retrieval.train import train_self_retrieval
    from retrievekit.core.options import parse_options

    corpus, pairs = load_corpus_and_pairs(args)
    options = parse_options(args.option)
    options.setdefault("index_mode", args.index_mode)
    options.setdefault("seed", args.seed)
    cfg = SelfRetrievalConfig.from_options(options)
    print(f"corpus: {len(corpus)} documents, {len(pairs)} query pairs", file=sys.stderr)
    res = train_self_retrieval(
        corpus,
        pairs=pairs,
        output_dir=args.output_dir,
        llm=args.base_model,
        config=cfg,
        train_config=train_config_from_args(args, lora_learning_rate=None),
        resume=not args.no_resume,
    )
    if not args.corpus:  # the bench must see the same corpus: keep the ids beside the model
        ids_path = Path(args.output_dir) / "corpus_ids.txt"
        ids_path.write_text("".join(f"{o.id}\n" for o in corpus), encoding="utf-8")
    print(json.dumps({"output_dir": str(args.output_dir), "corpus": len(corpus), **res.to_dict()}, indent=2))
    return 0
