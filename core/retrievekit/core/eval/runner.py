"""Run one registered method over one dataset and summarise quality and cost as a JSON-ready dict.

Examples:
    >>> from retrievekit.core.eval.datasets import Dataset, Query
    >>> from retrievekit.core.retriever import register_method
    >>> from retrievekit.core.types import Passage, ScoredHit
    >>> class First:
    ...     def __init__(self, ctx): self.corpus = list(ctx.corpus)
    ...     def search(self, query, k=10, *, trace=None):
    ...         return [ScoredHit(obj=o, score=1.0, rank=i) for i, o in enumerate(self.corpus[:k])]
    >>> register_method("doc-first", First)
    >>> ds = Dataset("toy", "dev", [Passage(id="a", text="x")], [Query("q", "x?")], {"q": {"a": 1}})
    >>> r = run_benchmark(ds, "doc-first", k=10, progress=False)
    >>> r["metrics"]["ndcg@10"], r["n_queries"]
    (1.0, 1)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from retrievekit.core.errors import InvalidInputError, RetrieveKitError
from retrievekit.core.eval.datasets import Dataset
from retrievekit.core.eval.metrics import DEFAULT_KS, evaluate, evaluate_sets
from retrievekit.core.retriever import MethodContext, build_method, check_k
from retrievekit.core.trace import Trace

__all__ = ["COST_KEYS", "run_benchmark"]

COST_KEYS: tuple[str, ...] = (
    "llm_calls_per_query",
    "prompt_tokens_per_query",
    "completion_tokens_per_query",
    "seconds_per_query",
)
"""The keys of the ``cost`` block of a result."""


def run_benchmark(
    dataset: Dataset,
    method_name: str,
    *,
    k: int = 100,
    llm: str | None = None,
    work_dir: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
    ks: Iterable[int] = DEFAULT_KS,
    keep_run: bool = False,
) -> dict[str, Any]:
    """Build ``method_name`` over ``dataset.corpus`` once, search every query, and score the rankings.

    Returns a JSON-safe dict::

        {"dataset", "split", "method", "n_queries",
         "metrics": {"ndcg@10": ..., "recall@100": ..., "mrr@5": ..., ...},
         "cost": {"llm_calls_per_query", "prompt_tokens_per_query",
                  "completion_tokens_per_query", "seconds_per_query"},
         "build_seconds", "k", "n_failed", "events_per_query",
         "counters_per_query": {...}}  # only when the method's traces set counters

    Metrics are computed at every cut-off in ``ks`` on the (at most ``k``)
    hits returned, so a cut-off above ``k`` equals the value at ``k``. A
    retriever whose class sets ``returns_set = True`` also gets
    ``set_precision/set_recall/set_f1``. Each query gets a fresh
    :class:`~retrievekit.core.trace.Trace`; ``seconds_per_query`` is the mean
    wall time of ``search`` calls. A query whose search raises a
    :class:`~retrievekit.core.errors.RetrieveKitError` counts as an empty
    ranking and in ``n_failed`` (first messages in ``failures``); other
    exceptions propagate. ``keep_run=True`` adds ``"run": {qid: [ids]}``.

    Examples:
        >>> from retrievekit.core.eval.datasets import Dataset
        >>> run_benchmark(Dataset("t", "dev", [], [], {}), "bm25", k=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: k must be a positive integer, got 0
    """
    check_k(k)
    if not dataset.queries:
        raise InvalidInputError(f"dataset {dataset.name}/{dataset.split} has no queries to run")
    ctx = MethodContext(
        corpus=dataset.corpus,
        work_dir=Path(work_dir) if work_dir is not None else None,
        llm=llm,
        options=dict(options or {}),
    )
    t0 = time.perf_counter()
    retriever = build_method(method_name, ctx)
    build_seconds = time.perf_counter() - t0

    run: dict[str, list[str]] = {}
    seconds: list[float] = []
    llm_calls = prompt_tokens = completion_tokens = events = 0
    counters: dict[str, float] = {}
    failures: list[str] = []
    show = progress and sys.stderr.isatty()
    bar = tqdm(dataset.queries, desc=f"{method_name}@{dataset.name}", unit="q", disable=not show)
    for query in bar:
        trace = Trace()
        start = time.perf_counter()
        try:
            hits = retriever.search(query.text, k, trace=trace)
        except RetrieveKitError as e:
            hits = []
            failures.append(f"{query.id}: {type(e).__name__}: {e}")
        seconds.append(time.perf_counter() - start)
        run[query.id] = [h.id for h in hits[:k]]
        llm_calls += trace.llm_calls
        prompt_tokens += trace.prompt_tokens
        completion_tokens += trace.completion_tokens
        events += len(trace.events)
        for name, value in trace.counters.items():
            counters[name] = counters.get(name, 0) + value
    bar.close()

    n = len(dataset.queries)
    metrics = evaluate(run, dataset.qrels, ks=ks)
    if getattr(retriever, "returns_set", False):
        metrics.update(evaluate_sets(run, dataset.qrels))
    result: dict[str, Any] = {
        "dataset": dataset.name,
        "split": dataset.split,
        "method": method_name,
        "n_queries": n,
        "metrics": metrics,
        "cost": {
            "llm_calls_per_query": llm_calls / n,
            "prompt_tokens_per_query": prompt_tokens / n,
            "completion_tokens_per_query": completion_tokens / n,
            "seconds_per_query": sum(seconds) / n,
        },
        "build_seconds": build_seconds,
        "k": k,
        "n_judged_queries": sum(1 for q in dataset.queries if any(g > 0 for g in dataset.qrels.get(q.id, {}).values())),
        "n_failed": len(failures),
        "events_per_query": events / n,
        "llm": llm,
        "options": json.loads(json.dumps(dict(options or {}), default=str)),
    }
    if counters:
        result["counters_per_query"] = {name: total / n for name, total in sorted(counters.items())}
    if failures:
        result["failures"] = failures[:20]
    if keep_run:
        result["run"] = run
    return result
