"""Renamed trace counters: one ``<method>.<counter>`` name each, the old names answered for one release."""

from __future__ import annotations

import json

import pytest

from retrievekit.core.eval.records import QueryRecord
from retrievekit.core.eval.runner import summarize
from retrievekit.core.renamed import COUNTER_PREFIXES, COUNTERS, Counters, counter_name
from retrievekit.core.trace import Trace


def test_every_renamed_counter_has_its_methods_dot() -> None:
    for new in [*COUNTERS.values(), *COUNTER_PREFIXES.values()]:
        method, _, rest = new.partition(".")
        assert method and "." in new, new
    assert counter_name("iterative.turns") == "iterative.turns"


def test_an_old_name_is_read_and_counted_under_the_new_one_with_a_warning() -> None:
    t = Trace()
    t.count("arm.keywords", 2)
    with pytest.warns(DeprecationWarning, match="'arm_keywords' is now 'arm.keywords'"):
        assert t.counters["arm_keywords"] == 2
    with pytest.warns(DeprecationWarning):
        t.count("retrieval_calls")
    assert dict(t.counters) == {"arm.keywords": 2, "iterative.retrieval_calls": 1}
    with pytest.warns(DeprecationWarning):
        assert "judge_pairs" not in t.counters and t.counters.get("self_retrieval_titles", 0) == 0
    assert json.loads(json.dumps(t.to_dict()))["counters"] == {"arm.keywords": 2, "iterative.retrieval_calls": 1}
    assert t.merge(Trace(counters={"turns": 3})).counters == {"arm.keywords": 2, "iterative.retrieval_calls": 1,
                                                              "iterative.turns": 3}  # fmt: skip


def test_records_stored_with_old_names_aggregate_under_the_new_ones() -> None:
    old = QueryRecord(qid="q1", ids=["a"], counters={"arm_drafts": 2.0})
    new = QueryRecord(qid="q2", ids=["a"], counters={"arm.drafts": 4.0})
    out = summarize([old, new], {"q1": {"a": 1}, "q2": {"a": 1}})
    assert dict(out["counters_per_query"]) == {"arm.drafts": 3.0}
    with pytest.warns(DeprecationWarning):
        assert out["counters_per_query"]["arm_drafts"] == 3.0
    assert isinstance(out["counters_per_query"], Counters)


class _Aspirin:  # a stand-in judge: what the option does, not how well it judges, is under test
    def score_relevance(self, query, candidates, *, trace=None):
        return [0.9 if "aspirin" in c.lower() else 0.2 for c in candidates]


def test_the_candidate_count_is_the_option_candidates_for_every_method(recwarn: pytest.WarningsRecorder) -> None:
    from retrievekit.core.eval.datasets import Dataset, Query
    from retrievekit.core.eval.runner import run_benchmark
    from retrievekit.core.types import Passage

    docs = [Passage(id=f"d{i}", text=f"pain note {i}") for i in range(6)] + [Passage(id="a", text="Aspirin pain.")]
    ds = Dataset("t", "dev", docs, [Query(id="q", text="pain")], {"q": {"a": 1}})
    opts = {"judge_dir": "oracle:0"}

    def judged(options: dict) -> float:
        r = run_benchmark(ds, "judge-rerank", k=3, options={**opts, **options}, progress=False)
        return r["counters_per_query"]["judge.candidates"]

    assert judged({"candidates": 4}) == 4 and not [w for w in recwarn if w.category is DeprecationWarning]
    with pytest.warns(DeprecationWarning, match="'rerank_k' of judge-rerank is now 'candidates'"):
        assert judged({"rerank_k": 5}) == 5
    with pytest.raises(Exception, match="give candidates or rerank_k"):
        judged({"candidates": 4, "rerank_k": 5})


def test_run_benchmark_takes_shard_and_still_answers_shard_spec() -> None:
    from retrievekit.core.eval.datasets import Dataset, Query
    from retrievekit.core.eval.runner import run_benchmark
    from retrievekit.core.types import Passage

    ds = Dataset("t", "dev", [Passage(id="a", text="tea"), Passage(id="b", text="coffee")],
                 [Query(id="q1", text="tea"), Query(id="q2", text="coffee")], {"q1": {"a": 1}, "q2": {"b": 1}})  # fmt: skip
    assert run_benchmark(ds, "bm25", k=2, shard="1/2", progress=False)["n_queries"] == 1
    with pytest.warns(DeprecationWarning, match="shard_spec"):
        old = run_benchmark(ds, "bm25", k=2, shard_spec="1/2", progress=False)
    assert old["shard"] == "1/2" and old["n_queries"] == 1
