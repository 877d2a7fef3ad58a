"""LATTICE on SciFact dev beside BM25, dense, a budget-matched flat LLM rerank and LlamaIndex's TreeIndex.

A recipe over the benchmark harness (:func:`retrievekit.core.eval.runner.run_benchmark`): every method runs through
it, with per-query records (``--records-dir``: one resumable file per method). All LLM methods use the same local
model (SmolLM2 by default). Prints a table and writes JSON. Examples (CPU; ``--corpus-size`` keeps the build short):

    python benchmarks/lattice_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --limit 20 --corpus-size 500 \
        --tree-dir runs/lattice-scifact-500 --out runs/lattice-scifact-500.json
    python benchmarks/lattice_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --corpus-size 60 --limit 2   # smoke

* ``--corpus-size N`` keeps every gold document of the selected queries plus seeded random distractors up to N
  documents (:meth:`~retrievekit.core.eval.datasets.Dataset.restrict_corpus`; the full corpus has 5,183 abstracts).
* ``--tree-dir`` loads the bottom-up tree from there, or builds it there (resumable: a ``.build`` journal beside
  it keeps finished summaries across crashes).
* ``llm-rerank``: per query, the dense top candidates are scored by the same LLM in as many slates as LATTICE used
  for that query, each of LATTICE's mean slate size for that query (same calls, same slate size).
* ``treeindex``: ``llama_index.core.TreeIndex`` (``num_children`` = M, ``select_leaf``, branch factor 1) over the
  same documents with the same local model through :class:`retrievekit.llama_index.LocalLlamaIndexLLM`; skipped
  with a message when it cannot run.
* ``--option key=value`` sets :class:`~retrievekit.core.lattice.config.LatticeConfig` /
  :class:`~retrievekit.core.lattice.config.TreeBuildConfig` fields (e.g. ``score_max=9``, ``num_iters=10``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.report import compare
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.index.baselines import build_dense
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.embeddings import MiniLMEmbedder
from retrievekit.core.lattice import FlatLLMReranker, LatticeConfig, create_lattice
from retrievekit.core.llm.local import LocalLM
from retrievekit.core.options import parse_options
from retrievekit.core.registry import MethodContext
from retrievekit.core.retriever import Retriever
from retrievekit.core.storage import write_json_atomic
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit


class BudgetMatchedRerank:
    """The flat LLM rerank of the dense top candidates with, per query, LATTICE's own slate count and size."""

    def __init__(self, first_stage: Retriever, lm: LocalLM, config: LatticeConfig, budgets: dict[str, Any]) -> None:
        self.first_stage, self.lm, self.config, self.budgets = first_stage, lm, config, budgets

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        c = self.budgets.get(query, {})
        slates = int(c.get("lattice.slates", 0))
        size = math.ceil(c.get("lattice.candidates_scored", 0) / slates) if slates else 0
        rr = FlatLLMReranker(self.first_stage, self.lm, self.config, candidates=max(1, slates * size), calls=slates)
        return rr.search(query, k, trace=trace)


