"""LATTICE on SciFact dev beside BM25, dense, a budget-matched flat LLM rerank and LlamaIndex's TreeIndex.

All LLM methods use the same local model (SmolLM2 by default). Prints a table of nDCG@10, Recall@100, LLM calls,
tokens and seconds per query, and writes JSON. Examples (CPU; ``--corpus-size`` keeps the tree build short):

    python benchmarks/lattice_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --limit 20 --corpus-size 500 \
        --tree-dir runs/lattice-scifact-500 --out runs/lattice-scifact-500.json
    python benchmarks/lattice_scifact.py --data-dir "$RETRIEVEKIT_DATA_DIR" --corpus-size 60 --limit 2   # smoke

* ``--corpus-size N`` restricts the corpus to every gold document of the selected queries plus seeded random
  distractors up to N documents (the full corpus has 5,183 abstracts; a CPU build summarises ~N/M groups).
* ``--tree-dir`` loads the bottom-up tree from there, or builds it there (resumable: a ``.build`` journal beside
  it keeps finished summaries across crashes).
* ``llm-rerank``: per query, the dense top candidates are scored by the same LLM in as many slates as LATTICE used
  for that query, each of LATTICE's mean slate size for that query (same calls, same slate size).
* ``treeindex``: ``llama_index.core.TreeIndex`` (``num_children`` = M, ``select_leaf``, branch factor 1) over the
  same documents with the same local model through a small LlamaIndex ``CustomLLM`` adapter defined here;
  skipped with a message when it cannot run (``--skip-treeindex`` skips it outright).
* ``--option key=value`` sets :class:`~retrievekit.core.lattice.config.LatticeConfig` /
  :class:`~retrievekit.core.lattice.config.TreeBuildConfig` fields (e.g. ``score_max=9``, ``num_iters=10``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrievekit.core.cli import parse_options, write_json_atomic
from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.metrics import evaluate
from retrievekit.core.index.baselines import build_dense
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.embeddings import MiniLMEmbedder
from retrievekit.core.lattice import FlatLLMReranker, LatticeConfig, create_lattice
from retrievekit.core.llm.local import LocalLM
from retrievekit.core.retriever import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject


def restrict_corpus(corpus: list[DataObject], gold: set[str], size: int | None, seed: int) -> list[DataObject]:
    """All gold documents plus seeded random distractors, ``size`` documents in all (corpus order kept)."""
    if size is None or size >= len(corpus):
        return corpus
    rest = [o.id for o in corpus if o.id not in gold]
    keep = set(gold) | set(random.Random(seed).sample(rest, max(0, min(len(rest), size - len(gold)))))
    return [o for o in corpus if o.id in keep]


def make_li_llm(lm: LocalLM, max_tokens: int) -> Any:
    """A LlamaIndex ``CustomLLM`` over a retrievekit ``LocalLM`` (counts calls and tokens)."""
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class LocalAdapter(CustomLLM):
        calls: int = 0
        prompt_tokens: int = 0
        completion_tokens: int = 0
        num_output: int = max_tokens

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(context_window=2048, num_output=self.num_output, model_name=lm.name)

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            c = lm.complete(prompt, max_tokens=self.num_output)
            self.calls += 1
            self.prompt_tokens += c.prompt_tokens
            self.completion_tokens += c.completion_tokens
            return CompletionResponse(text=c.text)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            yield self.complete(prompt, formatted=formatted)

    return LocalAdapter()


def run_method(name: str, queries: list[Any], search: Callable[[str, Trace], list[str]]) -> dict[str, Any]:
    """Run ``search`` over the queries; rankings, per-query traces and cost means."""
    run: dict[str, list[str]] = {}
    per_query = []
    for q in queries:
        trace = Trace()
        t0 = time.perf_counter()
        try:
            run[q.id] = search(q.text, trace)
            error = None
        except Exception as e:  # a failed query is an empty ranking, reported
            run[q.id] = []
            error = f"{type(e).__name__}: {e}"
        per_query.append(
            {
                "id": q.id,
                "seconds": time.perf_counter() - t0,
                "llm_calls": trace.llm_calls,
                "tokens": trace.prompt_tokens + trace.completion_tokens,
                "counters": dict(trace.counters),
                "error": error,
            }
        )
        print(f"  {name} {q.id}: {per_query[-1]['seconds']:.1f}s, {trace.llm_calls} calls", flush=True)
    n = max(1, len(queries))
    return {
        "run": run,
        "per_query": per_query,
        "llm_calls_per_query": sum(p["llm_calls"] for p in per_query) / n,
        "tokens_per_query": sum(p["tokens"] for p in per_query) / n,
        "seconds_per_query": sum(p["seconds"] for p in per_query) / n,
        "failed": sum(1 for p in per_query if p["error"]),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--limit", type=int, default=10, help="first N dev queries (default 10)")
    ap.add_argument("--corpus-size", type=int, default=None, help="gold + random distractors, N documents in all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tree-dir", default=None, help="load the tree from here, or build it here")
    ap.add_argument("--llm", default="smollm2", choices=["smollm2", "qwen0.5b"])
    ap.add_argument("--max-children", type=int, default=10, help="M (default 10)")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--methods", default="bm25,dense,lattice,llm-rerank,treeindex")
    ap.add_argument("--skip-treeindex", action="store_true")
    ap.add_argument("--out", default=None, help="result JSON")
    args = ap.parse_args(argv)

    ds = load_dataset("scifact", args.data_dir, "dev", limit=args.limit)
    gold = {d for q in ds.queries for d in ds.qrels.get(q.id, {})}
    corpus = restrict_corpus(list(ds.corpus), gold, args.corpus_size, args.seed)
    qrels = {q.id: ds.qrels.get(q.id, {}) for q in ds.queries}
    subset = f"{len(ds.queries)} dev queries, corpus {len(corpus)} of {len(ds.corpus)} (all gold + seeded distractors)"
    print(f"SciFact dev: {subset}", flush=True)
    methods = [m for m in args.methods.split(",") if m and not (m == "treeindex" and args.skip_treeindex)]

    options = {
        "max_children": args.max_children,
        "progress": True,
        "max_concurrency": 1,
        "score_max": 9,  # a 0-9 scale: fewer generated tokens for a small local model (override with --option)
        **parse_options(args.option),
    }
    lm = LocalLM.load(args.llm)
    emb = MiniLMEmbedder.default()
    results: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    lattice = create_lattice(corpus, llm=lm, embedder=emb, tree_dir=args.tree_dir, **options)
    build_s = time.perf_counter() - t0
    tree_info = {"stats": lattice.tree.stats(), "build_seconds": build_s, "meta": lattice.tree.meta}
    print(f"tree: {lattice.tree!r}, ready in {build_s:.1f}s (build meta: {lattice.tree.meta.get('seconds')}s)")

    if "bm25" in methods:
        bm25 = BM25Index.build(corpus)
        results["bm25"] = run_method("bm25", ds.queries, lambda q, t: [h.id for h in bm25.search(q, args.k, trace=t)])
    dense = build_dense(MethodContext(corpus=corpus))
    if "dense" in methods:
        results["dense"] = run_method(
            "dense", ds.queries, lambda q, t: [h.id for h in dense.search(q, args.k, trace=t)]
        )
    if "lattice" in methods:
        results["lattice"] = run_method(
            "lattice", ds.queries, lambda q, t: [h.id for h in lattice.search(q, args.k, trace=t)]
        )
    if "llm-rerank" in methods and "lattice" in results:
        budget = {p["id"]: p["counters"] for p in results["lattice"]["per_query"]}
        by_text = {q.text: q.id for q in ds.queries}
        scfg = LatticeConfig.from_options({k: v for k, v in options.items() if k in LatticeConfig.__dataclass_fields__})

        def rerank(q: str, t: Trace) -> list[str]:
            c = budget.get(by_text[q], {})
            slates = int(c.get("lattice.slates", 0))
            size = math.ceil(c.get("lattice.candidates_scored", 0) / slates) if slates else 0
            rr = FlatLLMReranker(dense, lm, scfg, candidates=max(1, slates * size), calls=slates)
            return [h.id for h in rr.search(q, args.k, trace=t)]

        results["llm-rerank"] = run_method("llm-rerank", ds.queries, rerank)
    if "treeindex" in methods:
        try:
            from llama_index.core import Document, TreeIndex

            li_llm = make_li_llm(lm, max_tokens=int(options.get("summary_max_tokens", 40)))
            t1 = time.perf_counter()
            docs = [Document(text=o.index_text()[:1000], id_=o.id) for o in corpus]
            index = TreeIndex.from_documents(docs, llm=li_llm, num_children=args.max_children, show_progress=True)
            build_calls = li_llm.calls
            print(f"TreeIndex built in {time.perf_counter() - t1:.1f}s with {build_calls} LLM calls", flush=True)
            retriever = index.as_retriever(retriever_mode="select_leaf", child_branch_factor=1, llm=li_llm)

            def tree_search(q: str, t: Trace) -> list[str]:
                before = (li_llm.calls, li_llm.prompt_tokens, li_llm.completion_tokens)
                nodes = retriever.retrieve(q)
                for _ in range(li_llm.calls - before[0]):
                    t.record_llm_call()
                t.prompt_tokens += li_llm.prompt_tokens - before[1]
                t.completion_tokens += li_llm.completion_tokens - before[2]
                return [n.node.ref_doc_id or n.node.node_id for n in nodes]

            results["treeindex"] = run_method("treeindex", ds.queries, tree_search)
            results["treeindex"]["build_llm_calls"] = build_calls
        except Exception as e:
            print(f"treeindex skipped: {type(e).__name__}: {e}", file=sys.stderr)

    table = ["| method | nDCG@10 | Recall@100 | LLM calls/q | tokens/q | s/q |", "|---|---|---|---|---|---|"]
    summary: dict[str, Any] = {}
    for name, r in results.items():
        m = evaluate(r["run"], qrels, ks=(10, 100))
        summary[name] = {
            "ndcg@10": m["ndcg@10"],
            "recall@100": m["recall@100"],
            "llm_calls_per_query": r["llm_calls_per_query"],
            "tokens_per_query": r["tokens_per_query"],
            "seconds_per_query": r["seconds_per_query"],
            "failed": r["failed"],
        }
        s = summary[name]
        table.append(
            f"| {name} | {s['ndcg@10']:.4f} | {s['recall@100']:.4f} | {s['llm_calls_per_query']:.1f} | "
            f"{s['tokens_per_query']:.0f} | {s['seconds_per_query']:.2f} |"
        )
    print(f"\nSciFact dev ({subset}); LLM {args.llm}; M={args.max_children}")
    print("\n".join(table))
    if args.out:
        out = {
            "dataset": "scifact/dev",
            "subset": subset,
            "llm": args.llm,
            "options": {k: v for k, v in options.items() if k != "progress"},
            "tree": tree_info,
            "summary": summary,
            "per_query": {n: r["per_query"] for n, r in results.items()},
            "runs": {n: r["run"] for n, r in results.items()},
        }
        print(f"wrote {write_json_atomic(json.loads(json.dumps(out, default=str)), Path(args.out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
