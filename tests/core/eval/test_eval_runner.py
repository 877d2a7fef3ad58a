"""Benchmark runner: result shape, cost accounting, failures."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from retrievekit.core.errors import EmptyQueryError, InvalidInputError
from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.runner import COST_KEYS, run_benchmark
from retrievekit.core.registry import MethodContext, register_method
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit


class Overlap:
    """Term-overlap retriever that also reports fake LLM cost."""

    def __init__(self, ctx: MethodContext) -> None:
        self.corpus: Sequence[DataObject] = ctx.corpus
        self.ctx = ctx

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        if query == "boom":
            raise EmptyQueryError("boom")
        terms = set(query.lower().split())
        scored = sorted(
            ((len(terms & set(o.index_text().lower().split())), o) for o in self.corpus), key=lambda x: (-x[0], x[1].id)
        )
        if trace is not None:
            trace.record_llm_call(prompt_tokens=10, completion_tokens=2)
            trace.note("info", "scored")
        return [ScoredHit(obj=o, score=float(s), rank=i) for i, (s, o) in enumerate(scored[:k])]


class SetMethod(Overlap):
    returns_set = True


register_method("test-overlap", Overlap)
register_method("test-overlap-set", SetMethod)

DS = Dataset(
    name="toy",
    split="dev",
    corpus=[Passage(id="a", text="red apples"), Passage(id="b", text="blue sky"), Passage(id="c", text="green grass")],
    queries=[Query("q1", "red apples"), Query("q2", "blue sky today"), Query("q3", "grass")],
    qrels={"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}},
)


def test_result_shape_is_exact_and_json() -> None:
    r = run_benchmark(DS, "test-overlap", k=2, progress=False)
    required = {"dataset", "split", "method", "n_queries", "metrics", "cost"}
    assert required <= set(r) and {"build_seconds", "k"} <= set(r)
    assert (r["dataset"], r["split"], r["method"], r["n_queries"], r["k"]) == ("toy", "dev", "test-overlap", 3, 2)
    assert set(r["cost"]) == set(COST_KEYS)
    assert {"ndcg@10", "recall@100", "mrr@5", "hit@5", "perfect_recall@10"} <= set(r["metrics"])
    assert r["metrics"]["ndcg@10"] == 1.0 and r["metrics"]["recall@100"] == 1.0
    assert r["cost"]["llm_calls_per_query"] == 1.0
    assert r["cost"]["prompt_tokens_per_query"] == 10.0 and r["cost"]["completion_tokens_per_query"] == 2.0
    assert r["cost"]["seconds_per_query"] >= 0 and r["build_seconds"] >= 0
    assert r["n_failed"] == 0 and r["events_per_query"] == 1.0
    assert "set_f1" not in r["metrics"] and "run" not in r
    json.dumps(r)


def test_options_context_and_run() -> None:
    seen: list[MethodContext] = []

    def factory(ctx: MethodContext) -> Overlap:
        seen.append(ctx)
        return Overlap(ctx)

    register_method("test-overlap-ctx", factory)
    r = run_benchmark(
        DS,
        "test-overlap-ctx",
        k=1,
        llm="smollm2",
        work_dir="/tmp/x",
        options={"budget": 5},
        progress=False,
        keep_run=True,
    )
    assert (
        len(seen) == 1
        and seen[0].llm == "smollm2"
        and str(seen[0].work_dir) == "/tmp/x"
        and seen[0].options == {"budget": 5}
    )
    assert r["run"] == {"q1": ["a"], "q2": ["b"], "q3": ["c"]}
    assert r["options"] == {"budget": 5} and r["llm"] == "smollm2"


def test_set_metrics_when_method_returns_a_set() -> None:
    r = run_benchmark(DS, "test-overlap-set", k=1, progress=False)
    assert r["metrics"]["set_precision"] == 1.0 and r["metrics"]["set_f1"] == 1.0
    assert r["metrics"]["set_perfect_recall"] == 1.0 and r["metrics"]["set_size"] == 1.0


def test_table_recall_when_queries_name_a_gold_table() -> None:
    queries = [Query("q1", "red apples", metadata={"gold_table_id": "a"}), Query("q2", "blue sky", metadata={}),
               Query("q3", "grass", metadata={"gold_table_id": "b"})]  # fmt: skip
    ds = Dataset("toy", "dev", DS.corpus, queries, DS.qrels)
    r = run_benchmark(ds, "test-overlap", k=3, progress=False)
    # q1's table is first; q3's ("b") is not its top hit but is in its top 3; q2 names none and is left out
    assert r["metrics"]["table_recall@1"] == 0.5 and r["metrics"]["table_recall@5"] == 1.0
    assert "table_recall@1" not in run_benchmark(DS, "test-overlap", k=3, progress=False)["metrics"]


def test_failures_are_counted_not_fatal() -> None:
    ds = Dataset("toy", "dev", DS.corpus, [*DS.queries, Query("q4", "boom")], {**DS.qrels, "q4": {"a": 1}})
    r = run_benchmark(ds, "test-overlap", k=3, progress=False)
    assert r["n_failed"] == 1 and "EmptyQueryError" in r["failures"][0]
    assert r["metrics"]["hit@1"] == pytest.approx(3 / 4)


def test_bad_inputs() -> None:
    with pytest.raises(InvalidInputError):
        run_benchmark(DS, "test-overlap", k=0, progress=False)
    with pytest.raises(InvalidInputError, match="no queries"):
        run_benchmark(Dataset("t", "dev", DS.corpus, [], {}), "test-overlap", progress=False)
    with pytest.raises(InvalidInputError, match="unknown method"):
        run_benchmark(DS, "no-such-method", progress=False)
