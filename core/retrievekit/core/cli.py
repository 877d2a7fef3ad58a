"""The ``retrievekit`` command line: ``bench``, ``report``, ``demo`` and ``data check``.

Examples:
    $ export RETRIEVEKIT_DATA_DIR=~/data/retrievekit   # laid out as docs/datasets.md describes
    $ retrievekit data check --dataset scifact
    $ retrievekit bench --dataset scifact --method bm25 --limit 50 --out bm25.json
    $ retrievekit report bm25.json dense.json --out report.md --png report.png
    $ retrievekit demo

In Python (returns the exit code instead of exiting):
    >>> main(["report"])  # no result files: argparse prints the usage to stderr
    2
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError, InvalidPathError, RetrieveKitError
from retrievekit.core.llm.arguments import add_llm_arguments, llm_argument, resolve_llm, served_settings
from retrievekit.core.paths import ensure_folder

__all__ = [
    "add_llm_arguments",
    "build_parser",
    "check_output_file",
    "llm_argument",
    "main",
    "parse_options",
    "resolve_llm",
    "write_json_atomic",
]

DATA_DIR_ENV = "RETRIEVEKIT_DATA_DIR"

# Extra subcommands, each a module with ``HELP: str``, ``add_arguments(parser)`` and ``run(args) -> int``
# (imported only when the parser is built, so ``retrievekit bench`` does not import torch).
SUBCOMMANDS: dict[str, str] = {
    "train-judge": "retrievekit.core.judge.cli",
    "train-self-retrieval": "retrievekit.core.generative.self_retrieval.cli",
    "serve": "retrievekit.core.llm.llamacpp_server",
    "advise": "retrievekit.core.eval.advise_cli",
}


def parse_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """Parse ``key=value`` strings; values are read as JSON when they parse (numbers, booleans, lists), else kept as text.

    Examples:
        >>> parse_options(["budget=4000", "mode=fast", "use_llm=true", "alpha=0.5"])
        {'budget': 4000, 'mode': 'fast', 'use_llm': True, 'alpha': 0.5}
    """
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInputError(f"--option expects key=value, got {pair!r}")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def write_json_atomic(data: Any, path: str | Path) -> Path:
    """Write ``data`` as indented JSON via a temporary file in the same folder and ``os.replace``.

    Examples:
        >>> import tempfile, pathlib
        >>> p = write_json_atomic({"a": 1}, pathlib.Path(tempfile.mkdtemp()) / "r.json")
        >>> p.read_text().startswith("{")
        True
    """
    target = check_output_file(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False, default=str)
            f.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def check_output_file(path: str | os.PathLike[str], what: str = "--out") -> Path:
    """Make sure ``path`` can be written as a file: its folder is created now, so a run never ends in a traceback.

    Raises :class:`~retrievekit.core.errors.InvalidPathError` when ``path`` is a folder, or its folder lies under a
    file or cannot be created (no permission, read-only file system).

    Examples:
        >>> import tempfile, pathlib
        >>> check_output_file(pathlib.Path(tempfile.mkdtemp()) / "new" / "r.json").parent.is_dir()
        True
        >>> check_output_file(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidPathError: --out ... is a folder; give a file name
    """
    target = Path(path)
    if target.is_dir():
        raise InvalidPathError(f"{what} {target} is a folder; give a file name")
    ensure_folder(target.parent, f"the folder of {what} {target}:")
    return target


def _data_dir_argument(parser: argparse.ArgumentParser) -> None:
    env_dir = os.environ.get(DATA_DIR_ENV)
    parser.add_argument(
        "--data-dir",
        default=env_dir,
        required=env_dir is None,
        help=f"benchmark data folder, laid out as docs/datasets.md describes (default: ${DATA_DIR_ENV})",
    )


def _add_bench_arguments(bench: argparse.ArgumentParser) -> None:
    from retrievekit.core.eval.datasets import DATASETS
    from retrievekit.core.registry import available_methods

    bench.add_argument("--dataset", required=True, choices=DATASETS)
    _data_dir_argument(bench)
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
    add_llm_arguments(bench, default=None, help="LLM of the LLM-based methods (default: smollm2, in-process)")
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


def _add_demo_arguments(demo: argparse.ArgumentParser) -> None:
    from retrievekit.core.registry import available_methods

    demo.add_argument(
        "--method",
        dest="methods",
        action="append",
        choices=available_methods(),
        default=None,
        help="method to show (repeatable; default: every registered method that runs offline)",
    )
    demo.add_argument("--k", type=int, default=3, help="hits per question (default: 3)")
    demo.add_argument(
        "--no-snapshot",
        dest="snapshot",
        action="store_false",
        help="index the installed package's docs now, embedding them and building LATTICE's tree here, instead of the "
        "snapshot shipped with the package (whose embeddings and tree are prebuilt)",
    )
    demo.add_argument(
        "--write-snapshot",
        default=None,
        metavar="DIR",
        help="for maintainers: build the demo's methods over the installed docs and write a new snapshot to DIR "
        "(core/retrievekit/core/data/demo in a checkout) instead of running the demo",
    )
    add_llm_arguments(
        demo, default="smollm2", help="LLM of the LLM-driven methods and of the closing answer (default: smollm2)"
    )
    demo.add_argument("--no-llm", dest="llm", action="store_const", const=None, help="skip the LLM answer")
    demo.add_argument(
        "--work-dir",
        default=None,
        help="where to cache the demo indexes (default: the demo folder in the retrievekit cache, reused by every run)",
    )
    demo.add_argument(
        "--question",
        dest="questions",
        action="append",
        default=None,
        help="your own question (repeatable; default: four built-in questions)",
    )


def _add_data_arguments(data: argparse.ArgumentParser) -> None:
    from retrievekit.core.eval.datasets import DATASETS

    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="{check}")
    check = data_sub.add_parser(
        "check",
        help="read a data folder as `bench` would and print what it holds (first missing or malformed file: exit 2)",
    )
    check.add_argument("--dataset", choices=DATASETS, default=None, help="one dataset (default: every one present)")
    _data_dir_argument(check)
    check.add_argument("--split", default=None, help="one split (default: every split the files provide)")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser (method choices come from the registry at call time).

    Examples:
        >>> build_parser().parse_args(["report", "a.json"]).files
        ['a.json']
    """
    parser = argparse.ArgumentParser(
        prog="retrievekit", description="LLM-native retrieval methods: benchmarks and demo."
    )
    commands = ["bench", "report", "demo", "data", *SUBCOMMANDS]
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(commands) + "}")
    _add_bench_arguments(sub.add_parser("bench", help="run one method over one dataset and write a JSON result"))
    report = sub.add_parser("report", help="compare bench results: markdown table and bar chart")
    report.add_argument("files", nargs="+", help="result JSON files from `retrievekit bench`")
    report.add_argument("--out", default=None, help="markdown file (default: print)")
    report.add_argument("--png", default=None, help="bar chart PNG")
    report.add_argument("--metrics", nargs="+", default=None, help="metric columns, e.g. ndcg@10 recall@100")
    report.add_argument(
        "--curves",
        action="store_true",
        help="judged runs: each --metrics metric (default ndcg@10) against judge AUC, a panel per dataset and metric",
    )
    _add_demo_arguments(
        sub.add_parser(
            "demo", help="index retrievekit's own docs and answer a few questions with every method (offline)"
        )
    )
    _add_data_arguments(sub.add_parser("data", help="benchmark data folders: check one before a run"))
    for name, module in SUBCOMMANDS.items():
        plugin = importlib.import_module(module)
        plugin.add_arguments(sub.add_parser(name, help=plugin.HELP))
    return parser


