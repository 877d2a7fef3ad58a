"""One-SHOT on ObliQA: gold-passage recall inside token budgets, with the tokens actually used.

Compares, at each budget (default 2k / 4k / 8k tokens), over one shared hybrid (BM25 + MiniLM, RRF) candidate pool:

  (a) fixed top-5           the first 5 hybrid hits (a prefix cut to the budget if they do not fit)
  (b) knapsack              One-SHOT selection within the budget (exact DP)
  (c) knapsack + filter     + the rule-based metadata filter (drop other documents/dates, add same-document and
                            adjacent chunks; documents rebuilt from passages in order supply the neighbours)
  (d) + cropping            + LLM sentence cropping with a local model (slow on CPU: run on --crop-limit queries;
                            (c) is re-reported on the same subset so the rows compare)

Recall = |selected ∩ gold| / |gold| averaged over judged queries; a cropped chunk still counts as selected.
Tokens are counted with --tokenizer (default tiktoken cl100k_base, bundled offline with llama-index-core).

Run (from the repo root; the dense index is cached in --work-dir after the first run):

    python benchmarks/oneshot_obliqa.py --data-dir "$RETRIEVEKIT_DATA_DIR" --work-dir runs/cache --out runs/oneshot_obliqa.json

No tuning on specific questions: all parameters are OneShotConfig defaults except the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from retrievekit.core.eval.datasets import load_dataset, rebuild_documents  # noqa: E402
from retrievekit.core.index.baselines import build_hybrid  # noqa: E402
from retrievekit.core.llm.protocol import JsonResult  # noqa: E402
from retrievekit.core.oneshot import DocumentCatalog, OneShotConfig, OneShotSelector  # noqa: E402
from retrievekit.core.oneshot.tokens import make_token_counter  # noqa: E402
from retrievekit.core.retriever import MethodContext  # noqa: E402
from retrievekit.core.trace import Trace  # noqa: E402
from retrievekit.core.types import ScoredHit  # noqa: E402


class CachedLLM:
    """Memoises ``complete_json`` by prompt so the same chunk is cropped once across budgets (counts unique calls)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.cache: dict[str, JsonResult | Exception] = {}
        self.calls = 0
        self.seconds = 0.0

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        return self.llm.complete(*args, **kwargs)

    def complete_json(self, prompt: Any, schema: Any, **kwargs: Any) -> JsonResult:
        key = str(prompt)
        if key not in self.cache:
            self.calls += 1
            t0 = time.perf_counter()
            try:
                self.cache[key] = self.llm.complete_json(prompt, schema, **kwargs)
            except Exception as e:  # recorded and re-raised for the cropper's fallback
                self.cache[key] = e
            self.seconds += time.perf_counter() - t0
        out = self.cache[key]
        if isinstance(out, Exception):
            raise out
        return out


