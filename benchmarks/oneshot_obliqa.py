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

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`): each (variant, budget) is a
retriever returning its selection as a set, so the harness's ``set_recall`` is the gold recall within the budget.

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

from retrievekit.core.eval.datasets import Dataset, load_dataset, rebuild_documents  # noqa: E402
from retrievekit.core.eval.runner import run_benchmark  # noqa: E402
from retrievekit.core.index.baselines import build_hybrid  # noqa: E402
from retrievekit.core.llm.protocol import JsonResult  # noqa: E402
from retrievekit.core.oneshot import DocumentCatalog, OneShotConfig, OneShotSelector  # noqa: E402
from retrievekit.core.oneshot.tokens import make_token_counter  # noqa: E402
from retrievekit.core.registry import MethodContext  # noqa: E402
from retrievekit.core.storage import write_json_atomic  # noqa: E402
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


class PoolSelection:
    """One variant at one budget as a retriever: the shared hybrid pool of the query, then the selection.

    Returns the selected chunks as a set (``returns_set``: the harness's ``set_recall`` is the gold recall within the
    budget); the trace counts ``tokens_used``, ``chunks``, ``drops``, ``adds`` and ``cropped``.
    """

    returns_set = True

    def __init__(self, variant: str, selector: OneShotSelector, pool: Any) -> None:
        self.variant, self.selector, self.pool = variant, selector, pool

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        trace = trace if trace is not None else Trace()
        hits = self.pool(query)
        if self.variant == "top5":
            chosen, used = [], 0
            for h in hits[:5]:
                t = self.selector.tokens_of(h.obj)
                if used + t > self.selector.config.budget:
                    break
                chosen.append(h)
                used += t
            trace.count("tokens_used", used)
            trace.count("chunks", len(chosen))
            return chosen
        res = self.selector.select(query, hits, trace=trace)
        trace.count("tokens_used", res.tokens_used)
        trace.count("chunks", len(res.chunks))
        trace.count("drops", sum(1 for e in res.trace.events if e.kind == "oneshot.drop"))
        trace.count("adds", sum(1 for c in res.chunks if c.origin.startswith("add:")))
        trace.count("cropped", sum(1 for c in res.chunks if c.cropped))
        return [
            ScoredHit(obj=c.obj, score=c.relevance if c.score is None else c.score, rank=r)
            for r, c in enumerate(res.chunks)
        ]


LABELS = {
    "top5": "(a) fixed top-5",
    "knapsack": "(b) knapsack",
    "filter": "(c) knapsack + filter",
    "crop": "(d) + cropping",
}


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"), help="default: $RETRIEVEKIT_DATA_DIR")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--limit", type=int, default=None, help="first N questions for (a)-(c) (default: all)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[2000, 4000, 8000])
    ap.add_argument("--pool", type=int, default=100, help="hybrid candidates per question (default 100)")
    ap.add_argument("--tokenizer", default="tiktoken", help="token counter: tiktoken (cl100k_base) or regex")
    ap.add_argument("--work-dir", default="runs/cache", help="where the hybrid indexes are cached")
    ap.add_argument("--crop-limit", type=int, default=30, help="questions for (d); 0 skips cropping")
    ap.add_argument("--crop-max-chunks", type=int, default=None, help="override OneShotConfig.crop_max_chunks")
    ap.add_argument("--llm", default="smollm2", help="local model for (d)")
    ap.add_argument("--score-normalization", default=None, help="override OneShotConfig.score_normalization")
    ap.add_argument("--variants", nargs="*", default=["top5", "knapsack", "filter"], help="which of (a)-(c) to run")
    ap.add_argument("--records-dir", default=None, help="one resumable per-query records file per run here")
    ap.add_argument("--out", default="runs/oneshot_obliqa.json")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    ds = load_dataset("obliqa", args.data_dir, split=args.split, limit=args.limit)
    judged = [q for q in ds.queries if any(g > 0 for g in ds.qrels.get(q.id, {}).values())]
    ds = Dataset(ds.name, ds.split, ds.corpus, judged, ds.qrels, ds.metadata)
    docs = rebuild_documents(ds.corpus)  # documents rebuilt from passages in order -> neighbour lookup
    table_of = {(doc, p.metadata.get("order")): p for doc, ps in docs.items() for p in ps}
    meta_path = Path(args.data_dir) / "obliqa" / "documents_meta.json"
    catalog = None
    if meta_path.is_file():
        catalog = DocumentCatalog.from_records(json.loads(meta_path.read_text(encoding="utf-8")))
    counter = make_token_counter(args.tokenizer)
    hybrid = build_hybrid(
        MethodContext(corpus=ds.corpus, work_dir=Path(args.work_dir), options={"candidate_k": max(100, args.pool)})
    )
    pools: dict[str, list[ScoredHit]] = {}

    def pool(query: str) -> list[ScoredHit]:
        if query not in pools:
            pools[query] = hybrid.search(query, args.pool)
        return pools[query]

    print(
        f"{len(judged)} judged questions, {len(ds.corpus)} passages in {len(docs)} documents; "
        f"index ready in {time.perf_counter() - t0:.0f}s",
        file=sys.stderr,
    )

    def run(variant: str, budget: int, data: Dataset, llm: Any = None) -> dict[str, Any]:
        extra = {"crop_max_chunks": args.crop_max_chunks} if args.crop_max_chunks is not None else {}
        if args.score_normalization:
            extra["score_normalization"] = args.score_normalization
        cfg = OneShotConfig(budget=budget, filter=variant in ("filter", "crop"), crop=variant == "crop", **extra)
        sel = OneShotSelector(
            cfg, catalog=catalog, lookup=lambda d, o: table_of.get((d, o)), llm=llm, token_counter=counter
        )
        name = f"{variant}@{budget}" + ("-subset" if len(data.queries) != len(judged) else "")
        records = Path(args.records_dir) / f"{name}.jsonl" if args.records_dir else None
        r = run_benchmark(
            data,
            PoolSelection(variant, sel, pool),
            label=name,
            k=args.pool,
            records=records,
            options={"tokenizer": args.tokenizer, **extra},
            keep_run=True,
            progress=False,
        )
        used = [rec["counters"].get("tokens_used", 0) for rec in r["per_query"]]
        r.update(variant=variant, budget=budget, recall=r["metrics"]["set_recall"], max_tokens_used=max(used))
        print(f"{name}: gold recall {r['recall']:.3f}", file=sys.stderr)
        return r

    rows = [run(v, b, ds) for b in args.budgets for v in args.variants]
    crop_rows: list[dict[str, Any]] = []
    llm_info: dict[str, Any] = {}
    if args.crop_limit > 0:
        from retrievekit.core.llm.local import LocalLM

        tl = time.perf_counter()
        cached = CachedLLM(LocalLM.load(args.llm, device="cpu"))
        subset = Dataset(ds.name, ds.split, ds.corpus, judged[: args.crop_limit], ds.qrels, ds.metadata)
        for b in args.budgets:
            crop_rows += [
                run("filter", b, subset) | {"subset": True},
                run("crop", b, subset, llm=cached) | {"subset": True},
            ]
        llm_info = {
            "llm": args.llm,
            "unique_llm_calls": cached.calls,
            "llm_seconds": cached.seconds,
            "crop_wall_seconds": time.perf_counter() - tl,
        }

    lines = [
        f"ObliQA {args.split}: {len(judged)} judged questions, pool = hybrid top-{args.pool}, tokens = {counter!r}",
        "",
        "| budget | method | questions | gold recall | tokens used (mean / max) | chunks | ms/query |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows + crop_rows:
        c = r.get("counters_per_query", {})
        lines.append(
            f"| {r['budget']} | {LABELS[r['variant']]}{' [subset]' if r.get('subset') else ''} | {r['n_queries']} | "
            f"{r['recall']:.3f} | {c.get('tokens_used', 0):.0f} / {r['max_tokens_used']:.0f} | "
            f"{c.get('chunks', 0):.1f} | {1000 * r['cost']['seconds_per_query']:.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    if llm_info:
        print(f"\ncropping: {llm_info}")
    slim = [{k: v for k, v in r.items() if k not in ("per_query", "run")} for r in rows + crop_rows]
    print(
        f"wrote {write_json_atomic({'rows': slim, 'llm': llm_info, 'table': table, 'args': vars(args)}, args.out)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
