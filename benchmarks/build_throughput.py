"""Builds that keep remote servers busy (issue #63, item 6): a LATTICE bottom-up build whose leaf vectors come from a
served embedder and whose summaries come from a served LLM, against a scripted OpenAI-compatible server with
``--slots`` slots of each kind and a fixed ``--delay`` a call.

The server (``tests/_async_llm_server.py``, a process of its own) serves at most ``--slots`` chat calls and
``--slots`` embedding requests at a time (its ``"words"`` model), each for ``--delay`` seconds, more waiting their
turn. The build runs over ``--docs`` documents (SciFact's 5,183 abstracts first, then the seeded generated documents
of ``benchmarks/scale.py``) with ``TreeBuildConfig(max_concurrency=slots)``,
the served LLM (``openai:scripted@URL``) at ``max_concurrency`` = the slots and a
:class:`~retrievekit.core.index.served_embedder.ServedEmbedder` of ``--embed-batch`` texts a request, also at the
slots, journaling its summaries in a build folder as a real build does. Each embedding call of the build (the leaves, then each level's summaries) and each level's summary stage is
a phase, timed on the client (the summary stages by wrapping the bottom-up builder's ``drive_build``).

Printed per kind (embedding requests, summary calls): ``phases`` (``[calls, wall seconds, calls per second over
the capacity]`` each, in build order: the leaves and level 1 first), calls, wall seconds of its phases, calls per
second, and two ratios: ``of_capacity``, calls per second over ``slots / delay`` (goal >= 0.9), and ``of_bound``, the
best wall a sender could reach over the wall it took: a phase of ``n`` calls needs at least ``ceil(n / slots)``
rounds of ``delay`` (a level's summaries wait for the level below, so a small top level leaves slots idle whatever
the client does; at 10M documents the levels above the first are a tenth of the calls). The server's peak of calls
served at once, the build's wall and the client's CPU seconds (all its threads) are printed too. Nothing is asserted.

The client spends a few milliseconds of CPU on each summary call (the served-LLM client, in its own thread), so 64
slots at 0.2 s a call (320 calls a second) need more than the 2 cores of our machine; ``--delay 1.0`` (a short
summary from a GPU server) keeps the client's CPU out of the figure:

    python benchmarks/build_throughput.py --data-dir "$RETRIEVEKIT_DATA_DIR" --docs 5183 --slots 64 --delay 1.0 \\
        --records benchmarks/records/build_throughput/rows.jsonl

Each finished row is a line of ``--records``; a rerun skips the rows recorded there (same docs, slots, delay, batch
rounds a batch and kind) and prints them. ``--rounds 1`` sends a level's summaries one round a batch (as before
issue #63), for comparison.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _async_llm_server import llm_server, stats  # noqa: E402
from _records import keep_row, recorded_rows  # noqa: E402
from scale import scale_corpus  # noqa: E402

KINDS = ("embedding requests", "summary calls")


@dataclass
class Phases:
    """The build's phases: ``(kind, calls, wall seconds)`` in order."""

    rows: list[tuple[str, int, float]] = field(default_factory=list)

    def totals(self, kind: str, slots: int, delay: float) -> dict[str, Any]:
        """One kind's row: calls, wall, calls/s, ``of_capacity`` and ``of_bound`` (module docstring).

        Examples:
            >>> p = Phases([("summary calls", 128, 0.5), ("summary calls", 10, 0.25)])
            >>> p.totals("summary calls", 64, 0.2)["of_bound"]
            0.8
        """
        mine = [(n, s) for k, n, s in self.rows if k == kind]
        calls, wall = sum(n for n, _ in mine), sum(s for _, s in mine)
        best = sum(math.ceil(n / slots) * delay for n, _ in mine)
        rate = calls / wall if wall else 0.0
        return {
            "kind": kind,
            "phases": [[n, round(s, 2), round(n / s / (slots / delay), 3) if s else 0.0] for n, s in mine],
            "calls": calls,
            "wall_s": round(wall, 2),
            "calls_per_s": round(rate, 1),
            "of_capacity": round(rate / (slots / delay), 3),
            "of_bound": round(best / wall, 3) if wall else 0.0,
        }


