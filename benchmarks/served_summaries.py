"""LATTICE's tree summaries through a served LLM: summaries per second at 1, 2 and 4 slots (issue #53, part 2).

For each slot count, a fresh ``retrievekit serve`` (llama.cpp's server over SmolLM2, ``--parallel`` = the slots,
``--threads`` = ``--threads``) on loopback, then a bottom-up LATTICE build over the first ``--docs`` SciFact
abstracts with the served LLM writing the summaries, ``max_concurrency`` = the slots, so that many summary calls are
in flight at once. Leaf vectors come from the feature-hashing embedder of ``benchmarks/scale.py`` (the LLM, not the
embedder, is what is timed). It prints, per slot count: summaries written, wall seconds, summaries per second,
prompt and completion tokens per summary. A fresh server for each count, since llama.cpp keeps earlier prompts in
RAM. Not a timed test: it prints numbers and asserts nothing.

    python benchmarks/served_summaries.py --data-dir "$RETRIEVEKIT_DATA_DIR" --docs 300 --slots 1 2 4 --threads 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    """Run every slot count and print the table."""
    from scale import HashedWords

    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.lattice.bottom_up import build_bottom_up
    from retrievekit.core.lattice.config import TreeBuildConfig
    from retrievekit.core.llm.llamacpp_server import LlamaCppServer
    from retrievekit.core.llm.served_spec import load_served_llm, parse_served_spec
    from retrievekit.core.trace import Trace

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--docs", type=int, default=300)
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--threads", type=int, default=2, help="the server's CPU threads (all slots share them)")
    args = p.parse_args(argv)
    corpus = list(load_dataset("scifact", args.data_dir).corpus)[: args.docs]
    print(f"{len(corpus)} SciFact abstracts, SmolLM2 served, {args.threads} server threads")
    print("| slots | summaries | wall s | summaries/s | prompt tokens / summary | completion tokens / summary |")
    print("|---|---|---|---|---|---|")
    for slots in args.slots:
        with LlamaCppServer.start(parallel=slots, threads=args.threads) as server:
            llm = load_served_llm(parse_served_spec(f"openai:smollm2@{server.url}", timeout=300))
            trace = Trace()
            started = time.perf_counter()
            build_bottom_up(corpus, llm, HashedWords(), TreeBuildConfig(max_concurrency=slots), trace=trace)
            wall = time.perf_counter() - started
        n = max(trace.llm_calls, 1)
        print(
            f"| {slots} | {trace.llm_calls} | {wall:.1f} | {trace.llm_calls / wall:.2f} | "
            f"{trace.prompt_tokens / n:.0f} | {trace.completion_tokens / n:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
