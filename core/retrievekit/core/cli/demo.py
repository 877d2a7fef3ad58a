"""``retrievekit demo``: index retrievekit's own docs and answer a few questions with every method (offline).

Examples:
    $ retrievekit demo --method bm25 --no-llm
"""

from __future__ import annotations

import argparse

from retrievekit.core.cli.llm_arguments import add_llm_arguments
from retrievekit.core.index.as_embedder import add_embedder_argument
from retrievekit.core.llm.models import DEFAULT_MODEL

__all__ = ["HELP", "add_arguments", "run"]

HELP = "index retrievekit's own docs and answer a few questions with every method (offline)"


def add_arguments(demo: argparse.ArgumentParser) -> None:
    """The arguments of ``retrievekit demo``.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["--no-llm"]).llm is None
        True
    """
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
        demo,
        default=DEFAULT_MODEL,
        help=f"LLM of the LLM-driven methods and of the closing answer (default: {DEFAULT_MODEL})",
    )
    demo.add_argument("--no-llm", dest="llm", action="store_const", const=None, help="skip the LLM answer")
    add_embedder_argument(demo)
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


def run(args: argparse.Namespace) -> int:
    """Run ``retrievekit demo`` with parsed ``args`` (:func:`retrievekit.core.demo.main`); returns the exit code.

    Examples:
        >>> run(argparse.Namespace(methods=["bm25"], k=1, llm=None, questions=["BM25?"]))  # doctest: +SKIP
        0
    """
    from retrievekit.core.demo import main as demo_main

    return demo_main(args)
