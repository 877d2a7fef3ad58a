"""The ``retrievekit`` command line: one module per sub-command, each with ``HELP``, ``add_arguments`` and ``run``.

* :mod:`~retrievekit.core.cli.bench` -- ``bench``: one method over one dataset, a JSON result;
* :mod:`~retrievekit.core.cli.report` -- ``report``: a markdown table and a bar chart of bench results;
* :mod:`~retrievekit.core.cli.demo` -- ``demo``: every method over retrievekit's own docs, offline;
* :mod:`~retrievekit.core.cli.data` -- ``data check``: a benchmark data folder read as ``bench`` would;
* :mod:`~retrievekit.core.cli.serve` -- ``serve``: llama.cpp's OpenAI-compatible server over a GGUF;
* :mod:`~retrievekit.core.cli.train_judge` / :mod:`~retrievekit.core.cli.train_self_retrieval` -- fine-tuning;
* :mod:`~retrievekit.core.cli.advise` -- ``advise``: an LLM's judge AUC on your corpus and which method pays off;
* :mod:`~retrievekit.core.cli.label` -- ``label``: label your questions in the browser, for ``advise --qrels``.

What several commands share is in :mod:`~retrievekit.core.cli.arguments` (``--data-dir``, output files),
:mod:`~retrievekit.core.cli.llm_arguments` (``--llm`` and the served LLM's settings) and
:mod:`~retrievekit.core.cli.train_arguments` (the trainers' settings).

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
import sys
from collections.abc import Sequence

from retrievekit.core.errors import RetrieveKitError

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: dict[str, str] = {
    "bench": "retrievekit.core.cli.bench",
    "report": "retrievekit.core.cli.report",
    "demo": "retrievekit.core.cli.demo",
    "data": "retrievekit.core.cli.data",
    "serve": "retrievekit.core.cli.serve",
    "train-judge": "retrievekit.core.cli.train_judge",
    "train-self-retrieval": "retrievekit.core.cli.train_self_retrieval",
    "advise": "retrievekit.core.cli.advise",
    "label": "retrievekit.core.cli.label",
}
"""Every sub-command and the module that holds it (imported when the parser is built; none imports torch)."""


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser (method choices come from the registry at call time).

    Examples:
        >>> build_parser().parse_args(["report", "a.json"]).files
        ['a.json']
    """
    parser = argparse.ArgumentParser(
        prog="retrievekit", description="LLM-native retrieval methods: benchmarks and demo."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for name, module in COMMANDS.items():
        command = importlib.import_module(module)
        command.add_arguments(sub.add_parser(name, help=command.HELP))
    return parser


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
    try:
        return int(importlib.import_module(COMMANDS[args.command]).run(args))
    except RetrieveKitError as e:
        print(f"retrievekit: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("retrievekit: interrupted", file=sys.stderr)
        return 130
