"""ARM on OTT-QA dev (tables + linked passages) beside BM25 and dense top-k, with its two ablations.

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`; ``--records-dir`` keeps a
resumable per-query file per method). Prints a table and writes JSON; asserts nothing about speed. Examples (CPU,
SmolLM2):

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
import os
from pathlib import Path
from typing import Any

from retrievekit.core.eval.datasets import Dataset, Query, load_dataset
from retrievekit.core.eval.metrics import set_precision_recall_f1
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.options import parse_options
from retrievekit.core.storage import write_json_atomic
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit, Table

METHODS = ["bm25", "dense", "arm", "arm-no-mip", "arm-no-verify"]
COLUMNS = [
    "table_recall@1",
    "table_recall@5",
    "table_recall@10",
    "perfect_recall",
    "perfect_recall_passage",
    "set_f1",
    "set_size",
]


def linked_passages(ds: Dataset) -> list[str]:
    """The passages the gold tables' cells link to (kept, with the gold objects, in a restricted pool)."""
    by_id = ds.objects_by_id()
    keep: list[str] = []
    for q in ds.queries:
        t = by_id.get(str(q.metadata.get("gold_table_id")))
        if isinstance(t, Table):
            keep += [str(link[2]) for link in t.metadata.get("cell_links") or () if str(link[2]) in by_id]
    return keep


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
    ap.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"), help="default: $RETRIEVEKIT_DATA_DIR")
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
    ap.add_argument("--records-dir", default=None, help="one resumable per-query records file per method here")
    ap.add_argument("--out", default="runs/arm-ottqa.json")
    args = ap.parse_args()

    ds = load_dataset("ott_qa", args.data_dir, split=args.split, limit=args.limit)
    ds = ds.restrict_corpus(args.pool_size, seed=args.seed, keep=linked_passages(ds))
    n_tables = sum(isinstance(o, Table) for o in ds.corpus)
    print(f"ott_qa/{args.split}: {len(ds.queries)} questions, pool {len(ds.corpus)} objects ({n_tables} tables)")
    n_passage_q = sum(1 for q in ds.queries if q.metadata.get("gold_passages"))
    options = parse_options(args.option)
    results: dict[str, Any] = {}
    for method in args.methods:
        is_arm = method.startswith("arm")

        def scores(q: Query, hits: list[ScoredHit], trace: Trace, is_arm: bool = is_arm) -> dict[str, float]:
            ranked = [h.id for h in hits]
            row = score_question(
                ranked,
                ds.qrels.get(q.id, {}),
                q.metadata.get("gold_table_id"),
                ranked if is_arm else ranked[: args.set_k],
            )
            return {**row, "has_passage": float(bool(q.metadata.get("gold_passages")))}

        r = run_benchmark(
            ds,
            method,
            k=args.k,
            llm=args.llm if is_arm else None,
            work_dir=args.work_dir,
            options=options if is_arm else {},
            extra=scores,
            keep_run=True,
            records=Path(args.records_dir) / f"{method}.jsonl" if args.records_dir else None,
            settings={"set_k": args.set_k, "pool_size": args.pool_size, "seed": args.seed},
        )
        with_p = [row["extra"] for row in r["per_query"] if row["extra"]["has_passage"]]
        r["extra_means"]["perfect_recall_passage"] = (
            sum(x["perfect_recall"] for x in with_p) / len(with_p) if with_p else 0.0
        )
        results[method] = {k: v for k, v in r.items() if k not in ("per_query", "run")}
        print(f"{method}: {r['cost']['seconds_per_query']:.1f} s/q (+ build {r['build_seconds']:.1f} s)", flush=True)

    print(
        f"\n{len(ds.queries)} questions ({n_passage_q} with a gold answer passage); baselines' set = top-{args.set_k}"
    )
    print("| method | " + " | ".join(COLUMNS) + " | LLM calls | s/q |")
    print("|---" * (len(COLUMNS) + 3) + "|")
    for method, s in results.items():
        cells = [f"{s['extra_means'][c]:.3f}" for c in COLUMNS]
        print(
            f"| {method} | "
            + " | ".join(cells)
            + f" | {s['cost']['llm_calls_per_query']:.1f} | {s['cost']['seconds_per_query']:.2f} |"
        )
    out = {
        "dataset": "ott_qa",
        "split": args.split,
        "pool_size": len(ds.corpus),
        "n_questions": len(ds.queries),
        "n_with_gold_passage": n_passage_q,
        "set_k": args.set_k,
        "results": results,
    }
    print(f"wrote {write_json_atomic(out, args.out)}")


if __name__ == "__main__":
    main()