def _run_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """Settings beyond the method's that identify a run in its records: the pool restriction, the served LLM's."""
    settings: dict[str, Any] = {}
    if args.corpus_size:
        settings.update(corpus_size=args.corpus_size, seed=args.seed)
    served = served_settings(args)
    if served is not None:
        settings["served_llm"] = served
    return settings or None


def _cmd_bench(args: argparse.Namespace) -> int:
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
        llm_name=args.llm,
        llm=resolve_llm(args),
        work_dir=args.work_dir,
        options=options,
        progress=not args.no_progress,
        records=args.records,
        shard=args.shard,
        settings=_run_settings(args),
    )
    if args.label:
        result["label"] = args.label
    out = write_json_atomic(result, args.out)
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


def _cmd_report(args: argparse.Namespace) -> int:
    from retrievekit.core.eval.report import compare, load_results, plot

    results = load_results(args.files)
    if args.curves:
        return _report_curves(args, results)
    _emit_table(compare(results, metrics=args.metrics), args.out)
    if args.png:
        print(f"wrote {plot(results, args.png, metrics=args.metrics)}")
    return 0


def _emit_table(table: str, out: str | None) -> None:
    """Write a report table to ``out`` atomically (and say so), or print it."""
    if not out:
        print(table, end="")
        return
    from retrievekit.core.index.store import atomic_write_text

    path = check_output_file(out)
    atomic_write_text(path, table)
    print(f"wrote {path}")


def _report_curves(args: argparse.Namespace, results: list[dict[str, Any]]) -> int:
    from retrievekit.core.eval.curves import curves_markdown, plot_curves

    metric = args.metrics or ["ndcg@10"]
    _emit_table(curves_markdown(results, metric), args.out)
    if args.png:
        print(f"wrote {plot_curves(results, args.png, metric)}")
    return 0


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


def _cmd_data(args: argparse.Namespace) -> int:
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


def _cmd_demo(args: argparse.Namespace) -> int:
    from retrievekit.core.demo import main as demo_main

    return demo_main(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``retrievekit`` command; returns the exit code.

    A :class:`~retrievekit.core.errors.RetrieveKitError` prints
    ``retrievekit: error: ...`` to stderr and returns 2 (no traceback).

    Examples:
        >>> import contextlib, io
        >>> with contextlib.redirect_stderr(io.StringIO()):
        ...     main(["report", "/nonexistent.json"])
        2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code) if isinstance(e.code, int) else 2
    handlers = {"bench": _cmd_bench, "report": _cmd_report, "demo": _cmd_demo, "data": _cmd_data}
    if args.command in SUBCOMMANDS:
        handlers[args.command] = importlib.import_module(SUBCOMMANDS[args.command]).run
    try:
        return handlers[args.command](args)
    except RetrieveKitError as e:
        print(f"retrievekit: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("retrievekit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
