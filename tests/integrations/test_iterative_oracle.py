"""The LangGraph agent with the gold-label oracle in the harness (issue #17.1): its judge calls become the result's
``judge`` block, flagged as a gold-label run.

The chat model is scripted (one search, then an answer): the judge, BM25, LangGraph and the harness are real.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage

from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.types import Passage
from retrievekit.langgraph.graph import build_iterative_agent
from retrievekit.langgraph.method import IterativeAgentMethod
from retrievekit.langgraph.testing import ScriptedToolChatModel

_DOCS = [
    Passage(id="v1", text="Volcanoes erupt lava and magma."),
    Passage(id="v2", text="Lava from volcanoes cools into rock."),
    Passage(id="w1", text="Volcano weather balloons measure wind."),
    Passage(id="x1", text="Completely unrelated text about cooking."),
]


def test_agent_with_the_oracle_reports_its_judge_accuracy():
    ds = Dataset("agent", "dev", _DOCS, [Query("q1", "What do volcanoes erupt, lava?")], {"q1": {"v1": 1, "v2": 1}})
    chat = ScriptedToolChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "volcano lava"}, "id": "1"}]),
            "done",
        ]
    )
    oracle = OracleJudge.from_qrels(ds.queries, ds.qrels)
    graph = build_iterative_agent(chat, BM25Index.build(_DOCS), judge=oracle, fallback_on_first_turn=False)
    result = run_benchmark(ds, IterativeAgentMethod(graph), k=5, label="agent+oracle", progress=False, keep_run=True)
    assert sorted(result["run"]["q1"]) == ["v1", "v2"]  # the oracle deleted the non-gold chunk
    judge = result["judge"]
    assert judge["name"] == "oracle" and judge["auc"] == 1.0 and judge["positives"] == 2
    assert judge["scored_pairs"] == 3  # the three chunks BM25 found for "volcano lava", judged once each
    assert judge["warning"] == "diagnostic run: the judge read the gold labels"
