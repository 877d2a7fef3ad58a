"""MindRef quality on SciFact / HotpotQA with a local LM, with the "real title / exact span" check on every query.

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`). Prints numbers; asserts
nothing about speed. Examples (CPU, SmolLM2; the query limit keeps a run to minutes):

    python benchmarks/mindref_bench.py scifact --data-dir "$RETRIEVEKIT_DATA_DIR" --limit 12 --out runs/mindref-scifact.json
    python benchmarks/mindref_bench.py hotpotqa --data-dir "$RETRIEVEKIT_DATA_DIR" --stage1-only --limit 40 \
        --out runs/mindref-hotpot-stage1.json

A long run: ``--records runs/x.jsonl`` (one line per query; a rerun resumes), ``--shard K/N`` (one process per
core on the same file; a last run without ``--shard`` aggregates), ``--diagnose`` (search vs model errors of stage 1,
:func:`retrievekit.core.generative.mindref_checks.diagnose_miss`).

``--model-dir DIR`` uses a trained Self-Retrieval model (e.g. the GPU run's, put together here with
``python benchmarks/gpu/runner.py join --export sr-export ...``) as MindRef's model instead of ``--llm``.

``scifact`` reports Hit@1, Hit@5, MRR@5 and nDCG@10 of the full pipeline (document-level qrels);
``hotpotqa`` (split ``fullwiki``: ``hotpotqa_dev_fullwiki500``) reports gold-title recall@2 of stage 1.
``--option key=value`` sets any :class:`~retrievekit.core.generative.mindref.MindRefConfig` field (the paper's
output, ``widen_to_k=false``, unless given).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from retrievekit.core.eval.datasets import Query, load_dataset
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.generative.mindref import MindRef, MindRefConfig
from retrievekit.core.generative.mindref_checks import diagnose_miss, hit_violations, title_violations
from retrievekit.core.llm.local import LocalLM
from retrievekit.core.options import parse_options
from retrievekit.core.storage import write_json_atomic
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit


class TitleStage:
    """MindRef's stage 1 as a retriever: the recalled titles' documents, best title first."""

    def __init__(self, mr: MindRef) -> None:
        self.mr = mr

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        titles = self.mr.recall_titles(query, trace=trace)
        self.last_titles = titles
        docs = [(d, t.score) for t in titles for d in t.documents][:k]
        return [ScoredHit(obj=self.mr.corpus[d], score=s, rank=r) for r, (d, s) in enumerate(docs)]


def _model(args: argparse.Namespace) -> tuple[LocalLM, str]:
    """MindRef's model and its name in the records: ``--model-dir`` (a trained Self-Retrieval model), else ``--llm``."""
    if not args.model_dir:
        return LocalLM.load(args.llm), args.llm
    from retrievekit.core.generative.self_retrieval.method import KIND
    from retrievekit.core.training import load_trained_model

    model, tokenizer, manifest = load_trained_model(args.model_dir, kind=KIND)
    name = f"{manifest.base_model} (self-retrieval, {(manifest.corpus_hash or '?')[:12]})"
    return LocalLM(model, tokenizer, name=name), name


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", choices=["scifact", "hotpotqa"])
    ap.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    ap.add_argument("--split", default=None, help="default: dev (scifact), fullwiki (hotpotqa)")
    ap.add_argument("--limit", type=int, default=None, help="first N queries")
    ap.add_argument("--llm", default="smollm2", choices=["smollm2", "qwen0.5b"])
    ap.add_argument("--model-dir", default=None, help="a trained Self-Retrieval model folder, instead of --llm")
    ap.add_argument("--stage1-only", action="store_true", help="titles only (gold-title recall@2)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default=None)
    ap.add_argument("--diagnose", action="store_true", help="search vs model errors of each miss (stage 1)")
    ap.add_argument("--records", default=None, metavar="JSONL", help="per-query records; a rerun resumes")
    ap.add_argument("--shard", default=None, metavar="K/N", help="every N-th query from K (0-based)")
    args = ap.parse_args()

    split = args.split or ("dev" if args.dataset == "scifact" else "fullwiki")
    ds = load_dataset(args.dataset, args.data_dir, split=split, limit=args.limit)
    config = MindRefConfig.from_options({"widen_to_k": False, **parse_options(args.option)})
    lm, llm_name = _model(args)
    mr = MindRef(ds.corpus, lm, config)
    print(f"{ds.name}/{split}: {len(ds.corpus)} documents, {len(mr.trie)} distinct titles", flush=True)
    retriever: Any = TitleStage(mr) if args.stage1_only else mr

    def checks(query: Query, hits: list[ScoredHit], trace: Trace) -> dict[str, Any]:
        if args.stage1_only:
            titles = retriever.last_titles
            best = max((t.score for t in titles), default=float("-inf"))
            gold = ds.qrels.get(query.id, {})
            row: dict[str, Any] = {
                "title_not_real": title_violations(mr, titles),
                "gold_title_recall@2": len({h.id for h in hits[:2]} & set(gold)) / max(len(gold), 1),
            }
        else:
            best = max((h.obj.metadata["title_score"] for h in hits), default=float("-inf"))
            row = hit_violations(mr, hits)
        if args.diagnose:
            row["stage1"] = diagnose_miss(mr, query.text, [h.id for h in hits], ds.qrels.get(query.id, {}), best)
        return row

    result = run_benchmark(
        ds,
        retriever,
        label="mindref-titles" if args.stage1_only else "mindref",
        k=10,
        llm=llm_name,  # the retriever is ready: this names its model in the records
        options=config.__dict__,
        extra=checks,
        records=args.records,
        shard=args.shard,
        settings={"diagnose": args.diagnose, "stage1_only": args.stage1_only},
        keep_run=True,
    )
    outcomes: dict[str, int] = {}
    for row in result["per_query"]:
        stage1 = row["extra"].get("stage1")
        if stage1:
            outcomes[stage1] = outcomes.get(stage1, 0) + 1
    result["stage1_outcomes"] = dict(sorted(outcomes.items()))
    result["checks"] = mr.checks
    summary = {k: v for k, v in result.items() if k not in ("per_query", "run")}
    print(json.dumps(summary, indent=2, default=str))
    if args.out:
        print(f"wrote {write_json_atomic(result, args.out)}")


if __name__ == "__main__":
    main()
