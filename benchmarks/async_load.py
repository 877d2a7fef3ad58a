"""Concurrent LATTICE ``aquery`` at users' load, awaited and on threads, through a scripted OpenAI-compatible server.

The server (``tests/_async_llm_server.py``, a process of its own) answers each call after ``--delay`` seconds with
``--slots`` calls at once (64: a GPU server's slots); the engine is LlamaIndex's ``RetrieverQueryEngine`` over a
``LatticeRetriever`` on a 27-leaf tree (3 topics, 3 subtopics, 3 leaves; 13 slates a query, 7 rounds) with
``OpenAILike`` as the model and ``max_concurrency`` set to the slots; the answer is synthesized by ``MockLLM`` (the
retrieval side is what is measured). For each concurrency (1, 8, 64, 256) and each mode, ``--queries`` queries
(at least 200) with at most that many in flight:

* ``async``: ``await engine.aquery`` on one event loop (the async model driver: no thread per query or request);
* ``threads``: ``engine.query`` on a pool of that many threads (the sync API).

Printed per row: queries per second and two ratios: ``vs_ideal``, to ``min(slots, concurrency) x`` one query's rate
(one query alone, measured first), and ``vs_capacity``, to the most the server can give, ``min(concurrency / one
query's time, slots / (delay x calls a query))``: a query makes ``calls_per_query`` calls (13) in 7 rounds, two side
by side, so 64 slots answer at most 64 / (0.2 s x 13) = 24.6 queries a second, not 64 / 1.5 s = 43 (``vs_ideal`` is at
most 0.58 at 64 and 256 concurrent). Then p50 / p95 latency, the peak thread count (``threads_at_start``: the count
before the queries, the sync warm-up's deadline threads among them), the peak RSS (each row runs in a child process
of its own), the client process's CPU a query (all its threads), the garbage collector's time a query and its
longest pause, and, for ``async``, the longest stall of the loop (a task waking every 20 ms; a collection's
pause included; ``stall_net_ms``: less the collections and the loop thread's waits for a CPU meanwhile, the time the
loop was held by code) and the share of the run its thread spent ready but waiting for a CPU (``loop_cpu_wait_share``:
other processes' load). Nothing is asserted.

    python benchmarks/async_load.py --queries 256 --records benchmarks/records/async_load/rows.jsonl

``--serve`` runs the same rows against ``retrievekit serve --parallel SLOTS --threads 1`` (llama.cpp over SmolLM2,
started on a free loopback port and stopped by its PID) instead of the scripted server: ``--slots 4`` for the issue's
rows. Its calls are not counted and its capacity is not known in advance, so ``calls_per_query`` and ``vs_capacity``
are left empty; ``vs_ideal`` still compares with ``min(slots, concurrency)`` times one query's rate.

    python benchmarks/async_load.py --serve --slots 4 --queries 256 --records benchmarks/records/async_load/serve.jsonl

Each finished row is a line of ``--records``; a rerun skips the rows recorded there (same mode, concurrency,
queries, slots and server) and prints the whole table.

The CPU a query counts the probes too: the loop's 20 ms ticker (``async``) or the thread sampler (``threads``) wakes
50 times a second for the whole run, and each wake-up costs CPU whether or not queries are running. In a row that
lasts two hours this is most of the figure. ``--probe-cost SECONDS`` measures it on this machine, now: the CPU of a
bare ``asyncio.sleep(0.02)`` loop, of the ticker's own tick (its ``schedstat`` read and thread count) and of the
sampler thread, each run alone for ``SECONDS``, per tick and per second of wall.

    python benchmarks/async_load.py --probe-cost 30
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _async_llm_server import LLMServer, llm_server, stats  # noqa: E402
from _lattice import planted_tree  # noqa: E402
from _records import append_row, recorded_rows  # noqa: E402

_SERVED_MODEL = "smollm2"


def _engine(url: str, slots: int, model: str = "scripted") -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.llms.openai_like import OpenAILike

    from retrievekit.core.lattice.method import Lattice
    from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM

    llm = OpenAILike(model=model, api_base=url, api_key="-", is_chat_model=True, timeout=600)
    retriever = LatticeRetriever(Lattice(planted_tree(), LlamaIndexChatLLM(llm, max_concurrency=slots)))
    return RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=4))


class _Collections:
    """The garbage collector's pauses (``gc.callbacks``): their total and the longest."""

    def __init__(self) -> None:
        self.total, self.longest, self._start = 0.0, 0.0, 0.0

    def __call__(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            took = time.perf_counter() - self._start
            self.total, self.longest = self.total + took, max(self.longest, took)


def _waited_for_a_cpu() -> float:
    """Seconds this thread has been ready to run but waiting for a CPU (Linux ``schedstat``; 0.0 elsewhere)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


async def _awaited(engine: Any, queries: list[str], width: int) -> dict[str, Any]:
    gate, latencies, late, net, threads = asyncio.Semaphore(width), [], [0.0], [0.0], [threading.active_count()]
    stop, collections = asyncio.Event(), _Collections()
    gc.callbacks.append(collections)

    async def ticker() -> None:  # late: as measured; net: less collections and waits for a CPU meanwhile
        waited = _waited_for_a_cpu()
        while not stop.is_set():
            start, collected = time.perf_counter(), collections.total
            await asyncio.sleep(0.02)
            late.append(time.perf_counter() - start - 0.02)
            waited, before = _waited_for_a_cpu(), waited
            net.append(late[-1] - (collections.total - collected) - (waited - before))
            threads.append(threading.active_count())

    async def one(q: str) -> None:
        async with gate:
            start = time.perf_counter()
            await engine.aquery(q)
            latencies.append(time.perf_counter() - start)

    tick = asyncio.create_task(ticker())
    start, waited = time.perf_counter(), _waited_for_a_cpu()
    await asyncio.gather(*(one(q) for q in queries))
    wall, waited = time.perf_counter() - start, _waited_for_a_cpu() - waited
    stop.set()
    await tick
    gc.callbacks.remove(collections)
    return {
        "wall": wall,
        "latencies": latencies,
        "stall_ms": max(late) * 1000,
        "stall_net_ms": max(net) * 1000,
        "loop_cpu_wait_share": round(waited / wall, 2),
        "peak_threads": max(threads),
        "threads_at_start": threads[0],  # the sync warm-up's deadline threads among them
    }


def probe_cost(seconds: float) -> dict[str, float]:
    """The CPU (this process, ``time.process_time``) of a bare 20 ms ``asyncio.sleep`` loop, of the same loop with
    the ticker's reads and of the threads rows' sampler thread, each run alone for ``seconds``: microseconds a tick
    and milliseconds a second of wall."""
    out: dict[str, float] = {}
    for name, probe in (("bare", False), ("ticker", True)):

        async def ticks(probe: bool = probe) -> int:
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                await asyncio.sleep(0.02)
                if probe:
                    _waited_for_a_cpu(), threading.active_count()
                n += 1
            return n

        cpu, start = time.process_time(), time.perf_counter()
        n = asyncio.run(ticks())
        cpu, wall = time.process_time() - cpu, time.perf_counter() - start
        out[f"{name}_us_a_tick"] = round(1e6 * cpu / n, 1)
        out[f"{name}_ms_a_second"] = round(1e3 * cpu / wall, 2)
    stop, count = threading.Event(), [0]

    def sampler() -> None:  # the threads rows' probe
        while not stop.wait(0.02):
            threading.active_count()
            count[0] += 1

    cpu, start = time.process_time(), time.perf_counter()
    watcher = threading.Thread(target=sampler, daemon=True)
    watcher.start()
    time.sleep(seconds)
    stop.set()
    watcher.join()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    out["sampler_us_a_tick"] = round(1e6 * cpu / max(count[0], 1), 1)
    out["sampler_ms_a_second"] = round(1e3 * cpu / wall, 2)
    out["load_average"] = round(os.getloadavg()[0], 2)
    return out


def _threaded(engine: Any, queries: list[str], width: int) -> dict[str, Any]:
    latencies, threads, stop = [], [threading.active_count()], threading.Event()

    def sampler() -> None:
        while not stop.wait(0.02):
            threads.append(threading.active_count())

    def one(q: str) -> None:
        start = time.perf_counter()
        engine.query(q)
        latencies.append(time.perf_counter() - start)

    watcher = threading.Thread(target=sampler, daemon=True)
    watcher.start()
    start = time.perf_counter()
    with ThreadPoolExecutor(width) as pool:
        list(pool.map(one, queries))
    wall = time.perf_counter() - start
    stop.set()
    return {
        "wall": wall,
        "latencies": latencies,
        "stall_ms": None,
        "peak_threads": max(threads),
        "threads_at_start": threads[0],
    }


def _row(url: str, slots: int, mode: str, width: int, n: int, delay: float, served: bool = False) -> dict[str, Any]:
    """One (mode, concurrency) row, in this process (the parent runs each in a child); ``served``: the server is
    ``retrievekit serve`` (its calls are not counted, and its capacity is not known in advance)."""
    server = LLMServer(url, cast(Any, None))
    engine = _engine(url, slots, _SERVED_MODEL if served else "scripted")
    asyncio.run(engine.aquery("warm up"))
    engine.query("warm up")
    before = 0 if served else len(stats(server)["arrivals"])
    start = time.perf_counter()
    engine.query("one query alone")
    alone = time.perf_counter() - start
    calls = None if served else len(stats(server)["arrivals"]) - before
    queries = [f"volcano magma question {i}" for i in range(n)]
    collections = _Collections()
    gc.callbacks.append(collections)
    cpu = time.process_time()
    got = asyncio.run(_awaited(engine, queries, width)) if mode == "async" else _threaded(engine, queries, width)
    cpu = time.process_time() - cpu
    gc.callbacks.remove(collections)
    lat = sorted(got.pop("latencies"))
    qps = n / got["wall"]
    return {
        "mode": mode,
        "concurrency": width,
        "queries": n,
        "qps": round(qps, 2),
        "vs_ideal": round(qps / (min(slots, width) / alone), 3),
        "vs_capacity": None if calls is None else round(qps / min(width / alone, slots / (delay * calls)), 3),
        "calls_per_query": calls,
        "one_query_s": round(alone, 3),
        "cpu_ms_per_query": round(1000 * cpu / n, 1),
        "gc_ms_per_query": round(1000 * collections.total / n, 1),
        "gc_longest_ms": round(1000 * collections.longest, 1),
        "p50_s": round(statistics.median(lat), 3),
        "p95_s": round(lat[int(0.95 * (len(lat) - 1))], 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        **{k: (round(v, 1) if isinstance(v, float) else v) for k, v in got.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--modes", nargs="+", default=["async", "threads"])
    parser.add_argument("--records", type=Path, help="one JSON line per finished row; recorded rows are skipped")
    parser.add_argument(
        "--serve", action="store_true", help="against `retrievekit serve` (SmolLM2, --slots slots of one thread)"
    )
    parser.add_argument("--row", nargs=3, metavar=("URL", "MODE", "WIDTH"), help=argparse.SUPPRESS)
    parser.add_argument("--probe-cost", type=float, metavar="SECONDS", help="only measure the probes' CPU, then exit")
    args = parser.parse_args()
    if args.probe_cost:
        print(json.dumps(probe_cost(args.probe_cost)))
        return
    if args.row:
        url, mode, width = args.row
        print(json.dumps(_row(url, args.slots, mode, int(width), args.queries, args.delay, args.serve)))
        return
    done = _recorded(args.records)
    with _served(args.slots) if args.serve else llm_server(args.delay, args.slots) as server:
        for width in args.concurrency:
            for mode in args.modes:
                key = (mode, width, args.queries, args.slots, _server_name(args.serve))
                if key not in done:
                    done[key] = _run_row(server.url, mode, width, args)
                    append_row(done[key], args.records)
                print(json.dumps(done[key]), flush=True)


def _recorded(path: Path | None) -> dict[tuple[Any, ...], dict[str, Any]]:
    rows = recorded_rows(path)
    return {(r["mode"], r["concurrency"], r["queries"], r["slots"], r.get("server", "scripted")): r for r in rows}


def _server_name(served: bool) -> str:
    return "retrievekit serve" if served else "scripted"


@contextlib.contextmanager
def _served(slots: int) -> Iterator[Any]:
    """``retrievekit serve --parallel SLOTS --threads 1`` over SmolLM2 (its wheel's GGUF), stopped by its PID."""
    from retrievekit.core.llm.llamacpp_server import LlamaCppServer
    from retrievekit.core.llm.models import locate_gguf

    server = LlamaCppServer.start(locate_gguf(_SERVED_MODEL), parallel=slots, threads=1)
    try:
        yield server
    finally:
        server.stop()


def _run_row(url: str, mode: str, width: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--row", url, mode, str(width), "--queries", str(args.queries)]
    cmd += ["--slots", str(args.slots), "--delay", str(args.delay)] + (["--serve"] if args.serve else [])
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        raise SystemExit(f"the row {mode} x {width} failed:\n{got.stderr[-3000:]}")
    row = json.loads(got.stdout.strip().splitlines()[-1])
    row["slots"], row["server"] = args.slots, _server_name(args.serve)
    row["load_average"] = round(os.getloadavg()[0], 2)
    return row


if __name__ == "__main__":
    main()
