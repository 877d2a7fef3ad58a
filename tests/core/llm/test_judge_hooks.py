"""The shared relevance-judge hook (issue #9): ``judge_relevance`` checks and clips a judge's reply, llm-rerank
orders by the judge's scores, and the bench factories load the judge from ``judge_dir`` (``retrievekit bench --judge
DIR``) through ``judge_from_options``.

Each method's own use of the judge is tested beside the method: tests/core/lattice/test_lattice_judge_hook.py,
tests/core/arm/test_arm_judge_hook.py, tests/core/oneshot/test_oneshot_judge_hook.py and (the LangGraph agent)
tests/integrations/test_iterative_judge_hook.py; the framework edges in tests/integrations/test_judge_integrations.py.
The judges are scripted (tests/_judges.py): the scripted scores are the point, and every test asserts that the
behaviour follows them. Indexes and the MiniLM embedder are real.
"""

from __future__ import annotations

import sys
import types

import pytest
from _corpora import FRUIT
from _judges import OverlapJudge, PromptScorer
from _lattice import planted_tree
from _paths import REPO as REPO_ROOT

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.lattice import FlatLLMReranker
from retrievekit.core.lattice.method import build_lattice, build_llm_rerank
from retrievekit.core.llm.judge_hooks import judge_from_options, judge_relevance
from retrievekit.core.llm.protocol import ChatLLM, RelevanceJudge
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


def test_scripted_judge_satisfies_both_protocols():
    judge = OverlapJudge()
    assert isinstance(judge, RelevanceJudge) and isinstance(judge, ChatLLM)
    assert not isinstance(PromptScorer(), RelevanceJudge)


# ---------------------------------------------------------------------- the shared hook
def test_judge_relevance_checks_and_clips():
    class Bad:
        def __init__(self, reply):
            self.reply = reply

        def score_relevance(self, query, candidates, *, trace=None):
            return self.reply

    t = Trace()
    assert judge_relevance(Bad([1.5, -0.2]), "q", ["a", "b"], trace=t) == [1.0, 0.0]
    assert t.counters["judge.clipped"] == 2 and any(e.kind == "judge.clipped" for e in t.events)
    with pytest.raises(LLMOutputError, match="1 scores for 2"):
        judge_relevance(Bad([0.5]), "q", ["a", "b"])
    with pytest.raises(LLMOutputError, match="NaN"):
        judge_relevance(Bad([0.5, float("nan")]), "q", ["a", "b"])
    with pytest.raises(LLMOutputError, match="non-number"):
        judge_relevance(Bad(["high", 0.1]), "q", ["a", "b"])
    with pytest.raises(LLMOutputError):
        judge_relevance(Bad(None), "q", ["a"])
    for whole in ("10", b"\x00\x01", {"0": 1, "1": 0}):  # iterable, but not scores: never split into parts
        with pytest.raises(LLMOutputError, match="not a list of scores"):
            judge_relevance(Bad(whole), "q", ["a", "b"])
    with pytest.raises(LLMOutputError, match="non-number"):
        judge_relevance(Bad(["0.5", 0.1]), "q", ["a", "b"])
    assert judge_relevance(Bad((0.25, 1)), "q", ["a", "b"]) == [0.25, 1.0]  # any sequence of numbers


def test_judge_relevance_refuses_booleans_generators_and_wild_scores():
    import numpy as np

    class Bad:
        def __init__(self, reply):
            self.reply = reply

        def score_relevance(self, query, candidates, *, trace=None):
            return self.reply() if callable(self.reply) else self.reply

    for reply, why in (
        ([True, 0.2], "non-number"),  # a boolean is no probability
        (np.array([True, False]), "non-number"),
        (lambda: (s for s in (0.5, 0.5)), "not a list of scores"),  # a generator cannot be checked whole
        ([1e308, 0.5], "far outside"),
        ([0.5, -3.0], "far outside"),
    ):
        with pytest.raises(LLMOutputError, match=why):
            judge_relevance(Bad(reply), "q", ["a", "b"])
    assert judge_relevance(Bad(np.array([0.25, 0.75])), "q", ["a", "b"]) == [0.25, 0.75]  # an array is a sequence


# ---------------------------------------------------------------------- llm-rerank
def test_llm_rerank_with_a_judge_orders_by_judge_score():
    docs = [Passage(id=f"d{i}", text=f"sun report number {i}") for i in range(6)]
    planted = {"number 4": 0.9, "number 1": 0.7, "number 5": 0.3}
    judge = OverlapJudge(planted={**planted, "number": 0.05})
    rr = FlatLLMReranker(BM25Index.build(docs), judge, candidates=6, calls=2)
    trace = Trace()
    hits = rr.search("sun", k=6, trace=trace)
    assert [h.id for h in hits[:3]] == ["d4", "d1", "d5"]
    assert [h.score for h in hits[:3]] == [0.9, 0.7, 0.3]
    assert len(judge.judge_calls) == 2 == trace.counters["judge.calls"] and judge.chat_calls == 0


# ---------------------------------------------------------------------- factories and --judge
def testjudge_from_options(fake_judge_module):
    judge, loaded = fake_judge_module
    got, opts = judge_from_options(MethodContext(corpus=[], options={"judge_dir": "runs/j", "calls": 3}))
    assert got is judge and opts == {"calls": 3} and loaded == ["runs/j"]
    assert judge_from_options(MethodContext(corpus=[], options={"calls": 3})) == (None, {"calls": 3})


def test_judge_from_options_refuses_a_non_judge(monkeypatch):
    mod = types.ModuleType("retrievekit.core.judge")
    mod.load_judge = lambda path, **kw: PromptScorer()
    monkeypatch.setitem(sys.modules, "retrievekit.core.judge", mod)
    with pytest.raises(InvalidInputError, match="score_relevance"):
        judge_from_options(MethodContext(corpus=[], options={"judge_dir": "runs/j"}))


def test_lattice_and_rerank_factories_use_the_judge(fake_judge_module, tmp_path, minilm):
    judge, loaded = fake_judge_module
    tree_dir = tmp_path / "tree"
    tree = planted_tree()
    tree.save(tree_dir)
    corpus = list(tree.objects.values())
    lat = build_lattice(MethodContext(corpus=corpus, options={"judge_dir": "j", "tree_dir": str(tree_dir)}))
    assert lat.llm is judge and lat.scorer.llm is judge
    assert lat.search("volcano eruption magma lava", k=1)[0].id == "t1s2l0"
    rr = build_llm_rerank(
        MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "calls": 2, "first_stage": "bm25"})
    )
    assert rr.scorer.llm is judge and rr.calls == 2
    assert loaded == ["j", "j"]


# ---------------------------------------------------------------------- docs
def test_docs_pages_have_a_judge_section():
    root = REPO_ROOT / "docs" / "methods"
    for page in ("lattice.md", "arm.md", "oneshot.md", "iterative.md"):
        assert "## Using a judge" in (root / page).read_text(encoding="utf-8"), page
