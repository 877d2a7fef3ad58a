"""Every time README states, measured again on this machine and printed next to the stated value.

Each figure is a sentence of README.md (checked to be there word for word, so a README edit that changes a figure
without changing this script fails loudly) and a measurement: ``retrievekit demo`` from a fresh work folder, then
again on the indexes that first run cached, each on an idle machine and with ``--busy`` CPUs kept busy by another
process (a spinning ``python -c "while True: pass"``), ``--runs`` times. Prints, per figure and load, the stated
value, the median and the range of the runs. Asserts nothing: the numbers are for README (which then states what
this script measured and the range).

    python benchmarks/readme_figures.py                      # 3 runs, idle and one core busy
    python benchmarks/readme_figures.py --runs 1 --loads idle
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


@dataclass(frozen=True)
class Figure:
    """A time README states: the words that state it, the value, the load it was stated for, and which demo run."""

    name: str
    readme_text: str
    stated_s: float
    stated_load: str
    run: str  # "fresh": a new work folder; "cached": the folder the fresh run filled


FIGURES = (
    Figure("demo, fresh work folder", "The demo itself took 104 s on an idle 2-core machine", 104.0, "idle", "fresh"),
    Figure("demo, fresh, one core busy", "(110 s with one core busy", 110.0, "busy", "fresh"),
    Figure("demo, indexes cached", "88 s once its indexes are cached", 88.0, "idle", "cached"),
)


def check_readme(text: str) -> list[str]:
    """The figures whose sentence README no longer contains (README and this script must change together).

    Examples:
        >>> check_readme("nothing here") == [f.name for f in FIGURES]
        True
    """
    flat = " ".join(text.split())
    return [f.name for f in FIGURES if f.readme_text not in flat]


@contextmanager
def load(kind: str, n_busy: int) -> Iterator[None]:
    """Keep ``n_busy`` CPUs busy for the block when ``kind`` is ``"busy"``."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n_busy if kind == "busy" else 0)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def demo_seconds(work_dir: Path) -> float:
    """Wall seconds of one ``retrievekit demo`` over ``work_dir`` (its output is discarded; a failure raises)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "retrievekit.core.cli", "demo", "--work-dir", str(work_dir)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--loads", nargs="+", default=["idle", "busy"], choices=["idle", "busy"])
    ap.add_argument("--busy", type=int, default=1, help="CPUs kept busy under the busy load (default 1)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    missing = check_readme(README.read_text(encoding="utf-8"))
    if missing:
        print(f"README no longer states {missing}: update FIGURES in {Path(__file__).name}", file=sys.stderr)
        return 2
    seconds: dict[tuple[str, str], list[float]] = {}
    for kind in args.loads:
        for i in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp, load(kind, args.busy):
                for run in ("fresh", "cached"):
                    s = demo_seconds(Path(tmp))
                    seconds.setdefault((kind, run), []).append(s)
                    print(f"{kind} run {i + 1}/{args.runs}, {run}: {s:.0f} s", file=sys.stderr, flush=True)
    print("| figure | stated | load | median s | range s |")
    print("|---|---|---|---|---|")
    for f in FIGURES:
        for kind in args.loads:
            xs = seconds[(kind, f.run)]
            stated = f"{f.stated_s:.0f} s ({f.stated_load})" if kind == f.stated_load else ""
            print(f"| {f.name} | {stated} | {kind} | {statistics.median(xs):.0f} | {min(xs):.0f}-{max(xs):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
