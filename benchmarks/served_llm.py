"""One method through a served LLM, before and after the served path's structured output and concurrency.

Starts llama.cpp's own server (xllamacpp) over the SmolLM2 GGUF on loopback, a fresh one for each variant (llama.cpp
keeps earlier prompts in RAM, so a variant run after another on the same server would reuse its prefills), or uses
``--url``; optionally behind a proxy that adds a fixed latency per request (``--latency-ms``: a GPU server's waiting time, so the effect of
overlapping calls shows on 2 cores as it would there), and runs the method on the same queries in each variant:

* ``before`` -- the schema in the prompt, parsed with repair (``structured_output=prompt``), one call after another
  (``max_concurrency=1``): the served path as it was, with limits and typed errors;
* ``sequential`` -- the server's JSON-schema mode (``structured_output=auto``), one call after another: with
  ``after``, the effect of overlapping calls alone;
* ``after`` -- the server's JSON-schema mode and independent calls side by side (``max_concurrency`` = the server's
  slots);
* ``in-process`` -- the same model in-process (``LocalLM``, Outlines-constrained JSON), the reference valid-reply
  rate.

Each variant keeps per-query records in ``--out-dir`` (``<variant>.jsonl``): a stopped run resumes, and
``--shard K/N`` splits it over processes (a last run without ``--shard`` aggregates). The table gives, per variant:
quality, the valid-reply rate (JSON replies that parsed and validated), completion tokens, LLM calls, sequential LLM
rounds (the critical path) and seconds per query, and the highest stage fallback rate.

    python benchmarks/served_llm.py --dataset scifact --data-dir "$RETRIEVEKIT_DATA_DIR" --method llm-rerank \\
        --option first_stage=bm25 --option candidates=20 --option calls=4 --variants before after \\
        --work-dir runs/cache --out-dir runs/served/llm-rerank
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.llm.served_spec import load_served_llm, parse_served_spec
from retrievekit.core.options import parse_options
from retrievekit.core.storage import write_json_atomic

VARIANTS: dict[str, dict[str, Any]] = {
    "before": {"structured_output": "prompt", "max_concurrency": 1},
    "sequential": {"structured_output": "auto", "max_concurrency": 1},  # the schema mode alone, no overlap
    "after": {"structured_output": "auto", "max_concurrency": None},  # None: the server's slots
    "in-process": {},
}


@contextlib.contextmanager
def served_url(args: argparse.Namespace) -> Iterator[str]:
    """The base URL to use: ``--url``, else a llama.cpp server started here; behind the latency proxy if asked."""
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            from retrievekit.core.llm.llamacpp_server import LlamaCppServer

            server = stack.enter_context(LlamaCppServer.start(parallel=args.parallel, threads=args.threads))
            url = server.url
            print(f"llama.cpp server: {server}", file=sys.stderr)
        if args.latency_ms > 0:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from latency_proxy import LatencyProxy

            url = stack.enter_context(LatencyProxy(url, args.latency_ms / 1000.0)).url
        yield url


def variant_llm(name: str, url: str, args: argparse.Namespace) -> tuple[Any, str, dict[str, Any] | None]:
    """``(llm object or None, its name in the records, settings)`` of one variant."""
    if name == "in-process":
        return None, args.local_model, None
    v = VARIANTS[name]
    spec = parse_served_spec(
        f"{args.client}:{args.model}@{url}",
        timeout=args.timeout,
        max_concurrency=v["max_concurrency"] or args.parallel,
        structured_output=v["structured_output"],
    )
    assert spec is not None
    label = f"{args.client}:{args.model}@llama.cpp"  # the URL's port changes from run to run: not part of the label
    settings = {"variant": name, "structured_output": spec.structured_output, "max_concurrency": spec.max_concurrency}
    settings["latency_ms"] = args.latency_ms
    return load_served_llm(spec), label, settings


AGENT_REPAIRS = (
    "iterative.text_tool_call",
    "iterative.forced_search",
    "iterative.invalid_tool_args",
    "iterative.unknown_tool",
)


def valid_reply_rate(result: dict[str, Any]) -> float | None:
    """JSON replies that parsed and validated, over all JSON replies; for the agent (which asks for tool calls, not
    JSON), model replies that were a valid tool call (not text parsed into one, a forced search, bad arguments or an
    unknown tool), over its LLM calls. None when the run asked for neither."""
    c = result.get("counters_per_query") or {}
    replies = c.get("json.replies", 0.0)
    if replies:
        return 1.0 - c.get("json.invalid", 0.0) / replies
    if result.get("method") == "iterative":
        calls = result["cost"]["llm_calls_per_query"]
        return 1.0 - sum(c.get(k, 0.0) for k in AGENT_REPAIRS) / calls if calls else None
    return None


def table(results: dict[str, dict[str, Any]]) -> str:
    """The markdown table of the variants."""
    head = "| variant | queries | nDCG@10 | valid replies | compl. tok/q | LLM calls/q | LLM rounds/q | s/q | max fallback |"
    lines = [head, "|" + "---|" * 9]
    for name, r in results.items():
        cost, rate = r["cost"], valid_reply_rate(r)
        worst = max((row["rate"] for row in (r.get("fallbacks") or {}).values()), default=0.0)
        lines.append(
            f"| {name} | {r['n_queries']} | {r['metrics'].get('ndcg@10', float('nan')):.4f} | "
            f"{'-' if rate is None else f'{100 * rate:.1f}%'} | {cost['completion_tokens_per_query']:.1f} | "
            f"{cost['llm_calls_per_query']:.2f} | {cost.get('llm_rounds_per_query', 0.0):.2f} | "
            f"{cost['seconds_per_query']:.2f} | {100 * worst:.1f}% |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the variants; print the table when the runs are complete (not for a shard)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--split", default="dev")
    p.add_argument("--method", required=True)
    p.add_argument("--option", action="append", default=[], help="method option KEY=VALUE (repeatable)")
    p.add_argument("--variants", nargs="+", default=["before", "after"], choices=sorted(VARIANTS))
    p.add_argument("--limit", type=int, default=None, help="first N queries (figures need the whole set or 200+)")
    p.add_argument("--corpus-size", type=int, default=None, help="restrict the pool (gold objects + distractors)")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--url", default=None, help="an OpenAI-compatible server to use instead of starting llama.cpp")
    p.add_argument("--client", default="openai", choices=["openai", "openai-like"])
    p.add_argument("--model", default="smollm2", help="the model name the server expects")
    p.add_argument("--local-model", default="smollm2", help="the in-process variant's model")
    p.add_argument("--parallel", type=int, default=2, help="server slots (and the after variant's concurrency)")
    p.add_argument("--threads", type=int, default=1, help="server CPU threads (1 on a 2-core machine)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one request may take")
    p.add_argument("--latency-ms", type=float, default=0.0, help="fixed latency added to every request")
    p.add_argument("--work-dir", default=None)
    p.add_argument("--shard", default=None)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ds = load_dataset(args.dataset, args.data_dir, split=args.split, limit=args.limit, corpus_size=args.corpus_size)
    options = parse_options(args.option)
    results: dict[str, dict[str, Any]] = {}
    for name in args.variants:
        # a fresh server per variant: llama.cpp keeps earlier prompts in RAM, and a variant must not reuse the
        # prefills of the one before it
        with served_url(args) if name != "in-process" else contextlib.nullcontext("") as url:
            llm, llm_label, settings = variant_llm(name, url, args)
            if args.corpus_size:
                settings = {**(settings or {}), "corpus_size": args.corpus_size}
            result = run_benchmark(
                ds,
                args.method,
                k=args.k,
                llm=llm if llm is not None else llm_label,
                work_dir=args.work_dir,
                options=options,
                progress=not args.no_progress,
                records=out_dir / f"{name}.jsonl",
                shard=args.shard,
                settings={**(settings or {}), "llm": llm_label} if llm is not None else settings,  # names the object
                label=f"{args.method} ({name})",
            )
            if args.shard:
                continue
            result["served_variant"] = {"name": name, **(settings or {})}
            write_json_atomic(result, out_dir / f"{name}.json")
            results[name] = result
    if results:
        text = table(results)
        (out_dir / "table.md").write_text(text, encoding="utf-8")
        print(text, end="")
        print(json.dumps({n: valid_reply_rate(r) for n, r in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
