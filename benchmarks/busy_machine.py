"""What a busy machine costs: one demo question per method, idle vs with CPUs kept busy, per thread setting.

Not a timed test: it prints numbers and asserts nothing. A laptop runs other programs; this measures how much
slower retrievekit's model calls get when ``--busy`` CPUs are kept busy by another process (a spinning
``python -c "while True: pass"``), under two thread settings in the same run:

* ``torch default``: one torch thread per usable CPU, what retrievekit used before 0.1.x's thread setting;
* ``retrievekit``: :func:`retrievekit.core.threads.num_threads` (half the CPUs by default).

Every method is built once (indexes cached in ``--work-dir``), then each (setting, load) cell answers the demo's
first question ``--repeats`` times and keeps the median.

    python benchmarks/busy_machine.py                                   # every demo method, 1 busy CPU
    python benchmarks/busy_machine.py --method dense --method lattice --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from retrievekit.core import threads
from retrievekit.core.demo import DEMO_OPTIONS, DEMO_QUESTIONS, DEMO_SKIP, build_docs_corpus, demo_cache_dir
from retrievekit.core.registry import MethodContext, available_methods, build_method


def busy(n: int) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` processes that each keep one CPU busy."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    """Run the comparison (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", dest="methods", action="append", default=None)
    ap.add_argument("--busy", type=int, default=1, help="CPUs kept busy by another process (default 1)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--work-dir", default=None, help="index cache (default: the demo's)")
    args = ap.parse_args()

    methods = args.methods or [m for m in available_methods() if m not in DEMO_SKIP]
    work_dir = Path(args.work_dir) if args.work_dir else demo_cache_dir()
    corpus = build_docs_corpus()
    question = DEMO_QUESTIONS[0]
    retrievers = {}
    for m in methods:
        t0 = time.perf_counter()
        ctx = MethodContext(corpus=corpus, work_dir=work_dir, options=dict(DEMO_OPTIONS.get(m, {})))
        retrievers[m] = build_method(m, ctx)
        retrievers[m].search(question, 3)  # warm-up: lazy model loads, caches
        print(f"built and warmed {m} in {time.perf_counter() - t0:.1f} s", flush=True)

    settings = {"torch default": threads.available_cpus(), "retrievekit": threads.default_num_threads()}
    seconds: dict[tuple[str, str, str], float] = {}
    for label, n in settings.items():
        threads.set_num_threads(n)
        for load in ("idle", "busy"):
            procs = busy(args.busy) if load == "busy" else []
            try:
                time.sleep(0.5 if procs else 0.0)
                for m, r in retrievers.items():
                    runs = []
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        r.search(question, 3)
                        runs.append(time.perf_counter() - t0)
                    seconds[(label, load, m)] = statistics.median(runs)
                    print(f"{label:>13} ({n} threads) {load}: {m:<10} {seconds[(label, load, m)]:7.2f} s", flush=True)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
    threads.set_num_threads(None)

    cpus = threads.available_cpus()
    print(f"\n{cpus} usable CPUs, {args.busy} kept busy; seconds for one question (median of {args.repeats})\n")
    head = "| method |"
    rule = "|---|"
    for label, n in settings.items():
        head += f" {label} ({n}) idle | busy | busy/idle |"
        rule += "---|---|---|"
    print(head)
    print(rule)
    for m in methods:
        row = f"| {m} |"
        for label in settings:
            idle, load = seconds[(label, "idle", m)], seconds[(label, "busy", m)]
            row += f" {idle:.2f} | {load:.2f} | {load / max(idle, 1e-9):.1f}x |"
        print(row)


if __name__ == "__main__":
    main()