class TimedEmbedder:
    """``embedder`` with each ``embed_documents`` call timed as an embedding phase of ``ceil(n / batch)`` requests."""

    def __init__(self, embedder: Any, phases: Phases) -> None:
        self.embedder, self.phases, self.name = embedder, phases, embedder.name

    def embed_documents(self, texts: list[str]) -> Any:
        started = time.perf_counter()
        out = self.embedder.embed_documents(texts)
        requests = math.ceil(len(texts) / self.embedder.batch_size)
        self.phases.rows.append((KINDS[0], requests, time.perf_counter() - started))
        return out

    def embed_query(self, text: str) -> Any:
        return self.embedder.embed_query(text)


def timed_stages(drive_build: Callable[..., Any], phases: Phases) -> Callable[..., Any]:
    """``drive_build`` with each summary stage timed as a phase of as many calls as it sent."""

    def timed(step: Any, llm: Any, *, into: Any, calls: Any, max_concurrency: int) -> Any:
        started = time.perf_counter()
        try:
            return drive_build(step, llm, into=into, calls=calls, max_concurrency=max_concurrency)
        finally:
            phases.rows.append((KINDS[1], calls.llm_calls, time.perf_counter() - started))

    return timed


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One build through a fresh server; a row per kind."""
    from retrievekit.core.index.served_embedder import ServedEmbedder
    from retrievekit.core.lattice import bottom_up, summarize
    from retrievekit.core.lattice.config import TreeBuildConfig
    from retrievekit.core.llm.served_spec import load_served_llm, parse_served_spec

    corpus = scale_corpus(args.data_dir, args.docs)
    phases = Phases()
    summarize.ROUNDS_PER_BATCH = args.rounds
    bottom_up.drive_build = timed_stages(bottom_up.drive_build, phases)  # type: ignore[attr-defined]
    with llm_server(args.delay, args.slots, embed_delay=args.delay) as server, tempfile.TemporaryDirectory() as folder:
        spec = parse_served_spec(f"openai:scripted@{server.url}", timeout=120, max_concurrency=args.slots)
        llm = load_served_llm(spec)
        embedder = ServedEmbedder("words", server.url, batch_size=args.embed_batch, max_concurrency=args.slots)
        embedder.embed_query("warm up")  # the dimension, outside the measurement
        started, cpu = time.perf_counter(), time.process_time()
        cfg = TreeBuildConfig(max_concurrency=args.slots)
        tree = bottom_up.build_bottom_up(corpus, llm, TimedEmbedder(embedder, phases), cfg, build_dir=folder)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        seen = stats(server)
    common = {"docs": len(corpus), "slots": args.slots, "delay": args.delay, "embed_batch": args.embed_batch}
    common["rounds_per_batch"] = args.rounds
    peaks = {KINDS[0]: seen["peak_words"], KINDS[1]: seen["peak_chat"]}
    extra = {
        "build_wall_s": round(wall, 2),
        "build_cpu_s": round(cpu, 2),
        "height": tree.height,
        "nodes": len(tree.nodes),
    }
    return [{**common, **phases.totals(k, args.slots, args.delay), "peak_served": peaks[k], **extra} for k in KINDS]


def main(argv: list[str] | None = None) -> int:
    """Measure (or read back) the rows and print them."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--docs", type=int, default=5183, help="documents: SciFact's, then scale.py's generated ones")
    p.add_argument("--slots", type=int, default=64)
    p.add_argument("--delay", type=float, default=1.0, help="seconds the server takes for each call")
    p.add_argument("--embed-batch", type=int, default=4, help="texts per embedding request")
    p.add_argument("--rounds", type=int, default=16, help="rounds a summary batch (the library's ROUNDS_PER_BATCH)")
    p.add_argument("--records", type=Path, help="one JSON line per finished row; recorded rows are skipped")
    args = p.parse_args(argv)
    key = (args.docs, args.slots, args.delay, args.embed_batch, args.rounds)
    fields = ("docs", "slots", "delay", "embed_batch", "rounds_per_batch")
    done = [r for r in recorded_rows(args.records) if tuple(r[f] for f in fields) == key]
    if {r["kind"] for r in done} >= set(KINDS):
        for r in done:
            print(r)
        return 0
    for row in measure(args):
        keep_row(row, args.records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
