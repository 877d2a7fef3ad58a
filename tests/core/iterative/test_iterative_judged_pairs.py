"""The iterative agent's judge calls reach the harness's judge accuracy (issue #17.1-2): an agent chunk stands for
itself; the scored pairs travel in the JSON-safe step events and :func:`trace_from_events` restores them.

Real components: the search step, the gold-label oracle, the event/trace conversion, the accuracy labelling.
"""

from __future__ import annotations

import json

from retrievekit.core.eval.judge_accuracy import query_pairs
from retrievekit.core.iterative.arguments import ChunkSearchArgs
from retrievekit.core.iterative.state import make_chunk, trace_from_events
from retrievekit.core.iterative.steps import SearchSettings, search_step
from retrievekit.core.judge.oracle import OracleJudge

QUESTION = "What do volcanoes erupt?"
_CHUNKS = [make_chunk("v1", "Volcanoes erupt lava."), make_chunk("w1", "Weather balloons."), make_chunk("v2", "Magma.")]


def _search(query, k, trace):
    return _CHUNKS[:k]


def test_judged_pairs_travel_through_the_agent_events():
    settings = SearchSettings(judge=OracleJudge({QUESTION: ["v1", "v2"]}))
    r = search_step([], ChunkSearchArgs(query="volcano"), _search, question=QUESTION, turn=2, settings=settings)
    assert [c["id"] for c in r.working_set] == ["v1", "v2"]  # the oracle deleted the non-gold chunk
    event = next(e for e in r.events if e["kind"] == "judge_delete")
    json.dumps(r.events)  # still JSON-safe (the LangGraph state keeps them)
    assert event["data"]["judged"][0]["refs"] == [["v1"], ["w1"], ["v2"]]
    trace = trace_from_events(r.events)
    assert len(trace.judged) == 1 and trace.judged[0].scores == (1.0, 0.0, 1.0)
    assert all("judged" not in e.data for e in trace.events)  # restored as pairs, not left in the event notes
    assert query_pairs(trace.judged, {"v1": 1, "v2": 1})["labels"] == [1, 0, 1]
    assert trace.judged[0].judge["uses_gold_labels"]
