"""Self-Retrieval on SciFact dev beside BM25 and dense, on the same (optionally reduced) corpus.

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`). Trains (or reuses) a
Self-Retrieval model on the corpus (indexing data) plus the SciFact train queries, then
evaluates Hit@1, Hit@5, MRR@5 and nDCG@10 on dev queries for ``self-retrieval`` (document-level hits), ``bm25``
and ``dense``; writes JSON with training time, tokens/s and peak GPU memory (when on a GPU). Examples:

    # CPU smoke (minutes): 60 documents, 5 dev queries, 20 optimizer steps
    python benchmarks/self_retrieval_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --corpus-size 60 --limit 5 \\
        --max-steps 20 --batch-size 4 --model-dir runs/sr-smoke --out runs/sr-smoke.json
    # GPU acceptance run: full corpus, SmolLM2-135M, 3 epochs (the reference code's defaults otherwise)
    python benchmarks/self_retrieval_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --model-dir runs/sr-scifact \\
        --epochs 3 --lr 2e-5 --batch-size 16 --out runs/sr-scifact.json

``--corpus-size N`` keeps every gold document of the dev queries (and of the train queries while room is left)
plus seeded random distractors, N documents in all. A ``--model-dir`` that already holds a trained model for the
same corpus is reused (its manifest is checked); a checkpoint there is resumed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrievekit.core.cli.train_arguments import add_train_arguments, train_config_from_args
from retrievekit.core.cli.train_self_retrieval import reduced_corpus
from retrievekit.core.eval.datasets import Dataset, load_dataset
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.generative.self_retrieval import SelfRetrieval, SelfRetrievalConfig, train_self_retrieval
from retrievekit.core.index.baselines import build_dense
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.options import parse_options
from retrievekit.core.registry import MethodContext
from retrievekit.core.storage import write_json_atomic

#: Self-Retrieval's own counters of the passages it returned (``SelfRetrieval.checks``): every one is looked up in its
#: document; ``not_exact`` counts those that are not an exact span of it.
CHECKS = ("candidates", "not_exact")


def span_checks(sr: SelfRetrieval) -> Callable[[Any, Any, Any], dict[str, int]]:
    """A per-query hook for ``run_benchmark(extra=...)``: how many passages this query returned, and how many of them
    were not an exact span of their document (``SelfRetrieval.checks``, counted since the last query)."""
    seen = dict(sr.checks)

    def checks(query: Any, hits: Any, trace: Any) -> dict[str, int]:
        row = {k: sr.checks[k] - seen.get(k, 0) for k in CHECKS}
        seen.update(sr.checks)
        return row

    return checks


def span_totals(per_query: Any) -> dict[str, int]:
    """The :func:`span_checks` counts of a run's per-query records, added up."""
    return {k: sum(q.get("extra", {}).get(k, 0) for q in per_query) for k in CHECKS}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--data-dir",
        default=os.environ.get("RETRIEVEKIT_DATA_DIR"),
        required="RETRIEVEKIT_DATA_DIR" not in os.environ,
        help="benchmark data folder (docs/datasets.md; default: $RETRIEVEKIT_DATA_DIR)",
    )
    p.add_argument("--limit", type=int, default=None, help="dev queries")
    p.add_argument("--corpus-size", type=int, default=None)
    p.add_argument("--model-dir", required=True)
    p.add_argument("--base-model", default="smollm2")
    p.add_argument("--no-train-queries", action="store_true", help="indexing data only")
    p.add_argument("--records-dir", default=None, help="one resumable per-query records file per method here")
    add_train_arguments(p)
    p.add_argument("--option", action="append", default=[], help="SelfRetrievalConfig field key=value")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    dev = load_dataset("scifact", args.data_dir, "dev", limit=args.limit)
    train = load_dataset("scifact", args.data_dir, "train")
    pairs = (
        []
        if args.no_train_queries
        else [(q.text, d) for q in train.queries for d, g in sorted(train.qrels.get(q.id, {}).items()) if g > 0]
    )
    gold = {d for q in dev.queries for d, g in dev.qrels.get(q.id, {}).items() if g > 0}
    ids = {o.id for o in dev.corpus}
    if args.corpus_size:
        extra = sorted({d for _, d in pairs} - gold)
        random.Random(args.seed).shuffle(extra)
        room = max(0, args.corpus_size - len(gold)) // 2  # half the distractor room for train gold documents
        corpus = reduced_corpus(list(dev.corpus), (gold | set(extra[:room])) & ids, args.corpus_size, args.seed)
    else:
        corpus = list(dev.corpus)
    kept = {o.id for o in corpus}
    dev_pool = Dataset(dev.name, dev.split, corpus, dev.queries, dev.qrels, dev.metadata)
    pairs = [(q, d) for q, d in pairs if d in kept]
    print(f"corpus {len(corpus)} documents, {len(pairs)} train pairs, {len(dev.queries)} dev queries", file=sys.stderr)

    options = parse_options(args.option)
    cfg = SelfRetrievalConfig.from_options(options)
    model_dir = Path(args.model_dir)
    train_info: dict[str, Any] = {}
    if not (model_dir / "model").is_dir():
        tcfg = train_config_from_args(args, lora_learning_rate=None)
        res = train_self_retrieval(
            corpus, pairs=pairs, output_dir=model_dir, llm=args.base_model, config=cfg, train_config=tcfg
        )
        train_info = res.to_dict()
    sr = SelfRetrieval.from_model_dir(
        model_dir, corpus, SelfRetrievalConfig.from_options({**options, "hit_level": "document"})
    )
    if not train_info:
        train_info = dict(sr.manifest.train.get("result", sr.manifest.train))
    # built one after another, each just before its run: Self-Retrieval's records come first (the dense index takes
    # minutes to embed the corpus on a CPU)
    methods: dict[str, Callable[[], Any]] = {
        "self-retrieval": lambda: sr,
        "bm25": lambda: BM25Index.build(corpus),
        "dense": lambda: build_dense(MethodContext(corpus=corpus)),
    }
    results: dict[str, Any] = {}
    for name, build in methods.items():
        records = Path(args.records_dir) / f"{name}.jsonl" if args.records_dir else None
        r = run_benchmark(
            dev_pool,
            build(),
            label=name,
            k=10,
            records=records,
            progress=False,
            settings={"model_dir": str(model_dir)},
            extra=span_checks(sr) if name == "self-retrieval" else None,
            keep_run=name == "self-retrieval",
        )
        results[name] = {m: r["metrics"][m] for m in ("hit@1", "hit@5", "mrr@5", "ndcg@10")} | {
            "seconds_per_query": r["cost"]["seconds_per_query"],
            "llm_calls_per_query": r["cost"]["llm_calls_per_query"],
        }
        if name == "self-retrieval":
            results[name]["span_checks"] = span_totals(r["per_query"])
        print(f"{name:15s} " + " ".join(f"{k}={v}" for k, v in results[name].items()), file=sys.stderr)
    out = {
        "dataset": "scifact",
        "split": "dev",
        "corpus_documents": len(corpus),
        "queries": len(dev.queries),
        "train_pairs": len(pairs),
        "base_model": args.base_model,
        "model_dir": str(model_dir),
        "training": train_info,
        "results": results,
    }
    if args.out:
        write_json_atomic(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
