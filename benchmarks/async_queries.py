"""Concurrent queries of a LlamaIndex ``RetrieverQueryEngine`` through llama.cpp's server: awaited, on threads, and
one at a time.

Two pipelines over SciFact dev claims and a small pool of abstracts (their gold abstracts plus seeded distractors):

* ``lattice`` -- ``LatticeRetriever`` with the demo's light settings (beam 1, four slates, summaries of at most 16
  tokens), ``--option KEY=VALUE`` over them (the documented run: ``max_children=5`` and ``max_candidate_chars=60``, slates of up to 5 short candidates);
  the tree is built once through the server and cached in ``--work-dir``;
* ``hybrid-oneshot`` -- the hybrid baseline (BM25 + MiniLM dense, reciprocal rank fusion) and One-SHOT with LLM
  cropping as the node postprocessor.

Each pipeline answers the same ``--queries`` claims in three modes, each against a fresh llama.cpp server
(``--parallel`` slots, one thread each; a fresh server so that no mode reuses another's cached prompts):

* ``async`` -- ``asyncio.gather`` of every ``engine.aquery``: the served LLM is reached through ``OpenAILike.achat``
  on the event loop (retrievekit's async bridge);
* ``threads`` -- every ``engine.query`` at once on a pool of as many threads, driven from the event loop
  (``run_in_executor``): the way to get concurrency without native async;
* ``sequential`` -- one ``engine.query`` after another, over the first ``--sequential-queries`` claims (8: one query
  at a time is the slow baseline).

The engine synthesizes no answer (LlamaIndex's ``NoText`` synthesizer): the figures are the retrieval side's. Per
mode: queries per second, p50 / p95 latency of one query, and the longest stall of the event loop (a task waking
every 20 ms on it; ``-`` for ``sequential``, which runs no loop). The adapter sends at most ``--parallel`` requests
at once (the server's slots). Nothing is asserted: the numbers are printed beside each other, and written as JSON to
``--out`` when given. The script uses only the public API, so it also runs on an older checkout
(``PYTHONPATH=<checkout>/core:<checkout>/integrations``) to measure the code before the async bridge.

    python benchmarks/async_queries.py --data-dir "$RETRIEVEKIT_DATA_DIR" --queries 32 --corpus-size 40 \\
        --option max_children=5 --option max_candidate_chars=60 --work-dir runs/async-cache \\
        --out runs/async_queries.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers.no_text import NoText

from retrievekit.core.demo import DEMO_OPTIONS
from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.llamacpp_server import LlamaCppServer
from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM, OneShotPostprocessor, RetrieveKitRetriever

MODES = ("async", "threads", "sequential")
PIPELINES = ("lattice", "hybrid-oneshot")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextmanager
def _server(args: argparse.Namespace) -> Iterator[LlamaCppServer]:
    server = LlamaCppServer.start(parallel=args.parallel, threads=args.threads)
    try:
        yield server
    finally:
        server.stop()


def _llm(server: LlamaCppServer, args: argparse.Namespace) -> LlamaIndexChatLLM:
    from llama_index.llms.openai_like import OpenAILike

    client = OpenAILike(api_base=server.url, api_key="-", model="smollm2", is_chat_model=True, timeout=args.timeout)
    return LlamaIndexChatLLM(client, policy=CallPolicy(timeout=args.timeout), max_concurrency=args.parallel)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _engine(
    pipeline: str, docs: list[Document], llm: LlamaIndexChatLLM, args: argparse.Namespace
) -> RetrieverQueryEngine:
    work = args.work_dir
    if pipeline == "lattice":
        lattice = {**DEMO_OPTIONS["lattice"], **dict(o.split("=", 1) for o in args.option)}
        lattice = {k: _value(v) if isinstance(v, str) else v for k, v in lattice.items()}
        retriever = LatticeRetriever.from_documents(
            docs, llm=llm, tree_dir=work / "tree", similarity_top_k=10, **lattice
        )
        return RetrieverQueryEngine(retriever, response_synthesizer=NoText(llm=MockLLM()))
    hybrid = RetrieveKitRetriever.from_documents(docs, method="hybrid", work_dir=work / "hybrid", similarity_top_k=10)
    crop = OneShotPostprocessor(budget=300, k_max=3, crop=True, llm=llm)
    return RetrieverQueryEngine(hybrid, response_synthesizer=NoText(llm=MockLLM()), node_postprocessors=[crop])


async def _ticker(stop: asyncio.Event, late: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.02)
        late.append(time.perf_counter() - start - 0.02)


async def _timed_async(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


def _timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def run_mode(mode: str, engine: RetrieverQueryEngine, queries: list[str]) -> dict[str, Any]:
    """Answer ``queries`` in ``mode``: seconds in all, each query's latency, the loop's longest stall."""
    if mode == "sequential":
        start = time.perf_counter()
        latencies = [_timed(lambda q=q: engine.query(q)) for q in queries]
        return {"seconds": time.perf_counter() - start, "latencies": latencies, "stall": None}

    async def main() -> tuple[float, list[float], float]:
        stop, late = asyncio.Event(), [0.0]
        ticker = asyncio.create_task(_ticker(stop, late))
        start = time.perf_counter()
        if mode == "async":
            latencies = await asyncio.gather(*[_timed_async(lambda q=q: engine.aquery(q)) for q in queries])
        else:
            loop = asyncio.get_running_loop()
            with ThreadPoolExecutor(max_workers=len(queries)) as pool:
                runs = [loop.run_in_executor(pool, _timed, lambda q=q: engine.query(q)) for q in queries]
                latencies = await asyncio.gather(*runs)
        seconds = time.perf_counter() - start
        stop.set()
        await ticker
        return seconds, list(latencies), max(late)

    seconds, latencies, stall = asyncio.run(main())
    return {"seconds": seconds, "latencies": latencies, "stall": stall}


def summarize(pipeline: str, mode: str, run: dict[str, Any], n: int) -> dict[str, Any]:
    """One table row: queries per second, p50 / p95 latency, the longest loop stall."""
    lat = run["latencies"]
    return {
        "pipeline": pipeline,
        "mode": mode,
        "queries": n,
        "qps": n / run["seconds"],
        "p50_s": statistics.median(lat),
        "p95_s": _percentile(lat, 0.95),
        "seconds": run["seconds"],
        "max_loop_stall_s": run["stall"],
    }


def _row(r: dict[str, Any]) -> str:
    stall = "-" if r["max_loop_stall_s"] is None else f"{r['max_loop_stall_s'] * 1000:.0f} ms"
    return (
        f"| {r['pipeline']} | {r['mode']} | {r['queries']} | {r['qps']:.2f} | {r['p50_s']:.1f} | {r['p95_s']:.1f} | "
        f"{r['seconds']:.1f} | {stall} |"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the pipelines in every mode and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--queries", type=int, default=32, help="SciFact dev claims (the first N)")
    p.add_argument("--sequential-queries", type=int, default=8, help="claims the one-at-a-time mode answers")
    p.add_argument("--corpus-size", type=int, default=100, help="abstracts: the claims' gold ones + distractors")
    p.add_argument("--parallel", type=int, default=4, help="the server's slots (one thread each)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one request may take")
    p.add_argument("--pipelines", nargs="+", choices=PIPELINES, default=list(PIPELINES))
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--option", action="append", default=[], help="LATTICE setting KEY=VALUE over the demo's")
    p.add_argument("--work-dir", type=Path, default=Path("runs/async-cache"))
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    ds = load_dataset("scifact", args.data_dir, split="dev", limit=args.queries, corpus_size=args.corpus_size)
    queries = [q.text for q in ds.queries]
    docs = [Document(text=o.text, id_=o.id) for o in ds.corpus]
    print(f"{len(queries)} SciFact dev claims, {len(docs)} abstracts", file=sys.stderr)
    rows = []
    for pipeline in args.pipelines:
        with _server(args) as server:  # builds the tree / the indexes once (cached in --work-dir)
            _engine(pipeline, docs, _llm(server, args), args)
        for mode in args.modes:
            asked = queries[: args.sequential_queries] if mode == "sequential" else queries
            with _server(args) as server:
                engine = _engine(pipeline, docs, _llm(server, args), args)
                row = summarize(pipeline, mode, run_mode(mode, engine, asked), len(asked))
            rows.append(row)
            print(_row(row), file=sys.stderr, flush=True)
    print("| pipeline | mode | queries | queries/s | p50 s | p95 s | wall s | longest loop stall |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(_row(r))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
