"""Constrained vs unconstrained beam-search throughput, same model and beams (prints numbers, asserts nothing).

Runs ``hf_model.generate`` with the same prompt, ``num_beams`` and step count four ways: no constraint; a title
trie through ``prefix_allowed_tokens_fn`` (transformers' per-row mask) and through our vectorised Outlines
processor; a document suffix array (the MindRef stage-2 constraint). ``min_new_tokens = max_new_tokens`` keeps the unconstrained and suffix-array
run at the full step count (the trie runs stop when every title has ended, so their step count is read from the
output), and tokens/s compare like for like: ``beams * steps / seconds``. Device: CUDA when available, else CPU.
Every timed run starts with the constraint's memory of asked prefixes cleared, as a new query would. Each beam width
also prints the host time per step of the trie's and the suffix array's lookups alone (:func:`lookup_cost`), with
and without them remembering what each asked prefix led to.

    python benchmarks/constrained_throughput.py --llm smollm2 --beams 1 10 50 --steps 16 --repeats 2
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import torch
from transformers import LogitsProcessorList

from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.index.suffix_array import TokenSuffixArray
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm.local import LocalLM
from retrievekit.outlines import SuffixArrayLogitsProcessor, TrieLogitsProcessor, prefix_allowed_tokens_fn


def variants(lm: Any, corpus: list[Any], query: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The prompt ids and the ``generate`` arguments of each variant (unconstrained first), built once: a title trie
    over ``corpus`` and a suffix array over its first two documents."""
    trie = TokenTrie.from_texts([" " + (o.title or o.id) for o in corpus], lm.encode, lm.eos_token_id)
    sa = TokenSuffixArray([lm.encode(" " + o.text) for o in corpus[:2]])
    ids = torch.tensor([lm.encode(f"Question: {query}\n\nTitle:")], device=lm.device)
    by_prefix = prefix_allowed_tokens_fn(trie, ids.shape[1])
    by_prefix.constraint = trie  # type: ignore[attr-defined]  # for _forget
    return ids, {
        "unconstrained": {},
        "trie (prefix_allowed_tokens_fn)": {"prefix_allowed_tokens_fn": by_prefix},
        "trie (Outlines processor)": {"logits_processor": LogitsProcessorList([TrieLogitsProcessor(trie)])},
        "suffix array (Outlines processor)": {
            "logits_processor": LogitsProcessorList([SuffixArrayLogitsProcessor(sa, lm.eos_token_id)])
        },
    }


def measure(
    lm: Any, ids: Any, kinds: dict[str, dict[str, Any]], *, beams: int, steps: int, repeats: int
) -> list[dict[str, Any]]:
    """Beam-tokens/s of each variant of :func:`variants` for its prompt: ``[{variant, beams, steps, seconds,
    beam_tokens_per_s, time_per_token_overhead_pct}]``; the best of ``repeats`` timings counts.

    The variants take turns: one untimed round first (kernels, allocator and clocks warm up for this beam width),
    then ``repeats`` timed rounds, each running every variant once, so that a drift of the machine during the run
    falls on all of them alike instead of on whichever ran first."""
    best = {name: float("inf") for name in kinds}
    n_steps: dict[str, int] = {}
    for timed in [False] + [True] * repeats:
        for name, kw in kinds.items():
            seconds, n_steps[name] = _generate_once(lm, ids, name, kw, beams=beams, steps=steps)
            if timed:
                best[name] = min(best[name], seconds)
    rows: list[dict[str, Any]] = []
    for name in kinds:
        tps = beams * n_steps[name] / best[name]
        base = rows[0]["beam_tokens_per_s"] if rows else tps
        rows.append({"variant": name, "beams": beams, "steps": n_steps[name], "seconds": best[name],
                     "beam_tokens_per_s": tps, "time_per_token_overhead_pct": 100 * (base / tps - 1)})  # fmt: skip
    return rows


