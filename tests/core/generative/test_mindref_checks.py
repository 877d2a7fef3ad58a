"""MindRef's output checks and miss diagnosis (used on every benchmark query), on a tiny real model."""

from __future__ import annotations

from dataclasses import replace

import pytest
from _mindref import SMALL, corpus
from _tiny_lm import build_tiny_lm

from retrievekit.core.generative import MindRef
from retrievekit.core.generative.mindref_checks import diagnose_miss, hit_violations, title_violations
from retrievekit.core.llm import LocalLM


@pytest.fixture(scope="module")
def mr() -> MindRef:
    model, tok = build_tiny_lm()
    return MindRef(corpus(), LocalLM(model, tok, name="tiny"), SMALL)


def test_real_output_has_no_violations_and_a_forged_one_is_caught(mr):
    hits = mr.search("aspirin and pain", k=2)
    assert hits and hit_violations(mr, hits) == {"title_not_real": 0, "passage_not_span": 0}
    assert title_violations(mr, mr.recall_titles("aspirin and pain")) == 0
    forged = replace(hits[0].obj, text=hits[0].obj.text + " (edited)", title="Not a title")
    bad = replace(hits[0], obj=forged)
    assert hit_violations(mr, [bad]) == {"title_not_real": 1, "passage_not_span": 1}


def test_diagnosis_rescores_a_gold_title_exactly_as_beam_search_scored_it(mr):
    query = "aspirin and pain"
    titles = [t for t in mr.recall_titles(query) if not t.truncated]
    assert titles
    t = titles[0]
    gold = {mr.corpus[t.documents[0]].id: 1}
    assert diagnose_miss(mr, query, list(gold), gold, t.score) == "hit"
    # the gold title's rescored value is the beam's own score: just below it the recalled title wins, just above it loses
    assert diagnose_miss(mr, query, ["elsewhere"], gold, t.score - 1e-4) == "search"
    assert diagnose_miss(mr, query, ["elsewhere"], gold, t.score + 1e-4) == "model"
    assert diagnose_miss(mr, query, ["elsewhere"], {}, t.score) is None  # no gold: nothing to diagnose
