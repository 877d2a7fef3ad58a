"""``retrievekit advise``: the command line of :func:`~retrievekit.core.eval.advise.advise`.

``retrievekit advise --dataset scifact --data-dir DIR --llm openai:MODEL@URL`` estimates that served LLM's judge AUC
on the folder's corpus from questions it writes itself (label-free); ``--qrels`` uses the folder's labels instead
(``--qrels FILE``: a BEIR-style ``query-id<TAB>corpus-id<TAB>score`` file, such as ``retrievekit label`` writes), at
least 20 labelled questions. ``--questions FILE`` takes your own questions (one a line, or JSONL) in place of the
dataset's; their hard negatives come from ``--first-stage`` (BM25, or hybrid) over the corpus. ``--questions`` without
``--qrels`` is label-free with your questions as the model: the writer imitates them (their length, punctuation and
share of the documents' words, measured and printed beside the written questions'); label them with ``retrievekit
label`` for the advice itself. The judge is the
served LLM asked Yes/No per pair (``--judge served``, the default for ``CLIENT:MODEL@URL``), else the zero-shot judge
of a local ``--llm`` (``--judge zero-shot``), or any ``--judge`` that ``retrievekit bench`` takes. The records are
kept beside ``--out`` (or in ``advise-records/``) under a name made from the run's settings, so an interrupted run
resumes by running the same command again.

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> a = p.parse_args(["--dataset", "scifact", "--data-dir", ".", "--llm", "qwen0.5b", "--qrels"])
    >>> a.qrels, a.max_calls, a.judge, a.first_stage
    ('dataset', 200, None, 'bm25')
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from retrievekit.core.cli.arguments import data_dir_argument
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval import labels

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
    data_dir_argument(parser)
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
    parser.add_argument(
        "--questions",
        default=None,
        metavar="FILE",
        help="your questions (one a line, or JSONL with id/text) in place of the dataset's: with --qrels FILE, "
        "labelled; alone, label-free with the writer imitating them",
    )
    parser.add_argument(
        "--first-stage",
        choices=["bm25", "hybrid"],
        default="bm25",
        help="what gives each question its hard negatives (default bm25)",
    )
    parser.add_argument(
        "--records",
        default=None,
        help="JSONL record file (default: one named by the run's settings beside --out, or in advise-records/)",
    )
    parser.add_argument("--no-records", action="store_true", help="keep no records (an interrupted run starts over)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--out", default=None, help="write the report as JSON here")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: grade}}`` from a qrels TSV (:func:`retrievekit.core.eval.labels.read_qrels`).

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.tsv"
        >>> _ = p.write_text("query-id\\tcorpus-id\\tscore\\n1\\t100\\t1\\n")
        >>> read_qrels(p)
        {'1': {'100': 1}}
    """
    return labels.read_qrels(path)


def _questions_and_labels(args: argparse.Namespace, dataset: Any) -> tuple[dict[str, str] | None, Any]:
    """The questions and the labels: ``--questions`` with ``--qrels FILE`` (labelled), ``--questions`` alone (label-free,
    the writer imitating them: None labels), the dataset's questions with ``--qrels`` (labelled), else neither."""
    if args.questions is not None:
        if args.qrels == "dataset":
            raise InvalidInputError("--questions takes your labels as --qrels FILE, not the dataset's qrels")
        questions = labels.read_questions(args.questions)
        return questions, None if args.qrels is None else labels.read_qrels(args.qrels)
    if args.qrels is None:
        return None, None
    questions = {q.id: q.text for q in dataset.queries}
    return questions, dataset.qrels if args.qrels == "dataset" else labels.read_qrels(args.qrels)


def _records(args: argparse.Namespace) -> dict[str, Any]:
    if args.no_records:
        return {}
    if args.records:
        return {"records": args.records}
    return {"records_dir": Path(args.out).parent if args.out else Path("advise-records")}


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
    questions, qrels = _questions_and_labels(args, dataset)
    judge, _ = judge_from_options(ctx)
    llm = ctx.load_llm() if qrels is None else None
    report = advise(
        dataset.corpus,
        judge,
        question_llm=llm,
        questions=questions,
        qrels=qrels,
        max_calls=args.max_calls,
        negatives=args.negatives,
        first_stage=args.first_stage,
        seed=args.seed,
        progress=not args.no_progress,
        **_records(args),
    )
    print(render_advice(report))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0
