"""Concurrent LATTICE ``aquery`` at users' load, awaited and on threads, through a scripted OpenAI-compatible server.

The server (``tests/_async_llm_server.py``, a process of its own) answers each call after ``--delay`` seconds with
``--slots`` calls at once (64: a GPU server's slots); the engine is LlamaIndex's ``RetrieverQueryEngine`` over a
``LatticeRetriever`` on a 27-leaf tree (3 topics, 3 subtopics, 3 leaves; 13 slates a query, 7 rounds) with
``OpenAILike`` as the model and ``max_concurrency`` set to the slots; the answer is synthesized by ``MockLLM`` (the
retrieval side is what is measured). For each concurrency (1, 8, 64, 256) and each mode, ``--queries`` queries
(at least 200) with at most that many in flight:

* ``async``: ``await engine.aquery`` on one event loop (the async model driver: no thread per query or request);
* ``threads``: ``engine.query`` on a pool of that many threads (the sync API).

Printed per row: queries per second and its ratio to ``min(slots, concurrency) x`` one query's rate (one query
alone, measured first), p50 / p95 latency, the peak thread count, the peak RSS (each row runs in a child process of
its own), the client process's CPU a query (all its threads) and, for ``async``, the longest stall of the loop (a
task waking every 20 ms). Nothing is asserted.

    python benchmarks/async_load.py --queries 256 --records benchmarks/records/async_load/rows.jsonl

Each finished row is a line of ``--records``; a rerun skips the rows recorded there (same mode, concurrency,
queries and slots) and prints the whole table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _async_llm_server import llm_server  # noqa: E402
from _lattice import planted_tree  # noqa: E402


def _engine(url: str, slots: int) -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.llms.openai_like import OpenAILike

    from retrievekit.core.lattice.method import Lattice
    from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM

    llm = OpenAILike(model="scripted", api_base=url, api_key="-", is_chat_model=True, timeout=600)
    retriever = LatticeRetriever(Lattice(planted_tree(), LlamaIndexChatLLM(llm, max_concurrency=slots)))
    return RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=4))


async def _awaited(engine: Any, queries: list[str], width: int) -> dict[str, Any]:
    gate, latencies, late, threads = asyncio.Semaphore(width), [], [0.0], [threading.active_count()]
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.02)
            late.append(time.perf_counter() - start - 0.02)
            threads.append(threading.active_count())

    async def one(q: str) -> None:
        async with gate:
            start = time.perf_counter()
            await engine.aquery(q)
            latencies.append(time.perf_counter() - start)

    tick = asyncio.create_task(ticker())
    start = time.perf_counter()
    await asyncio.gather(*(one(q) for q in queries))
    wall = time.perf_counter() - start
    stop.set()
    await tick
    return {"wall": wall, "latencies": latencies, "stall_ms": max(late) * 1000, "peak_threads": max(threads)}


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
    return {"wall": wall, "latencies": latencies, "stall_ms": None, "peak_threads": max(threads)}


def _row(url: str, slots: int, mode: str, width: int, n: int) -> dict[str, Any]:
    """One (mode, concurrency) row, in this process (the parent runs each in a child)."""
    engine = _engine(url, slots)
    asyncio.run(engine.aquery("warm up"))
    engine.query("warm up")
    start = time.perf_counter()
    engine.query("one query alone")
    alone = time.perf_counter() - start
    queries = [f"volcano magma question {i}" for i in range(n)]
    cpu = time.process_time()
    got = asyncio.run(_awaited(engine, queries, width)) if mode == "async" else _threaded(engine, queries, width)
    cpu = time.process_time() - cpu
    lat = sorted(got.pop("latencies"))
    qps = n / got["wall"]
    return {
        "mode": mode,
        "concurrency": width,
        "queries": n,
        "qps": round(qps, 2),
        "vs_ideal": round(qps / (min(slots, width) / alone), 3),
        "one_query_s": round(alone, 3),
        "cpu_ms_per_query": round(1000 * cpu / n, 1),
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
    parser.add_argument("--row", nargs=3, metavar=("URL", "MODE", "WIDTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        url, mode, width = args.row
        print(json.dumps(_row(url, args.slots, mode, int(width), args.queries)))
        return
    done = _recorded(args.records)
    with llm_server(args.delay, args.slots) as server:
        for width in args.concurrency:
            for mode in args.modes:
                key = (mode, width, args.queries, args.slots)
                if key not in done:
                    done[key] = _run_row(server.url, mode, width, args)
                    if args.records:
                        args.records.parent.mkdir(parents=True, exist_ok=True)
                        with args.records.open("a", encoding="utf-8") as f:
                            f.write(json.dumps(done[key]) + "\n")
                print(json.dumps(done[key]), flush=True)


def _recorded(path: Path | None) -> dict[tuple[Any, ...], dict[str, Any]]:
    rows = (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path and path.exists() else []
    )
    return {(r["mode"], r["concurrency"], r["queries"], r["slots"]): r for r in rows}


def _run_row(url: str, mode: str, width: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--row", url, mode, str(width), "--queries", str(args.queries)]
    cmd += ["--slots", str(args.slots)]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        raise SystemExit(f"the row {mode} x {width} failed:\n{got.stderr[-3000:]}")
    row = json.loads(got.stdout.strip().splitlines()[-1])
    row["slots"] = args.slots
    row["load_average"] = round(os.getloadavg()[0], 2)
    return row


if __name__ == "__main__":
    main()