def _generate_once(lm: Any, ids: Any, name: str, kw: dict[str, Any], *, beams: int, steps: int) -> tuple[float, int]:
    """One timed ``generate`` of a variant: ``(seconds, new tokens)``."""
    for p in kw.get("logits_processor", []):
        p.reset()
        _forget(p.allowed)  # every timed run starts as a new query would: nothing remembered
    if "prefix_allowed_tokens_fn" in kw:
        _forget(kw["prefix_allowed_tokens_fn"].constraint)
    start = time.perf_counter()
    with torch.no_grad():
        out = lm.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            num_beams=beams,
            num_return_sequences=1,
            max_new_tokens=steps,
            min_new_tokens=0 if name.startswith("trie") else steps,
            do_sample=False,
            early_stopping=False,
            pad_token_id=lm.tokenizer.pad_token_id or lm.eos_token_id,
            **kw,
        )
    if str(lm.device).startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start, int(out.shape[1]) - int(ids.shape[1])


def _forget(constraint: Any) -> None:
    """Clear what a trie or suffix array remembers of the prefixes it was asked (a new query's first lookup)."""
    for memory in ("_nodes", "_ranges"):  # private on purpose: the benchmark measures both states
        getattr(constraint, memory, {}).clear()


def lookup_cost(lm: Any, corpus: list[Any], *, beams: int, steps: int, repeats: int) -> dict[str, dict[str, float]]:
    """Host milliseconds per step spent finding every beam's allowed tokens (the part of a constrained step that no
    GPU speeds up), for the title trie and the document suffix array of :func:`variants`, each two ways side by
    side: remembering what each asked prefix led to (a beam's prefix grows one token a step, so each lookup takes
    one step down from its parent's), and finding every prefix from the root (as before they remembered; emulated
    by forgetting before each lookup). Trie beams follow ``beams`` real titles; suffix-array beams follow ``beams``
    passages of the two documents, two tokens apart."""
    from retrievekit.core.llm.constraints import next_allowed_array

    titles = [" " + (o.title or o.id) for o in corpus]
    docs = [lm.encode(" " + o.text) for o in corpus[:2]]
    constraints = {
        "trie": (
            lambda: TokenTrie.from_texts(titles, lm.encode, lm.eos_token_id),
            [lm.encode(t) for t in titles[:beams]],
        ),
        "suffix array": (lambda: TokenSuffixArray(docs), [docs[i % 2][2 * i :] for i in range(beams)]),
    }
    out: dict[str, dict[str, float]] = {}
    for kind, (build, paths) in constraints.items():
        out[kind] = {}
        for name, forget in (("remembered", False), ("from the root", True)):
            best = float("inf")
            for _ in range(repeats):
                constraint = build()
                start = time.perf_counter()
                for step in range(steps):
                    for path in paths:
                        if forget:
                            _forget(constraint)
                        next_allowed_array(constraint, path[:step], lm.eos_token_id)
                best = min(best, time.perf_counter() - start)
            out[kind][name] = 1000 * best / steps
    return out


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", default="smollm2")
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("RETRIEVEKIT_DATA_DIR"),
        required="RETRIEVEKIT_DATA_DIR" not in os.environ,
        help="benchmark data folder (docs/datasets.md; default: $RETRIEVEKIT_DATA_DIR)",
    )
    ap.add_argument("--beams", type=int, nargs="+", default=[10])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    lm = LocalLM.load(args.llm, device=device)
    ds = load_dataset("scifact", args.data_dir, split="dev", limit=1)
    print(f"device={device} model={args.llm} SciFact titles={len(ds.corpus)} steps={args.steps}")
    ids, kinds = variants(lm, list(ds.corpus), ds.queries[0].text)
    for beams in args.beams:
        for r in measure(lm, ids, kinds, beams=beams, steps=args.steps, repeats=args.repeats):
            print(
                f"beams={beams:3d} {r['variant']:36s} {r['beam_tokens_per_s']:8.1f} beam-tokens/s  ({r['steps']} "
                f"steps in {r['seconds']:.2f} s; {r['time_per_token_overhead_pct']:+.0f}% time/token)"
            )
        cost = lookup_cost(lm, list(ds.corpus), beams=beams, steps=args.steps, repeats=args.repeats)
        for kind, ms in cost.items():
            print(
                f"beams={beams:3d} {kind} lookups on the host, ms/step: "
                + ", ".join(f"{k} {v:.2f}" for k, v in ms.items())
            )


if __name__ == "__main__":
    main()
