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
    from retrievekit.core.eval.datasets import DATASETS

    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="{check}")
    check = data_sub.add_parser(
        "check",
        help="read a data folder as `bench` would and print what it holds (first missing or malformed file: exit 2)",
    )
    check.add_argument("--dataset", choices=DATASETS, default=None, help="one dataset (default: every one present)")
    data_dir_argument(check)
    check.add_argument("--split", default=None, help="one split (default: every split the files provide)")


def _present(name: str, root: Path) -> bool:
    """Whether ``root`` holds any file of dataset ``name`` (its folder, or its files in ``multihop_qa/``)."""
    if name == "hotpotqa":
        return any((root / "multihop_qa").glob("hotpotqa_*"))
    if name == "musique":
        return any((root / "multihop_qa").glob("musique_*"))
    return (root / name).is_dir()


def _check_splits(name: str, root: Path) -> list[str]:
    """The splits ``data check`` reads by default: every one the files provide (``dev`` when none is found)."""
    from retrievekit.core.eval.datasets import supported_splits

    if name == "hotpotqa":  # one split per file variant; dev when only some variants are there
        variants = {
            "dev": "hotpotqa_train100_distractor_",
            "fullwiki": "hotpotqa_dev_fullwiki500",
            "dpr": "hotpotqa_dev100_gold_dpr",
            "hard": "hotpotqa_dev_hard1000",
        }
        found = [s for s, prefix in variants.items() if any((root / "multihop_qa").glob(prefix + "*"))]
        return found or ["dev"]
    if name == "musique":
        return ["dev"]
    return supported_splits(name, root) or ["dev"]


def run(args: argparse.Namespace) -> int:
    """Run ``retrievekit data check`` with parsed ``args``: 0 when every split read, 2 otherwise.

    Examples:
        >>> run(argparse.Namespace(data_dir="/nonexistent", dataset=None, split=None))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent does not exist ...
    """
    from retrievekit.core.errors import DatasetNotFoundError
    from retrievekit.core.eval.datasets import DATASETS, load_dataset

    if not args.data_dir:
        raise DatasetNotFoundError(
            f"no data folder given (pass --data-dir or set {DATA_DIR_ENV}; see docs/datasets.md)"
        )
    root = Path(args.data_dir).expanduser()
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"data folder {root} does not exist (set --data-dir or {DATA_DIR_ENV}; see docs/datasets.md)", path=root
        )
    names = [args.dataset] if args.dataset else [n for n in DATASETS if _present(n, root)]
    if not names:
        raise InvalidInputError(
            f"no dataset found in {root}: expected scifact/, ott_qa/, obliqa/ or multihop_qa/ (see docs/datasets.md)"
        )
    print(f"checking {root}")
    failed = 0
    for name in names:
        for split in [args.split] if args.split else _check_splits(name, root):
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
        absent = [n for n in DATASETS if n not in names]
        if absent:
            print(f"not present: {', '.join(absent)}")
    return 2 if failed else 0
