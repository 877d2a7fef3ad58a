"""The CPU half of the GPU runs: BM25, dense and hybrid on SciFact dev, and the hybrid candidates the judges rerank.

Measured here, before staging, so the GPU machine needs neither Chroma nor the embedding model, and every judge on
the GPU reranks exactly the candidates the baselines were scored on.

Example:
    >>> out = cpu_baselines(data_dir, plan_for("full"), work_dir="runs/cache")  # doctest: +SKIP
    >>> sorted(out["baselines"])  # doctest: +SKIP
    ['bm25', 'dense', 'hybrid']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["BASELINES", "cpu_baselines", "summary"]

BASELINES = ("bm25", "dense", "hybrid")
METRICS = ("ndcg@10", "recall@100", "mrr@5", "hit@1", "hit@5", "recall@10")


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers of a :func:`~retrievekit.core.eval.runner.run_benchmark` result.

    Example:
        >>> summary({"n_queries": 2, "n_failed": 0, "metrics": {"ndcg@10": 0.5}, "cost": {"seconds_per_query": 1.0}})
        {'n_queries': 2, 'n_failed': 0, 'ndcg@10': 0.5, 'seconds_per_query': 1.0, 'llm_calls_per_query': None}
    """
    m, c = result["metrics"], result["cost"]
    return {
        "n_queries": result["n_queries"],
        "n_failed": result["n_failed"],
        **{k: m[k] for k in METRICS if k in m},
        "seconds_per_query": c.get("seconds_per_query"),
        "llm_calls_per_query": c.get("llm_calls_per_query"),
    }


def cpu_baselines(data_dir: str | Path, plan: dict[str, Any], *, work_dir: str | Path | None = None) -> dict[str, Any]:
    """``{"baselines": {name: summary}, "candidates": {qid: [doc ids]}}``: the three first stages on SciFact dev
    (the plan's ``limit`` queries), each to ``rerank_k`` hits; the candidates are hybrid's."""
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.eval.runner import run_benchmark

    ds = load_dataset("scifact", data_dir, split="dev", limit=plan["limit"])
    k = int(plan["judge"]["rerank_k"])
    baselines, candidates = {}, {}
    for name in BASELINES:
        res = run_benchmark(ds, name, k=k, work_dir=work_dir, keep_run=True, progress=False)
        baselines[name] = summary(res)
        if name == "hybrid":
            candidates = {qid: list(ids) for qid, ids in sorted(res["run"].items())}
    return {"baselines": baselines, "candidates": candidates}
