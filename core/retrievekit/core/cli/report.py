"""``retrievekit report``: compare bench results as a markdown table and a bar chart (or curves against judge AUC).

Examples:
    $ retrievekit report bm25.json dense.json --out report.md --png report.png
"""

from __future__ import annotations

import argparse
from typing import Any

from retrievekit.core.cli.arguments import check_output_file
from retrievekit.core.storage import atomic_write_text

__all__ = ["HELP", "add_arguments", "run"]

HELP = "compare bench results: markdown table and bar chart"


def add_arguments(report: argparse.ArgumentParser) -> None:
    """The arguments of ``retrievekit report``.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["a.json"]).files
        ['a.json']
    """
    report.add_argument("files", nargs="+", help="result JSON files from `retrievekit bench`")
    report.add_argument("--out", default=None, help="markdown file (default: print)")
    report.add_argument("--png", default=None, help="bar chart PNG")
    report.add_argument("--metrics", nargs="+", default=None, help="metric columns, e.g. ndcg@10 recall@100")
    report.add_argument(
        "--curves",
        action="store_true",
        help="judged runs: each --metrics metric (default ndcg@10) against judge AUC, a panel per dataset and metric",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``retrievekit report`` with parsed ``args``; returns the exit code.

    Examples:
        >>> import contextlib, io
        >>> from retrievekit.core.cli import main
        >>> with contextlib.redirect_stderr(io.StringIO()):
        ...     main(["report", "/nonexistent.json"])
        2
    """
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