def recall(selected: list[str], gold: dict[str, int]) -> float:
    rel = {d for d, g in gold.items() if g > 0}
    return len(rel & set(selected)) / len(rel) if rel else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("RETRIEVEKIT_DATA_DIR"),
        required="RETRIEVEKIT_DATA_DIR" not in os.environ,
        help="benchmark data folder (docs/datasets.md; default: $RETRIEVEKIT_DATA_DIR)",
    )
    ap.add_argument("--split", default="dev")
    ap.add_argument("--limit", type=int, default=None, help="first N questions for (a)-(c) (default: all)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[2000, 4000, 8000])
    ap.add_argument("--pool", type=int, default=100, help="hybrid candidates per question (default 100)")
    ap.add_argument("--tokenizer", default="tiktoken", help="token counter: tiktoken (cl100k_base) or regex")
    ap.add_argument("--work-dir", default="runs/cache", help="where the hybrid indexes are cached")
    ap.add_argument("--crop-limit", type=int, default=30, help="questions for (d); 0 skips cropping")
    ap.add_argument("--crop-max-chunks", type=int, default=None, help="override OneShotConfig.crop_max_chunks")
    ap.add_argument("--llm", default="smollm2", help="local model for (d)")
    ap.add_argument(
        "--score-normalization", default=None, help="override OneShotConfig.score_normalization (minmax|max|raw|rank)"
    )
    ap.add_argument("--variants", nargs="*", default=["top5", "knapsack", "filter"], help="which of (a)-(c) to run")
    ap.add_argument("--out", default="runs/oneshot_obliqa.json")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    ds = load_dataset("obliqa", args.data_dir, split=args.split, limit=args.limit)
    docs = rebuild_documents(ds.corpus)  # documents rebuilt from passages in order -> neighbour lookup
    lookup_table = {(doc, p.metadata.get("order")): p for doc, ps in docs.items() for p in ps}

    def lookup(doc: Any, order: Any) -> Any:
        return lookup_table.get((doc, order))

    meta_path = Path(args.data_dir) / "obliqa" / "documents_meta.json"
    catalog = None
    if meta_path.is_file():
        catalog = DocumentCatalog.from_records(json.loads(meta_path.read_text(encoding="utf-8")))
    counter = make_token_counter(args.tokenizer)
    hybrid = build_hybrid(
        MethodContext(corpus=ds.corpus, work_dir=Path(args.work_dir), options={"candidate_k": max(100, args.pool)})
    )
    print(
        f"loaded {len(ds.queries)} questions, {len(ds.corpus)} passages in {len(docs)} documents; "
        f"index ready in {time.perf_counter() - t0:.0f}s",
        file=sys.stderr,
    )

    t1 = time.perf_counter()
    pools: dict[str, list[ScoredHit]] = {q.id: hybrid.search(q.text, args.pool) for q in ds.queries}
    print(f"retrieved pools in {time.perf_counter() - t1:.0f}s", file=sys.stderr)
    judged = [q for q in ds.queries if any(g > 0 for g in ds.qrels.get(q.id, {}).values())]

    def run(variant: str, budget: int, queries: list[Any], llm: Any = None) -> dict[str, Any]:
        cfg = OneShotConfig(
            budget=budget,
            filter=variant in ("filter", "crop"),
            crop=variant == "crop",
            **({"crop_max_chunks": args.crop_max_chunks} if args.crop_max_chunks is not None else {}),
            **({"score_normalization": args.score_normalization} if args.score_normalization else {}),
        )
        sel = OneShotSelector(cfg, catalog=catalog, lookup=lookup, llm=llm, token_counter=counter)
        rs, toks, nchunks, secs, drops, adds, crops = [], [], [], [], 0, 0, 0
        for q in queries:
            hits = pools[q.id]
            start = time.perf_counter()
            if variant == "top5":
                ids, used = [], 0
                for h in hits[:5]:
                    t = sel.tokens_of(h.obj)
                    if used + t > budget:
                        break
                    ids.append(h.id)
                    used += t
            else:
                res = sel.select(q.text, hits, trace=Trace())
                ids, used = res.ids, res.tokens_used
                drops += sum(1 for e in res.trace.events if e.kind == "oneshot.drop")
                adds += sum(1 for c in res.chunks if c.origin.startswith("add:"))
                crops += sum(1 for c in res.chunks if c.cropped)
            secs.append(time.perf_counter() - start)
            rs.append(recall(ids, ds.qrels[q.id]))
            toks.append(used)
            nchunks.append(len(ids))
        n = len(queries)
        return {
            "variant": variant,
            "budget": budget,
            "n_queries": n,
            "recall": sum(rs) / n,
            "tokens_used": sum(toks) / n,
            "max_tokens_used": max(toks),
            "chunks": sum(nchunks) / n,
            "ms_per_query": 1000 * sum(secs) / n,
            "drops_per_query": drops / n,
            "adds_per_query": adds / n,
            "cropped_per_query": crops / n,
        }

    rows: list[dict[str, Any]] = []
    for b in args.budgets:
        for v in args.variants:
            rows.append(run(v, b, judged))
            print(json.dumps(rows[-1]), file=sys.stderr)
    crop_rows: list[dict[str, Any]] = []
    llm_info: dict[str, Any] = {}
    if args.crop_limit > 0:
        from retrievekit.core.llm.local import LocalLM

        tl = time.perf_counter()
        cached = CachedLLM(LocalLM.load(args.llm, device="cpu"))
        subset = judged[: args.crop_limit]
        for b in args.budgets:
            crop_rows.append(run("filter", b, subset) | {"subset": True})
            crop_rows.append(run("crop", b, subset, llm=cached) | {"subset": True})
            print(json.dumps(crop_rows[-1]), file=sys.stderr)
        llm_info = {
            "llm": args.llm,
            "unique_llm_calls": cached.calls,
            "llm_seconds": cached.seconds,
            "crop_wall_seconds": time.perf_counter() - tl,
        }

    label = {
        "top5": "(a) fixed top-5",
        "knapsack": "(b) knapsack",
        "filter": "(c) knapsack + filter",
        "crop": "(d) + cropping",
    }
    lines = [
        f"ObliQA {args.split}: {len(judged)} judged questions, pool = hybrid top-{args.pool}, tokens = {counter!r}",
        "",
        "| budget | method | questions | gold recall | tokens used (mean / max) | chunks | ms/query |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows + crop_rows:
        name = label[r["variant"]] + (" [subset]" if r.get("subset") else "")
        lines.append(
            f"| {r['budget']} | {name} | {r['n_queries']} | {r['recall']:.3f} | "
            f"{r['tokens_used']:.0f} / {r['max_tokens_used']} | {r['chunks']:.1f} | {r['ms_per_query']:.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    if llm_info:
        print(f"\ncropping: {llm_info}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"rows": rows, "crop_rows": crop_rows, "llm": llm_info, "table": table, "args": vars(args)}, indent=1
        ),
        encoding="utf-8",
    )
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
