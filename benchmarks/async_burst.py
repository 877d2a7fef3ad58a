"""200 concurrent LATTICE ``aretrieve`` against one alone: the async path's cost when the server is not the limit.

The scripted OpenAI-compatible server (``tests/_async_llm_server.py``, a process of its own) answers each call after
0.2 s and serves every call at once (no slot limit); LlamaIndex's ``LatticeRetriever`` over the 27-leaf tree of the
load test (13 slates a query in 7 rounds), ``OpenAILike`` as the model. One query alone is timed first, then
``--queries`` (200) at once on one event loop with the heap frozen (``gc.freeze()``), as
``tests/integrations/test_model_drivers_at_load.py`` does. With enough slots every query waits 7 x 0.2 s for the
server, so what the burst adds to one query's time is the client's own CPU (the code between the calls: prompts,
calibration, anchor draws; and the HTTP client), so long as the client's budget of calls in flight
(``--max-concurrency``, what a user sets to the server's slots) covers the burst: a query scores two slates at a time
after its first, so 200 queries make 400 calls at once. The default, 512, covers them; with 256 the calls past it
wait for the budget, a wait no client speed shortens. Printed per run: one query's seconds, the burst's seconds,
their ratio (issue goal: at most 1.5) and the client process's CPU milliseconds a query. ``--runs`` repeats the pair, each in
a child process of its own (the median is what to quote: this 2-core machine's neighbours move single runs).

    python benchmarks/async_burst.py --runs 5 --records benchmarks/records/async_load/burst.jsonl

``PYTHONPATH=<checkout>/core:<checkout>/integrations`` measures another checkout's code with this script (``--label``
names it in the rows). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _records import append_row  # noqa: E402


def _run(queries: int, delay: float, budget: int) -> dict[str, Any]:
    """One pair (one query alone, then ``queries`` at once) in this process."""
    from _async_llm_server import llm_server
    from _lattice import planted_tree
    from llama_index.llms.openai_like import OpenAILike

    from retrievekit.core.lattice.method import Lattice
    from retrievekit.llama_index import LatticeRetriever, LlamaIndexChatLLM

    with llm_server(delay) as server:
        llm = OpenAILike(model="scripted", api_base=server.url, api_key="-", is_chat_model=True, timeout=60)
        retriever = LatticeRetriever(
            Lattice(planted_tree(), LlamaIndexChatLLM(llm, max_concurrency=budget)), similarity_top_k=3
        )
        asyncio.run(retriever.aretrieve("warm up"))  # imports and the first connection, outside the measurement
        start = time.perf_counter()
        asyncio.run(retriever.aretrieve("volcano magma question 0"))
        one = time.perf_counter() - start

        async def burst() -> list[Any]:
            return await asyncio.gather(*(retriever.aretrieve(f"volcano magma question {i}") for i in range(queries)))

        gc.collect()
        gc.freeze()
        cpu, start = time.process_time(), time.perf_counter()
        results = asyncio.run(burst())
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert all(len(r) == 3 for r in results)
    return {
        "queries": queries,
        "delay_s": delay,
        "max_concurrency": budget,
        "one_s": round(one, 3),
        "burst_s": round(wall, 3),
        "ratio": round(wall / one, 3),
        "cpu_ms_per_query": round(cpu / queries * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-concurrency", type=int, default=512, help="the client's calls in flight (slots)")
    parser.add_argument("--records", type=Path, help="one JSON line per run")
    parser.add_argument("--label", default="", help="written into each row (which code ran, for a before/after)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_run(args.queries, args.delay, args.max_concurrency)))
        return
    rows = []
    for _ in range(args.runs):
        cmd = [sys.executable, __file__, "--one", "--queries", str(args.queries), "--delay", str(args.delay)]
        cmd += ["--max-concurrency", str(args.max_concurrency)]
        got = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(got.stdout.strip().splitlines()[-1])
        row["load_average"], row["label"] = round(os.getloadavg()[0], 2), args.label
        append_row(row, args.records)
        rows.append(row)
        print(json.dumps(row), flush=True)
    for key in ("ratio", "cpu_ms_per_query", "burst_s"):
        print(f"median {key}: {statistics.median(r[key] for r in rows)}")


if __name__ == "__main__":
    main()
