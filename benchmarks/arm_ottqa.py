"""ARM on OTT-QA dev (tables + linked passages) beside BM25 and dense top-k, with its two ablations.

Prints a table and writes JSON; asserts nothing about speed. Examples (CPU, SmolLM2):

    # smoke: 2 questions on a restricted pool (gold tables + their linked passages + seeded random distractors)
    python benchmarks/arm_ottqa.py --limit 2 --pool-size 300 --out runs/arm-ottqa-smoke.json
    # the real thing: the full pool (8,891 tables + 17,841 passages; the first dense build takes many minutes,
    # then it is cached in --work-dir and shared with the dense baseline)
    python benchmarks/arm_ottqa.py --limit 100 --out runs/arm-ottqa.json

Metrics (per question, then averaged):

* ``table_recall@k`` (k = 1, 5, 10): the gold table is among the first k hits (ARM: its ordered set).
* ``perfect_recall``: every gold object is retrieved: the gold table plus, when ``dev.traced.json``'s answer node
  is a passage, that passage (baselines: within the top ``--set-k`` hits; ARM: in its set). A question whose
  answer is a table cell (no passage answer node) has the table as its only gold object; ``perfect_recall_passage``
  averages only over questions with a gold passage, so both readings are shown.
* ``set_precision`` / ``set_recall`` / ``set_f1`` against the gold objects (baselines: their top ``--set-k``).
* ``set_size``, ``llm_calls`` and ``seconds`` per question.

``--option key=value`` sets :class:`~retrievekit.core.arm.config.ArmConfig` fields for the ARM variants. The
threshold and every other default are the reference's; nothing was tuned on these questions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from retrievekit.core.cli import parse_options
from retrievekit.core.eval.datasets import Dataset, load_dataset
from retrievekit.core.eval.metrics import set_precision_recall_f1
from retrievekit.core.retriever import MethodContext, build_method
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Table

METHODS = ["bm25", "dense", "arm", "arm-no-mip", "arm-no-verify"]


def restrict_pool(ds: Dataset, size: int, seed: int = 0) -> list[DataObject]:
    """Gold tables of the loaded questions + the passages their cells link to + seeded random distractors."""
    by_id = ds.objects_by_id()
    keep: list[str] = []
    for q in ds.queries:
        for oid in ds.qrels.get(q.id, {}):
            if oid in by_id and oid not in keep:
                keep.append(oid)
        t = by_id.get(str(q.metadata.get("gold_table_id")))
        if isinstance(t, Table):
            for link in t.metadata.get("cell_links") or ():
                if str(link[2]) in by_id and str(link[2]) not in keep:
                    keep.append(str(link[2]))
    rest = sorted(set(by_id) - set(keep))
    rng = random.Random(seed)
    keep += rng.sample(rest, max(0, min(len(rest), size - len(keep))))
    return [by_id[i] for i in sorted(keep)]


def score_question(
    ranked: list[str], gold: dict[str, int], gold_table: str | None, set_ids: list[str]
) -> dict[str, float]:
    """Per-question metrics (module docstring)."""
    out: dict[str, float] = {}
    for k in (1, 5, 10):
        out[f"table_recall@{k}"] = float(gold_table is not None and gold_table in ranked[:k])
    rel = {g for g, v in gold.items() if v > 0}
    got = set(set_ids)
    out["perfect_recall"] = float(bool(rel) and rel <= got)
    p, r, f = set_precision_recall_f1(got, gold)
    out.update(set_precision=p, set_recall=r, set_f1=f, set_size=float(len(got)))
    return out


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("RETRIEVEKIT_DATA_DIR"),
        required="RETRIEVEKIT_DATA_DIR" not in os.environ,
        help="benchmark data folder (docs/datasets.md; default: $RETRIEVEKIT_DATA_DIR)",
    )
    ap.add_argument("--split", default="dev")
    ap.add_argument("--limit", type=int, default=20, help="first N questions (default 20)")
    ap.add_argument("--pool-size", type=int, default=None, help="restricted pool size (default: the full pool)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    ap.add_argument("--llm", default="smollm2", help="local LM for the ARM variants (smollm2, qwen0.5b, none)")
    ap.add_argument("--k", type=int, default=10, help="hits asked of every method")
    ap.add_argument("--set-k", type=int, default=5, help="a baseline's top-N counted as its set (default 5)")
    ap.add_argument("--work-dir", default="runs/cache", help="where dense/BM25 indexes are cached")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="ArmConfig field")
    ap.add_argument("--out", default="runs/arm-ottqa.json")
    args = ap.parse_args()

    t0 = time.perf_counter()
    ds = load_dataset("ott_qa", args.data_dir, split=args.split, limit=args.limit)
    corpus = restrict_pool(ds, args.pool_size, args.seed) if args.pool_size else ds.corpus
    n_tables = sum(isinstance(o, Table) for o in corpus)
    print(
        f"ott_qa/{args.split}: {len(ds.queries)} questions, pool {len(corpus)} objects ({n_tables} tables, "
        f"{len(corpus) - n_tables} passages){' [restricted]' if args.pool_size else ''}; load {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    n_passage_q = sum(1 for q in ds.queries if q.metadata.get("gold_passages"))
    options = parse_options(args.option)
    results: dict[str, Any] = {}
    for method in args.methods:
        is_arm = method.startswith("arm")
        ctx = MethodContext(
            corpus=corpus,
            work_dir=Path(args.work_dir),
            llm=args.llm if is_arm else None,
            options=dict(options) if is_arm else {},
        )
        tb = time.perf_counter()
        retriever = build_method(method, ctx)
        build_s = time.perf_counter() - tb
        rows: list[dict[str, float]] = []
        events: dict[str, int] = {}
        for q in ds.queries:
            trace = Trace()
            ts = time.perf_counter()
            hits = retriever.search(q.text, args.k, trace=trace)
            secs = time.perf_counter() - ts
            ranked = [h.id for h in hits]
            set_ids = ranked if is_arm else ranked[: args.set_k]
            row = score_question(ranked, ds.qrels.get(q.id, {}), q.metadata.get("gold_table_id"), set_ids)
            row.update(
                llm_calls=float(trace.llm_calls), seconds=secs, has_passage=float(bool(q.metadata.get("gold_passages")))
            )
            rows.append(row)
            for e in trace.events:
                events[e.kind] = events.get(e.kind, 0) + 1
            if is_arm:
                stages = " ".join(
                    f"{k.split('.', 1)[1]}={v:.1f}" for k, v in trace.stage_seconds.items() if k.startswith("arm.")
                )
                print(
                    f"  {method} q{len(rows)}: {secs:.1f} s, {trace.llm_calls} LLM calls, set {len(set_ids)}; {stages}",
                    flush=True,
                )
        n = len(rows)
        summary = {key: sum(r[key] for r in rows) / n for key in rows[0] if key != "has_passage"}
        with_p = [r for r in rows if r["has_passage"]]
        summary["perfect_recall_passage"] = sum(r["perfect_recall"] for r in with_p) / len(with_p) if with_p else 0.0
        summary["build_seconds"] = build_s
        summary["events"] = events
        results[method] = summary
        print(f"{method}: done in {sum(r['seconds'] for r in rows):.1f} s (+ build {build_s:.1f} s)", flush=True)

    cols = [
        "table_recall@1",
        "table_recall@5",
        "table_recall@10",
        "perfect_recall",
        "perfect_recall_passage",
        "set_f1",
        "set_size",
        "llm_calls",
        "seconds",
    ]
    print(
        f"\n{len(ds.queries)} questions ({n_passage_q} with a gold answer passage); baselines' set = top-{args.set_k}"
    )
    widths = [max(len(c), 7) + 2 for c in cols]
    print(f"{'method':<15}" + "".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True)))
    for method, s in results.items():
        print(f"{method:<15}" + "".join(f"{s[c]:>{w}.3f}" for c, w in zip(cols, widths, strict=True)))
    out = {
        "dataset": "ott_qa",
        "split": args.split,
        "limit": args.limit,
        "pool_size": len(corpus),
        "restricted_pool": bool(args.pool_size),
        "seed": args.seed,
        "llm": args.llm,
        "k": args.k,
        "set_k": args.set_k,
        "options": options,
        "n_questions": len(ds.queries),
        "n_with_gold_passage": n_passage_q,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
