"""The benchmark harness: run a method (a registered name or a ready retriever) over a dataset and score it.

One harness serves ``retrievekit bench`` and every script in ``benchmarks/``. It keeps a :class:`~retrievekit.core.eval.records.QueryRecord`
per query; with ``records=FILE.jsonl`` each record is written as it finishes, a rerun resumes, and ``shard="K/N"``
runs every N-th query so one process per core can share one file (a last run without ``shard`` aggregates them).

Examples:
    >>> from retrievekit.core.eval.datasets import Dataset, Query
    >>> from retrievekit.core.registry import register_method
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
    >>> run_benchmark(ds, First(type("Ctx", (), {"corpus": ds.corpus})), label="first", progress=False)["method"]
    'first'
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

import retrievekit.core.eval.records as rec
from retrievekit.core.checks import check_k
from retrievekit.core.errors import InvalidInputError, RetrieveKitError
from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.fallbacks import fallback_block, fallback_warnings, stage_counts
from retrievekit.core.eval.judge_accuracy import judge_block, query_pairs
from retrievekit.core.eval.metrics import DEFAULT_KS, evaluate, evaluate_sets, evaluate_table_recall
from retrievekit.core.eval.records import QueryRecord, RecordFile, parse_shard
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.llm.judge_hooks import describe_judge, parse_oracle
from retrievekit.core.llm.resolve import llm_label
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.renamed import Counters, counter_name, method_options
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit

__all__ = ["COST_KEYS", "QueryExtra", "run_benchmark", "search_one", "summarize"]

COST_KEYS: tuple[str, ...] = (
    "llm_calls_per_query",
    "llm_rounds_per_query",
    "prompt_tokens_per_query",
    "completion_tokens_per_query",
    "seconds_per_query",
)
"""The keys of the ``cost`` block of a result."""


QueryExtra = Callable[[Query, list[ScoredHit], Trace], Mapping[str, Any]]
"""A benchmark's per-query hook: ``(query, hits, trace) -> JSON-safe fields`` kept in the record's ``extra``."""


def search_one(
    retriever: Retriever,
    query: Query,
    k: int,
    extra: QueryExtra | None = None,
    *,
    gold: Mapping[str, float] | None = None,
) -> QueryRecord:
    """Search one query with a fresh trace and record the ranking and its cost.

    A :class:`~retrievekit.core.errors.RetrieveKitError` becomes an empty ranking with ``error`` set; other
    exceptions propagate. ``extra`` (if given) adds per-query fields. With ``gold`` (the query's qrels), the pairs a
    relevance judge scored are labelled and kept in ``judged``
    (:func:`~retrievekit.core.eval.judge_accuracy.query_pairs`).

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> idx = BM25Index.build([Passage(id="a", text="apples are red")])
        >>> search_one(idx, Query("q", "red apples"), 5).ids
        ['a']
    """
    trace = Trace()
    start = time.perf_counter()
    error = None
    try:
        hits = retriever.search(query.text, k, trace=trace)
    except RetrieveKitError as e:
        hits, error = [], f"{type(e).__name__}: {e}"
    seconds = time.perf_counter() - start
    record = QueryRecord(
        qid=query.id,
        ids=[h.id for h in hits[:k]],
        scores=[float(h.score) for h in hits[:k]],
        seconds=seconds,
        llm_calls=trace.llm_calls,
        llm_rounds=trace.llm_rounds,
        stages=stage_counts(trace),
        prompt_tokens=trace.prompt_tokens,
        completion_tokens=trace.completion_tokens,
        events=len(trace.events),
        counters={name: float(v) for name, v in trace.counters.items()},
        error=error,
    )
    if extra is not None:
        record.extra = json.loads(json.dumps(dict(extra(query, hits, trace)), default=str))
    if gold is not None and trace.judged:
        record.judged = query_pairs(trace.judged, gold, returned=record.ids)
    return record


def summarize(
    records: Iterable[QueryRecord],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    ks: Iterable[int] = DEFAULT_KS,
    returns_set: bool = False,
    judge: Mapping[str, Any] | None = None,
    gold_tables: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Metrics and mean cost of a set of query records (the body of a benchmark result).

    Returns ``{"n_queries", "metrics", "cost", "n_failed", "events_per_query"}`` plus ``fallbacks`` (each stage's
    fallback rate, :func:`~retrievekit.core.eval.fallbacks.fallback_block`) and ``warnings`` (the stages above
    :data:`~retrievekit.core.eval.fallbacks.FALLBACK_WARN_RATE`) when a stage called an LLM or fell back,
    ``counters_per_query`` and
    ``extra_means`` (the mean of each numeric ``extra`` field) when any record has them, ``failures`` (the first
    20 error messages) when a query failed, and ``judge`` (the relevance judge's accuracy on the pairs it scored,
    :func:`~retrievekit.core.eval.judge_accuracy.judge_block`) when a judge scored pairs or ``judge`` describes one
    the run was given. Metrics cover the judged queries among ``records``; ``gold_tables`` (``{qid: table id}``, OTT-QA)
    adds ``table_recall@1/5/10`` over the records' queries that have one.

    Examples:
        >>> recs = [QueryRecord(qid="q", ids=["a"], seconds=2.0, llm_calls=1)]
        >>> s = summarize(recs, {"q": {"a": 1}}, ks=(1,))
        >>> s["metrics"]["hit@1"], s["cost"]["llm_calls_per_query"]
        (1.0, 1.0)
    """
    recs = list(records)
    n = max(len(recs), 1)
    run = {r.qid: r.ids for r in recs}
    sub = {r.qid: qrels.get(r.qid, {}) for r in recs}
    metrics = evaluate(run, sub, ks=ks)
    if returns_set:
        metrics.update(evaluate_sets(run, sub))
    tables = {r.qid: gold_tables[r.qid] for r in recs if gold_tables and gold_tables.get(r.qid)}
    if tables:
        metrics.update(evaluate_table_recall(run, tables))
    counters: dict[str, float] = {}
    extras: dict[str, list[float]] = {}
    for r in recs:
        for name, value in r.counters.items():
            name = counter_name(name, warn=False)  # records stored before a counter's rename
            counters[name] = counters.get(name, 0.0) + value
        for name, value in r.extra.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                extras.setdefault(name, []).append(float(value))
    out: dict[str, Any] = {
        "n_queries": len(recs),
        "metrics": metrics,
        "cost": {
            "llm_calls_per_query": sum(r.llm_calls for r in recs) / n,
            "llm_rounds_per_query": sum(r.llm_rounds for r in recs) / n,
            "prompt_tokens_per_query": sum(r.prompt_tokens for r in recs) / n,
            "completion_tokens_per_query": sum(r.completion_tokens for r in recs) / n,
            "seconds_per_query": sum(r.seconds for r in recs) / n,
        },
        "n_judged_queries": sum(1 for r in recs if any(g > 0 for g in qrels.get(r.qid, {}).values())),
        "n_failed": sum(1 for r in recs if r.error),
        "events_per_query": sum(r.events for r in recs) / n,
    }
    if counters:
        out["counters_per_query"] = Counters({name: total / n for name, total in sorted(counters.items())})
    if extras:
        out["extra_means"] = {name: sum(v) / len(v) for name, v in sorted(extras.items())}
    fallbacks = fallback_block(r.stages for r in recs)
    if fallbacks is not None:
        out["fallbacks"] = fallbacks
        warned = fallback_warnings(fallbacks)
        if warned:
            out["warnings"] = warned
    failures = [f"{r.qid}: {r.error}" for r in recs if r.error]
    if failures:
        out["failures"] = failures[:20]
    block = judge_block([r.judged for r in recs if r.judged], len(recs), judge)
    if block is not None:
        block["cost_per_query"] = judge_cost(recs, out["cost"])
        out["judge"] = block
    return out


def judge_cost(recs: Sequence[QueryRecord], cost: Mapping[str, float]) -> dict[str, float]:
    """The judge block's ``cost_per_query``: the run's LLM calls and tokens per query, and those of judge-rerank's
    ``judge`` stage (seconds stay in the result's ``cost``: they differ between a run and its resumed copy).

    Examples:
        >>> recs = [QueryRecord(qid="q", llm_calls=3, stages={"judge": {"llm_calls": 3, "fallbacks": 0}})]
        >>> judge_cost(recs, {"llm_calls_per_query": 3.0, "prompt_tokens_per_query": 90.0,
        ...                   "completion_tokens_per_query": 3.0})
        {'llm_calls': 3.0, 'judge_stage_llm_calls': 3.0, 'tokens': 93.0}
    """
    stage = [r.stages.get("judge", {}).get("llm_calls", 0) for r in recs]
    return {
        "llm_calls": float(cost["llm_calls_per_query"]),
        "judge_stage_llm_calls": sum(stage) / max(len(recs), 1),
        "tokens": float(cost["prompt_tokens_per_query"]) + float(cost["completion_tokens_per_query"]),
    }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def run_benchmark(
    dataset: Dataset,
    method: str | Retriever,
    *,
    k: int = 100,
    work_dir: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
    ks: Iterable[int] = DEFAULT_KS,
    keep_run: bool = False,
    records: str | Path | None = None,
    shard: str | tuple[int, int] | None = None,
    label: str | None = None,
    extra: QueryExtra | None = None,
    settings: Mapping[str, Any] | None = None,
    llm: Any = None,
    shard_spec: str | tuple[int, int] | None = None,
    embedder: Any = None,
) -> dict[str, Any]:
    """Run every query of ``dataset`` through ``method`` (built once over ``dataset.corpus``) and score the rankings.

    Args:
        dataset: corpus, queries and qrels (:func:`~retrievekit.core.eval.datasets.load_dataset`).
        method: a registered method name (built with ``llm``, ``work_dir`` and ``options``) or a ready retriever
            (anything with ``search(query, k, trace=...)``; then ``label`` names it in the result).
        llm: the methods' model (``--llm``): a name, a served LLM (``CLIENT:MODEL@URL`` or a
            :class:`~retrievekit.core.llm.served_spec.ServedLLMSpec`), ``"none"``, a model object, or None (each
            method's default); see :func:`~retrievekit.core.llm.resolve.resolve_llm`.
        k: hits per query; metrics at every cut-off in ``ks`` on those hits (one above ``k`` equals the value at k).
        keep_run: add ``"run": {qid: [ids]}`` and ``"per_query": [record, ...]`` to the result.
        records: a JSONL file of per-query records (:class:`~retrievekit.core.eval.records.RecordFile`): appended
            as queries finish, skipped on a rerun (lines it does not use are listed in ``records_rejected``).
        shard: ``"K/N"``: run only queries ``K, K+N, ...`` (one process per core sharing ``records``; the result
            covers the shard; a last run without it aggregates and runs what is missing). Formerly ``shard_spec``.
        extra: a per-query hook whose JSON-safe fields land in each record's ``extra`` (numbers: ``extra_means``).
        settings: more JSON-safe settings that identify the run in the records file (e.g. a diagnosis switch).
        embedder: the embedding model of the methods that embed (``as_embedder``'s input; None: all-MiniLM-L6-v2).

    Returns a JSON-safe dict: ``dataset``, ``split``, ``method``, ``n_queries``, ``metrics`` (``ndcg@10``,
    ``recall@100``, ``mrr@5``, ``hit@1``, ...), ``cost`` (:data:`COST_KEYS`), ``build_seconds``, ``k``,
    ``n_failed``, ``events_per_query``, ``llm`` (the name ``llm`` gives, None for a model object or the default), ``options``, and when present
    ``counters_per_query``, ``extra_means``, ``failures``, ``judge`` (its accuracy; ``options={"judge_dir":
    "oracle:S"}`` gives methods the gold-label oracle) and ``shard``. A retriever whose class sets
    ``returns_set = True`` also gets ``set_precision/set_recall/set_f1/set_perfect_recall/set_size``; a dataset whose
    queries name a gold table (OTT-QA's ``gold_table_id``) also gets ``table_recall@1/5/10``. A query whose search
    raises a :class:`~retrievekit.core.errors.RetrieveKitError` counts as an empty ranking and in ``n_failed``.

    Examples:
        >>> from retrievekit.core.eval.datasets import Dataset
        >>> run_benchmark(Dataset("t", "dev", [], [], {}), "bm25", k=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: k must be a positive integer, got 0
    """
    recorded_llm = llm_label(llm, default=None)
    check_k(k)
    if not dataset.queries:
        raise InvalidInputError(f"dataset {dataset.name}/{dataset.split} has no queries to run")
    name = method if isinstance(method, str) else (label or type(method).__name__)
    shard = _shard_argument(shard, shard_spec)
    embedder = as_embedder(embedder, where="run_benchmark")  # its name identifies the run in the records
    run_settings = _run_settings(dataset, name, k, recorded_llm, options, settings, embedder)
    log = RecordFile(records, run_settings) if records is not None else None
    done = log.done() if log is not None else {}
    todo = [q for q in rec.shard(dataset.queries, shard) if q.id not in done]
    retriever, oracle, build_seconds = _timed_build(method, dataset, llm, work_dir, options, embedder)
    desc, show = f"{name}@{dataset.name}", progress and sys.stderr.isatty()
    with log.writing(shard) if log else contextlib.nullcontext():  # a second unsharded writer is refused
        fresh = _run_queries(retriever, todo, k, extra, log, desc=desc, progress=show, qrels=dataset.qrels)
    mine = {**done, **fresh}
    chosen = [mine[q.id] for q in rec.shard(dataset.queries, shard) if q.id in mine]
    is_set = bool(getattr(retriever, "returns_set", False))
    result: dict[str, Any] = {
        **{key: run_settings[key] for key in ("dataset", "split", "method")},
        **summarize(chosen, dataset.qrels, ks=ks, returns_set=is_set, judge=oracle, gold_tables=_gold_tables(dataset)),
        "build_seconds": build_seconds,
        **{key: run_settings[key] for key in ("k", "llm", "options")},
        "n_resumed": len(chosen) - len(fresh),
    }
    return _with_run(result, chosen, shard, keep_run, log)


def _shard_argument(
    shard: str | tuple[int, int] | None, shard_spec: str | tuple[int, int] | None
) -> tuple[int, int] | None:
    """``run_benchmark``'s shard, parsed; ``shard_spec`` (its old name) is answered with a ``DeprecationWarning``
    until the next release."""
    if shard_spec is not None:
        warnings.warn("run_benchmark(shard_spec=...) is now shard=...", DeprecationWarning, stacklevel=3)
        shard = shard if shard is not None else shard_spec
    return parse_shard(shard)


def _gold_tables(dataset: Dataset) -> dict[str, str]:
    """``{qid: gold table id}`` for the queries that name one (OTT-QA's ``gold_table_id``)."""
    return {q.id: str(q.metadata["gold_table_id"]) for q in dataset.queries if q.metadata.get("gold_table_id")}


def _with_run(
    result: dict[str, Any],
    chosen: list[QueryRecord],
    shard: tuple[int, int] | None,
    keep_run: bool,
    log: RecordFile | None = None,
) -> dict[str, Any]:
    """``result`` with the shard it covers, the record lines it did not use, and (when asked) the run and the
    per-query records."""
    if shard is not None:
        result["shard"] = f"{shard[0]}/{shard[1]}"
    if log is not None and log.rejected:
        result["records_rejected"] = log.rejected
    if keep_run:
        result["run"] = {r.qid: r.ids for r in chosen}
        result["per_query"] = [r.to_dict() for r in chosen]
    return result


def _run_settings(
    dataset: Dataset,
    name: str,
    k: int,
    recorded_llm: str | None,
    options: Mapping[str, Any] | None,
    settings: Mapping[str, Any] | None,
    embedder: Any = None,
) -> dict[str, Any]:
    """What identifies a run in its records file (``llm`` is the registry name, as in earlier record files; an
    embedding model other than the default adds ``embedder``, its name)."""
    if embedder is not None:
        settings = {**(settings or {}), "embedder": embedder.name}
    return {
        "dataset": dataset.name,
        "split": dataset.split,
        "n_corpus": len(dataset.corpus),
        "method": name,
        "k": k,
        "llm": recorded_llm,
        "options": _jsonable(dict(options or {})),
        **_jsonable(dict(settings or {})),
    }


def _timed_build(*args: Any) -> tuple[Retriever, dict[str, Any] | None, float]:
    """:func:`_build` and the seconds it took."""
    t0 = time.perf_counter()
    retriever, oracle = _build(*args)
    return retriever, oracle, time.perf_counter() - t0


def _build(
    method: str | Retriever,
    dataset: Dataset,
    llm: Any,
    work_dir: str | Path | None,
    options: Mapping[str, Any] | None,
    embedder: Any = None,
) -> tuple[Retriever, dict[str, Any] | None]:
    """The retriever, and the description of the gold-label oracle it was given (option ``judge_dir``
    ``oracle[:S[:SEED]]``: built here from the dataset's qrels and handed over as ``MethodContext.judge``)."""
    if not isinstance(method, str):
        return method, None
    ctx = MethodContext(
        corpus=dataset.corpus,
        work_dir=Path(work_dir) if work_dir is not None else None,
        options=method_options(method, options or {}),  # the option ``candidates`` in the factory's words
        llm=llm,
        embedder=embedder,
    )
    spec = parse_oracle(ctx.options.get("judge_dir"))
    if spec is None:
        return build_method(method, ctx), None
    oracle = OracleJudge.from_qrels(dataset.queries, dataset.qrels, noise=spec[0], seed=spec[1], load_base=ctx.load_llm)
    return build_method(method, dataclasses.replace(ctx, judge=oracle)), describe_judge(oracle)


def _run_queries(
    retriever: Retriever,
    todo: list[Query],
    k: int,
    extra: QueryExtra | None,
    log: RecordFile | None,
    *,
    desc: str,
    progress: bool,
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, QueryRecord]:
    """Search every query in ``todo``, appending each record to ``log`` as it finishes."""
    fresh: dict[str, QueryRecord] = {}
    for query in tqdm(todo, desc=desc, unit="q", disable=not progress):
        record = search_one(retriever, query, k, extra, gold=qrels.get(query.id, {}))
        fresh[query.id] = record
        if log is not None:
            log.append(record)
    return fresh
