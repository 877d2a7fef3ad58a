"""``retrievekit advise``: the command line of :func:`~retrievekit.core.eval.advise.advise`.

``retrievekit advise --dataset scifact --data-dir DIR --llm openai:MODEL@URL`` estimates that served LLM's judge AUC
on the folder's corpus from questions it writes itself (label-free); ``--qrels`` uses the folder's labels instead
(``--qrels FILE``: a BEIR-style ``query-id<TAB>corpus-id<TAB>score`` file), at least 20 labelled questions. The judge
is the served LLM asked Yes/No per pair (``--judge served``, the default for ``CLIENT:MODEL@URL``), else the
zero-shot judge of a local ``--llm`` (``--judge zero-shot``), or any ``--judge`` that ``retrievekit bench`` takes.

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> a = p.parse_args(["--dataset", "scifact", "--data-dir", ".", "--llm", "qwen0.5b", "--qrels"])
    >>> a.qrels, a.max_calls, a.judge
    ('dataset', 200, None)
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from retrievekit.core.errors import InvalidInputError

__all__ = ["HELP", "add_arguments", "read_qrels", "run"]

HELP = "estimate an LLM's judge AUC on your corpus and which judged method pays off with it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``advise`` sub-command's arguments.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["--dataset", "d", "--data-dir", ".", "--llm", "x", "--max-calls", "90"]).max_calls
        90
    """
    parser.add_argument("--dataset", required=True, help="dataset name (a folder under --data-dir)")
    parser.add_argument("--data-dir", required=True, help="benchmark data folder (docs/datasets.md)")
    parser.add_argument("--split", default="dev", help="the split whose queries --qrels labels (default dev)")
    parser.add_argument("--llm", required=True, help="CLIENT:MODEL@URL (a served LLM) or a local model's name")
    parser.add_argument(
        "--judge",
        default=None,
        help="served | zero-shot | cosine | DIR (default: served for a served --llm, else zero-shot)",
    )
    parser.add_argument(
        "--qrels",
        nargs="?",
        const="dataset",
        default=None,
        metavar="FILE",
        help="labelled mode: the dataset's qrels, or a query-id/corpus-id/score TSV (>= 20 questions)",
    )
    parser.add_argument("--max-calls", type=int, default=200, help="bound on LLM calls, stated first (default 200)")
    parser.add_argument("--negatives", type=int, default=3, help="BM25 hard negatives per question (default 3)")
    parser.add_argument("--records", default=None, help="JSONL record file: a rerun resumes from it")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--out", default=None, help="write the report as JSON here")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: grade}}`` from a TSV (a header line starting ``query-id`` is skipped).

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.tsv"
        >>> _ = p.write_text("query-id\\tcorpus-id\\tscore\\n1\\t100\\t1\\n")
        >>> read_qrels(p)
        {'1': {'100': 1}}
    """
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.reader(f, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            out.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    if not out:
        raise InvalidInputError(f"no qrels rows (query-id, corpus-id, score) in {path}")
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``advise`` and print the report; returns the exit code.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> run(p.parse_args(["--dataset", "scifact", "--data-dir", "/nonexistent", "--llm", "qwen0.5b"]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent does not exist (set --data-dir or RETRIEVEKIT_DATA_DIR; see docs/datasets.md)
    """
    from retrievekit.core.cli.llm_arguments import served_llm_spec
    from retrievekit.core.eval.advise import advise, render_advice
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.llm.judge_hooks import judge_from_options
    from retrievekit.core.llm.served_spec import parse_served_spec
    from retrievekit.core.registry import MethodContext

    dataset = load_dataset(args.dataset, args.data_dir, split=args.split)
    served = parse_served_spec(args.llm) is not None
    ctx = MethodContext(
        corpus=dataset.corpus,
        llm=served_llm_spec(args) or args.llm,
        options={"judge_dir": args.judge or ("served" if served else "zero-shot")},
    )
    judge, _ = judge_from_options(ctx)
    qrels = None
    if args.qrels is not None:
        qrels = dataset.qrels if args.qrels == "dataset" else read_qrels(args.qrels)
    llm = ctx.load_llm() if qrels is None else None
    report = advise(
        dataset.corpus,
        judge,
        question_llm=llm,
        questions={q.id: q.text for q in dataset.queries},
        qrels=qrels,
        max_calls=args.max_calls,
        negatives=args.negatives,
        records=args.records,
        seed=args.seed,
        progress=not args.no_progress,
    )
    print(render_advice(report))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