class TreeIndexRetriever:
    """LlamaIndex's ``TreeIndex`` (select_leaf, branch factor 1) as a retriever whose trace counts its LLM use."""

    def __init__(self, corpus: list[Any], lm: LocalLM, max_children: int, max_tokens: int) -> None:
        from llama_index.core import Document, TreeIndex

        from retrievekit.llama_index import LocalLlamaIndexLLM

        self.llm = LocalLlamaIndexLLM(lm, max_new_tokens=max_tokens, context_window=2048)
        t0 = time.perf_counter()
        docs = [Document(text=o.index_text()[:1000], id_=o.id) for o in corpus]
        index = TreeIndex.from_documents(docs, llm=self.llm, num_children=max_children, show_progress=True)
        self.build_llm_calls = self.llm.usage.llm_calls
        print(f"TreeIndex built in {time.perf_counter() - t0:.1f}s with {self.build_llm_calls} LLM calls", flush=True)
        self.retriever = index.as_retriever(retriever_mode="select_leaf", child_branch_factor=1, llm=self.llm)
        self.by_id = {o.id: o for o in corpus}

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        self.llm.reset_usage()
        nodes = self.retriever.retrieve(query)
        if trace is not None:
            trace.merge(self.llm.usage)
        ids = [n.node.ref_doc_id or n.node.node_id for n in nodes]
        return [ScoredHit(obj=self.by_id[i], score=1.0 / (r + 1), rank=r) for r, i in enumerate(ids[:k])]


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    ap.add_argument("--limit", type=int, default=10, help="first N dev queries (default 10)")
    ap.add_argument("--corpus-size", type=int, default=None, help="gold + random distractors, N documents in all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tree-dir", default=None, help="load the tree from here, or build it here")
    ap.add_argument("--llm", default="smollm2", choices=["smollm2", "qwen0.5b"])
    ap.add_argument("--max-children", type=int, default=10, help="M (default 10)")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--methods", default="bm25,dense,lattice,llm-rerank,treeindex")
    ap.add_argument("--records-dir", default=None, help="one resumable per-query records file per method here")
    ap.add_argument("--out", default=None, help="result JSON")
    args = ap.parse_args(argv)

    ds = load_dataset("scifact", args.data_dir, "dev", limit=args.limit, corpus_size=args.corpus_size, seed=args.seed)
    subset = f"{len(ds.queries)} dev queries, corpus {len(ds.corpus)} (all gold + seeded distractors)"
    print(f"SciFact dev: {subset}", flush=True)
    methods = [m for m in args.methods.split(",") if m]
    options = {"max_children": args.max_children, "max_concurrency": 1, "score_max": 9, **parse_options(args.option)}
    lm = LocalLM.load(args.llm)
    t0 = time.perf_counter()
    emb = MiniLMEmbedder.default()
    lattice = create_lattice(ds.corpus, llm=lm, embedder=emb, tree_dir=args.tree_dir, progress=True, **options)
    print(f"tree: {lattice.tree!r}, ready in {time.perf_counter() - t0:.1f}s", flush=True)
    dense = build_dense(MethodContext(corpus=ds.corpus))

    def bench(name: str, retriever: Any) -> dict[str, Any]:
        records = Path(args.records_dir) / f"{name}.jsonl" if args.records_dir else None
        return run_benchmark(
            ds, retriever, label=name, k=args.k, llm=args.llm, options=options, records=records, keep_run=True
        )

    results: dict[str, dict[str, Any]] = {}
    for name, retriever in (("bm25", BM25Index.build(ds.corpus)), ("dense", dense), ("lattice", lattice)):
        if name in methods or (name == "lattice" and "llm-rerank" in methods):
            results[name] = bench(name, retriever)
    if "llm-rerank" in methods:
        text = {q.id: q.text for q in ds.queries}
        budgets = {text[r["qid"]]: r["counters"] for r in results["lattice"]["per_query"]}
        scfg = LatticeConfig.from_options({k: v for k, v in options.items() if k in LatticeConfig.__dataclass_fields__})
        results["llm-rerank"] = bench("llm-rerank", BudgetMatchedRerank(dense, lm, scfg, budgets))
    if "treeindex" in methods:
        try:
            tree_index = TreeIndexRetriever(
                ds.corpus, lm, args.max_children, int(options.get("summary_max_tokens", 40))
            )
            results["treeindex"] = bench("treeindex", tree_index)
            results["treeindex"]["build_llm_calls"] = tree_index.build_llm_calls
        except Exception as e:  # an optional comparison: say why it did not run
            print(f"treeindex skipped: {type(e).__name__}: {e}", file=sys.stderr)

    print(f"\nSciFact dev ({subset}); LLM {args.llm}; M={args.max_children}")
    print(compare(list(results.values()), metrics=["ndcg@10", "recall@100"]), end="")
    if args.out:
        out = {"subset": subset, "tree": {"stats": lattice.tree.stats(), "meta": lattice.tree.meta}, "results": results}
        print(f"wrote {write_json_atomic(out, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
