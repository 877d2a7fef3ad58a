"""``retrievekit data check``: read a benchmark data folder as ``bench`` would and print what it holds.

Examples:
    $ retrievekit data check --dataset scifact
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from retrievekit.core.cli.arguments import DATA_DIR_ENV, data_dir_argument
from retrievekit.core.errors import InvalidInputError, RetrieveKitError

__all__ = ["HELP", "add_arguments", "run"]

HELP = "benchmark data folders: check one before a run"


def add_arguments(data: argparse.ArgumentParser) -> None:
    """The arguments of ``retrievekit data`` (one sub-command, ``check``).

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["check", "--data-dir", "d"]).data_command
        'check'
    """
    from retrievekit.core.eval.datasets import available_datasets

    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="{check}")
    check = data_sub.add_parser(
        "check",
        help="read a data folder as `bench` would and print what it holds (first missing or malformed file: exit 2)",
    )
    check.add_argument(
        "--dataset", choices=available_datasets(), default=None, help="one dataset (default: every one present)"
    )
    data_dir_argument(check)
    check.add_argument("--split", default=None, help="one split (default: every split the files provide)")


def run(args: argparse.Namespace) -> int:
    """Run ``retrievekit data check`` with parsed ``args``: 0 when every split read, 2 otherwise.

    Examples:
        >>> run(argparse.Namespace(data_dir="/nonexistent", dataset=None, split=None))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent does not exist ...
    """
    from retrievekit.core.errors import DatasetNotFoundError
    from retrievekit.core.eval.datasets import available_datasets, dataset_spec, load_dataset

    if not args.data_dir:
        raise DatasetNotFoundError(
            f"no data folder given (pass --data-dir or set {DATA_DIR_ENV}; see docs/datasets.md)"
        )
    root = Path(args.data_dir).expanduser()
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"data folder {root} does not exist (set --data-dir or {DATA_DIR_ENV}; see docs/datasets.md)", path=root
        )
    everyone = available_datasets()
    names = [args.dataset] if args.dataset else [n for n in everyone if dataset_spec(n).is_present(root)]
    if not names:
        raise InvalidInputError(
            f"no dataset found in {root}: expected scifact/, ott_qa/, obliqa/ or multihop_qa/ (see docs/datasets.md)"
        )
    print(f"checking {root}")
    failed = 0
    for name in names:
        for split in [args.split] if args.split else dataset_spec(name).default_splits(root):
            try:
                ds = load_dataset(name, root, split=split)
            except RetrieveKitError as e:
                failed += 1
                print(f"{name} {split}: FAILED")
                print(f"retrievekit: error: {e}", file=sys.stderr)
                continue
            judged = sum(1 for docs in ds.qrels.values() for g in docs.values() if g > 0)
            print(
                f"{name} {split}: ok: {len(ds.corpus)} corpus objects, {len(ds.queries)} queries, "
                f"{judged} relevant judgements; files: {', '.join(ds.metadata['files'])}"
            )
            if not ds.queries:
                print(f"  warning: no query of split {split!r} has judgements: check the query ids against the qrels")
            if ds.metadata["qrels_missing_from_corpus"]:
                examples = ", ".join(map(str, ds.metadata.get("qrels_missing_examples", [])[:3]))
                print(
                    f"  note: {ds.metadata['qrels_missing_from_corpus']} judged ids are not in the corpus (e.g. {examples})"
                )
    if not args.dataset:
        absent = [n for n in everyone if n not in names]
        if absent:
            print(f"not present: {', '.join(absent)}")
    return 2 if failed else 0
