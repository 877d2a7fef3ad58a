"""Fallback rates per stage in benchmark results: counted from the queries' traces, summed over the run, warned
about above 5 %; and the LLM rounds on the critical path beside the calls."""

from __future__ import annotations

from collections.abc import Sequence

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.fallbacks import FALLBACK_WARN_RATE, fallback_block, fallback_warnings, stage_counts
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.fakes import FixedReplyLLM
from retrievekit.core.llm.concurrency import map_calls
from retrievekit.core.registry import MethodContext, register_method
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit


class Degrading:
    """Scores four slates side by side; the slates of query q1 fall back (as a dead LLM's would)."""

    def __init__(self, ctx: MethodContext) -> None:
        self.corpus: Sequence[DataObject] = ctx.corpus

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        trace = trace if trace is not None else Trace()

        def slate(i: int, sub: Trace) -> None:
            sub.record_llm_call(10, 2)
            if query == "red apples":
                sub.note("fallback", f"slate {i} scored by cosine")

        with trace.stage("rerank.score"):
            map_calls(slate, range(4), llm=object(), max_concurrency=2, trace=trace)
        return [ScoredHit(obj=o, score=1.0, rank=i) for i, o in enumerate(self.corpus[:k])]


register_method("test-degrading", Degrading)

DS = Dataset(
    name="toy",
    split="dev",
    corpus=[Passage(id="a", text="red apples"), Passage(id="b", text="blue sky")],
    queries=[Query("q1", "red apples"), Query("q2", "blue sky")],
    qrels={"q1": {"a": 1}, "q2": {"b": 1}},
)


def test_a_run_reports_each_stages_fallback_rate_and_warns():
    r = run_benchmark(DS, "test-degrading", k=2, progress=False)
    row = r["fallbacks"]["rerank.score"]
    assert row["rate"] == 0.5 and row["queries_with_fallback"] == 0.5 and row["llm_calls_per_query"] == 4.0
    assert len(r["warnings"]) == 1 and r["warnings"][0].startswith("rerank.score fell back on 50.0%")
    # four calls on two lanes: two rounds on the critical path, four calls
    assert r["cost"]["llm_calls_per_query"] == 4.0 and r["cost"]["llm_rounds_per_query"] == 2.0


def test_a_fallback_in_a_concurrent_call_keeps_its_stage():
    t = Trace()
    with t.stage("arm.verify"):
        map_calls(lambda x, sub: sub.note("fallback", "x"), [1, 2], llm=object(), max_concurrency=2, trace=t)
    assert stage_counts(t) == {"arm.verify": {"llm_calls": 0, "fallbacks": 2}}


def test_a_slate_asked_three_times_then_given_up_is_one_fallback_of_one_ask():
    # the real adapter path: a reply that never validates is asked again twice (json_retry), then the method falls
    # back; the rate must say every slate fell back, not one request in three
    class Rambling(FixedReplyLLM):  # records each request, as a real adapter does
        def complete(self, prompt, **limits):  # type: ignore[no-untyped-def]
            if limits.get("trace") is not None:
                limits["trace"].record_llm_call(10, 8)
            return super().complete(prompt, **limits)

    llm = Rambling("I think the first one is best.")
    t = Trace()

    def slate(i: int, sub: Trace) -> None:
        try:
            llm.complete_json("Score the items.", {"type": "object"}, max_tokens=8, retries=2, trace=sub)
        except LLMOutputError:
            sub.note("fallback", f"slate {i} kept in first-stage order")

    with t.stage("llm_rerank.score"):
        map_calls(slate, range(2), llm=llm, max_concurrency=2, trace=t)
    counts = stage_counts(t)
    assert counts == {"llm_rerank.score": {"llm_calls": 6, "fallbacks": 2, "retries": 4}}
    block = fallback_block([counts])
    assert block is not None and block["llm_rerank.score"]["rate"] == 1.0
    assert fallback_warnings(block)[0].startswith("llm_rerank.score fell back on 100.0% of its LLM asks")


def test_a_stage_without_llm_calls_is_rated_per_query():
    # ARM's aggregation asks no LLM: one query of four falling back to the drafts' majority is 25 %, not "all asks"
    rows = [{"arm.aggregate": {"llm_calls": 0, "fallbacks": 1}}, {}, {}, {}]
    block = fallback_block(rows)
    assert block is not None and block["arm.aggregate"]["rate"] == 0.25
    (line,) = fallback_warnings(block)
    assert line.startswith("arm.aggregate fell back on 25.0% of queries (a stage that makes no LLM call of its own)")


def test_below_the_limit_no_warning_and_empty_runs_have_no_block():
    block = fallback_block([{"s": {"llm_calls": 100, "fallbacks": 1}}])
    assert block is not None and block["s"]["rate"] == 0.01 and fallback_warnings(block) == []
    assert fallback_warnings({"s": {"rate": FALLBACK_WARN_RATE + 0.001}}) != []
    assert fallback_block([{}, {}]) is None


def test_bench_prints_the_warning(tmp_path, capsys, monkeypatch):
    from retrievekit.core import cli

    monkeypatch.setattr("retrievekit.core.eval.datasets.load_dataset", lambda *a, **k: DS)
    code = cli.main(
        [
            "bench",
            "--dataset",
            "scifact",
            "--data-dir",
            str(tmp_path),
            "--method",
            "test-degrading",
            "--out",
            str(tmp_path / "r.json"),
            "--no-progress",
        ]
    )
    assert code == 0 and "warning: rerank.score fell back on 50.0%" in capsys.readouterr().out
