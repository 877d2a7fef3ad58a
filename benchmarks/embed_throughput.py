"""How fast the dense build embeds on 1 and 2 threads, and what fraction of the cores' compute ceiling that is.

Issue #53, part 3. Not a timed test: it prints numbers and asserts nothing. The first ``--docs`` SciFact abstracts
are embedded by :class:`~retrievekit.core.index.embeddings.MiniLMEmbedder` (all-MiniLM-L6-v2 from its wheel) through
the library's own encode call, with :func:`retrievekit.core.threads.set_embed_threads` at each thread count in turn
(interleaved ``--repeats`` times, best kept: on a shared machine the best run is the least disturbed one).

The compute ceiling, measured in the same run at each thread count: the best float32 FLOP rate of
``torch.mm`` on the shape of MiniLM's feed-forward layer (``--batch-size`` x 128 tokens by 384, times 384 by 1,536),
the largest matrix product a forward pass makes. The model's work is counted from its shape: per real or padding
token, each of 6 layers makes ``2 * (4 * 384^2 + 2 * 384 * 1536)`` FLOPs of projections and feed-forward plus
``4 * L * 384`` of attention (L: the batch's padded length); batches as sentence-transformers forms them (texts
sorted by length, ``--batch-size`` a batch, at most 256 tokens). Fraction = model FLOPs / encode seconds / ceiling.

The figure needs an idle machine (nothing else running on its cores):

    python benchmarks/embed_throughput.py --data-dir "$RETRIEVEKIT_DATA_DIR" --docs 512 --repeats 3 --profile
"""

from __future__ import annotations

import argparse
import time
from typing import Any

LAYERS, HIDDEN, FFN = 6, 384, 1536


def model_flops(lengths: list[int], batch_size: int) -> float:
    """FLOPs MiniLM spends on texts of these token lengths, batched by length as sentence-transformers does.

    Examples:
        >>> model_flops([10, 10], 2) == 2 * 10 * LAYERS * (2 * (4 * HIDDEN**2 + 2 * HIDDEN * FFN) + 4 * 10 * HIDDEN)
        True
    """
    ordered = sorted(lengths, reverse=True)
    total = 0.0
    for i in range(0, len(ordered), batch_size):
        batch = ordered[i : i + batch_size]
        padded = max(batch)
        per_token = 2 * (4 * HIDDEN**2 + 2 * HIDDEN * FFN) + 4 * padded * HIDDEN
        total += len(batch) * padded * LAYERS * per_token
    return total


def matmul_ceiling(threads: int, rows: int, repeats: int = 5) -> float:
    """Best FLOP rate of a float32 ``torch.mm`` of MiniLM's feed-forward shape on ``threads`` threads."""
    import torch

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(rows, HIDDEN, generator=gen), torch.randn(HIDDEN, FFN, generator=gen)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.mm(a, b)
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(10):
                torch.mm(a, b)
            best = min(best, (time.perf_counter() - started) / 10)
    finally:
        torch.set_num_threads(before)
    return 2 * rows * HIDDEN * FFN / best


def token_lengths(embedder: Any, texts: list[str]) -> list[int]:
    """Token counts of ``texts`` as the model sees them (special tokens included, cut at its maximum length)."""
    model = embedder._model  # the sentence-transformers model the embedder wraps (its tokenizer and maximum)
    cap = int(model.max_seq_length)
    return [min(len(ids), cap) for ids in model.tokenizer(texts, truncation=True, max_length=cap)["input_ids"]]


def op_shares(embedder: Any, texts: list[str], threads: int) -> list[tuple[str, float]]:
    """Share of one encode's CPU time per torch operator (largest first), from ``torch.profiler``.

    It shows where the time beyond the matrix products goes (attention, GELU, copies, layer norms).
    """
    from torch.profiler import ProfilerActivity, profile

    from retrievekit.core import threads as thread_settings

    thread_settings.set_embed_threads(threads)
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            embedder._encode(texts)
    finally:
        thread_settings.set_embed_threads(None)
    rows = [(e.key, float(e.self_cpu_time_total)) for e in prof.key_averages()]
    total = sum(t for _, t in rows) or 1.0
    return sorted(((k, t / total) for k, t in rows), key=lambda kt: (-kt[1], kt[0]))


def main(argv: list[str] | None = None) -> int:
    """Measure and print (see the module docstring)."""
    from retrievekit.core import threads
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.index.embeddings import MiniLMEmbedder

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--docs", type=int, default=512)
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--profile", action="store_true", help="also print where one 1-thread encode spends its time")
    args = p.parse_args(argv)
    texts = [o.index_text() for o in list(load_dataset("scifact", args.data_dir).corpus)[: args.docs]]
    emb = MiniLMEmbedder.default()
    emb.batch_size = args.batch_size
    flops = model_flops(token_lengths(emb, texts), args.batch_size)
    emb._encode(texts[:8])  # warm-up (the memo is bypassed below: every run encodes every text)
    best: dict[int, float] = dict.fromkeys(args.threads, float("inf"))
    ceiling: dict[int, float] = dict.fromkeys(args.threads, 0.0)
    for _ in range(args.repeats):
        for t in args.threads:
            ceiling[t] = max(ceiling[t], matmul_ceiling(t, args.batch_size * 128))
            threads.set_embed_threads(t)
            started = time.perf_counter()
            emb._encode(texts)
            best[t] = min(best[t], time.perf_counter() - started)
    threads.set_embed_threads(None)
    print(f"{len(texts)} SciFact abstracts, batch {args.batch_size}, {flops / len(texts) / 1e9:.2f} GFLOP per abstract")
    print("| threads | abstracts/s | model GFLOP/s | matmul ceiling GFLOP/s | fraction of ceiling |")
    print("|---|---|---|---|---|")
    for t in args.threads:
        rate = flops / best[t]
        print(
            f"| {t} | {len(texts) / best[t]:.1f} | {rate / 1e9:.1f} | {ceiling[t] / 1e9:.1f} | {rate / ceiling[t]:.0%} |"
        )
    first, last = args.threads[0], args.threads[-1]
    print(f"speed-up {last} threads / {first}: {best[first] / best[last]:.2f}x (ideal {last / first:.0f}x)")
    print(f"cores free to this process: {threads.available_cpus()}; check it is idle (uptime) before quoting")
    if args.profile:
        print("| operator (1 thread) | share of CPU time |")
        print("|---|---|")
        for name, share in op_shares(emb, texts, 1)[:6]:
            print(f"| {name} | {share:.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
