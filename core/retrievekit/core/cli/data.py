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

    A split fails where ``bench`` would refuse it: a missing or malformed file, a dataset whose own code raises, two
    queries or two corpus objects with one id, an empty corpus, no query with judgements.

    Examples:
        >>> run(argparse.Namespace(data_dir="/nonexistent", dataset=None, split=None))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent does not exist ...
    """
    from retrievekit.core.errors import DatasetNotFoundError
    from retrievekit.core.eval.datasets import available_datasets

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
    found, failed = _present(root, [args.dataset] if args.dataset else everyone, everyone=not args.dataset)
    names = [name for name, splits in found if splits]
    if not names and not failed:
        raise InvalidInputError(
            f"no dataset found in {root}: expected scifact/, ott_qa/, obliqa/ or multihop_qa/ (see docs/datasets.md)"
        )
    print(f"checking {root}")
    for name, splits in found:
        for split in [args.split] if args.split else splits:
            failed += not _check_split(name, root, split)
    if not args.dataset:
        absent = [name for name, splits in found if not splits]
        if absent:
            print(f"not present: {', '.join(absent)}")
    return 2 if failed else 0


def _failed(what: str, error: RetrieveKitError) -> None:
    print(f"{what}: FAILED")
    print(f"retrievekit: error: {error}", file=sys.stderr)


def _present(root: Path, names: list[str], *, everyone: bool) -> tuple[list[tuple[str, list[str]]], int]:
    """Each dataset of ``names`` with the splits to check (none when ``everyone`` and it is absent from ``root``),
    and how many datasets failed before any split was read (an installed dataset that does not import, a
    ``present`` or ``splits`` that raises)."""
    from retrievekit.core.eval.datasets import dataset_spec

    found: list[tuple[str, list[str]]] = []
    failed = 0
    for name in names:
        try:
            spec = dataset_spec(name)
            present = not everyone or spec.is_present(root)
            found.append((name, spec.default_splits(root) if present else []))
        except RetrieveKitError as e:
            _failed(name, e)
            failed += 1
    return found, failed


def _check_split(name: str, root: Path, split: str) -> bool:
    """Read one split as ``bench`` would and print what it holds; False (and the error on stderr) when it fails."""
    from retrievekit.core.eval.datasets import load_dataset

    try:
        ds = load_dataset(name, root, split=split)
        if not ds.queries:
            raise InvalidInputError(
                f"{name}/{split}: no query has judgements, so bench has nothing to run: check the query ids against "
                "the qrels"
            )
    except RetrieveKitError as e:
        _failed(f"{name} {split}", e)
        return False
    judged = sum(1 for docs in ds.qrels.values() for g in docs.values() if g > 0)
    print(
        f"{name} {split}: ok: {len(ds.corpus)} corpus objects, {len(ds.queries)} queries, "
        f"{judged} relevant judgements; files: {', '.join(ds.metadata['files'])}"
    )
    n_missing = ds.metadata["qrels_missing_from_corpus"]
    if n_missing:
        examples = ", ".join(map(str, ds.metadata.get("qrels_missing_examples", [])[:3]))
        print(f"  note: {n_missing} judged ids are not in the corpus" + (f" (e.g. {examples})" if examples else ""))
    return True
