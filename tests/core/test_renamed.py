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
