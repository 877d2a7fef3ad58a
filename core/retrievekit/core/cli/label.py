"""``retrievekit label``: label your questions in the browser, for ``retrievekit advise --qrels``.

``retrievekit label --dataset NAME --data-dir DIR --questions my-questions.txt --labels my-labels.tsv`` serves a page
on ``http://127.0.0.1:PORT/``: each question with the first stage's top passages from the corpus, a label each
(relevant, not relevant, skip; keyboard shortcuts), saved as they are given to ``my-labels.tsv`` (a qrels TSV). It
says when enough questions are labelled for ``--half-width`` on the judge's AUC; stop it with Ctrl-C, and run it
again to go on where you stopped. Then::

    retrievekit advise --dataset NAME --data-dir DIR --llm ... --questions my-questions.txt --qrels my-labels.tsv

Without ``--questions``, the dataset's own questions (``--split``) are shown.

Examples:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> a = p.parse_args(["--dataset", "d", "--data-dir", ".", "--labels", "l.tsv"])
    >>> a.candidates, a.half_width, a.port, a.first_stage
    (5, 0.1, 8765, 'bm25')
"""

from __future__ import annotations

import argparse
import sys

from retrievekit.core.cli.arguments import data_dir_argument

__all__ = ["HELP", "add_arguments", "run"]

HELP = "label your questions in the browser (a local page), for advise --qrels"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``label`` sub-command's arguments.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["--dataset", "d", "--data-dir", ".", "--labels", "l.tsv", "--port", "0"]).port
        0
    """
    parser.add_argument("--dataset", required=True, help="dataset name (a folder under --data-dir): the corpus")
    data_dir_argument(parser)
    parser.add_argument("--split", default="dev", help="the split whose questions are shown without --questions")
    parser.add_argument("--questions", default=None, metavar="FILE", help="your questions: one a line, or JSONL")
    parser.add_argument("--labels", required=True, metavar="FILE", help="the qrels TSV to write (resumed if it exists)")
    parser.add_argument("--candidates", type=int, default=5, help="passages shown a question (default 5)")
    parser.add_argument("--first-stage", choices=["bm25", "hybrid"], default="bm25", help="what finds the passages")
    parser.add_argument(
        "--half-width", type=float, default=0.1, help="wanted +- on the AUC's 95%% interval (default 0.1)"
    )
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free one)")


def run(args: argparse.Namespace) -> int:
    """Serve the page until Ctrl-C; returns the exit code.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> run(p.parse_args(["--dataset", "scifact", "--data-dir", "/nonexistent", "--labels", "l.tsv"]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent does not exist (set --data-dir or RETRIEVEKIT_DATA_DIR; see docs/datasets.md)
    """
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.eval.label_app import LabelServer
    from retrievekit.core.eval.label_session import LabelSession
    from retrievekit.core.eval.labels import read_questions

    dataset = load_dataset(args.dataset, args.data_dir, split=args.split)
    questions = read_questions(args.questions) if args.questions else {q.id: q.text for q in dataset.queries}
    session = LabelSession(
        dataset.corpus,
        questions,
        args.labels,
        k=args.candidates,
        first_stage=args.first_stage,
        half_width=args.half_width,
    )
    p = session.progress()
    server = LabelServer(session, port=args.port)
    with server as url:
        print(
            f"label: {p['questions']} questions, {p['done']} done, {p['labelled']} with a relevant passage "
            f"({p['needed']} needed for +-{args.half_width}); labels saved to {args.labels} as you give them",
            file=sys.stderr,
        )
        print(f"open {url} in your browser; Ctrl-C stops (run the same command again to go on)", file=sys.stderr)
        server.wait()
    return 0
