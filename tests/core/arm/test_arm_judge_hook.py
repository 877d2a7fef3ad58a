"""ARM with a relevance judge (issue #9): verification keeps the objects the judge scores at or above
``judge_threshold`` (one batched call per draft) instead of the verification prompt.

The judge is scripted (tests/_judges.py): the planted scores are the point, and every test asserts that verification
follows them. The MiniLM embedder, indexes and the MIP are real.
"""

from __future__ import annotations

import math

import pytest
from _corpora import FRUIT
from _judges import OverlapJudge

from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.method import Arm, build_arm
from retrievekit.core.arm.verify import verify_draft
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

_OBJS = [
    Passage(id="a", title="Alpha", text="Alpha text."),
    Passage(id="b", title="Beta", text="Beta text."),
    Passage(id="c", title="Gamma", text="Gamma text."),
]


def test_arm_verification_keeps_exactly_the_objects_at_or_above_threshold():
    judge = OverlapJudge(planted={"Alpha": 0.9, "Beta": 0.2, "Gamma": 0.5})
    trace = Trace()
    v = verify_draft(judge, "q?", _OBJS, ["A", "B", "G"], [], scoring=False, judge_threshold=0.5, trace=trace)
    assert v.ok and set(v.chosen) == {"a", "c"}
    assert v.chosen["a"] == pytest.approx(math.log(0.9)) and v.chosen["c"] == pytest.approx(math.log(0.5))
    assert len(judge.judge_calls) == 1 and judge.chat_calls == 0  # one batched call per draft, no prompt
    assert trace.counters["arm.verify_judge"] == 1 and trace.counters["judge.calls"] == 1
    note = next(e for e in trace.events if e.kind == "arm.judge")
    assert note.data["kept"] == ["a", "c"] and note.data["scores"] == {"a": 0.9, "b": 0.2, "c": 0.5}


def test_arm_verification_keeps_the_best_when_none_passes():
    judge = OverlapJudge(planted={"Alpha": 0.1, "Beta": 0.3, "Gamma": 0.3})
    v = verify_draft(judge, "q?", _OBJS, ["A", "B", "G"], [], scoring=False, judge_threshold=0.5)
    assert v.ok and v.chosen == {"b": pytest.approx(math.log(0.3))}  # ties: the earlier object
    zero = verify_draft(OverlapJudge(planted={"text": 0.0}), "q?", _OBJS[:1], ["A"], [], scoring=False)
    assert zero.chosen == {"a": pytest.approx(math.log(1e-6))}  # floored, still finite for aggregation


def test_arm_verification_judge_failure_is_a_failed_verdict():
    class Broken(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            return [float("nan")] * len(candidates)

    v = verify_draft(Broken(), "q?", _OBJS, ["A", "B", "G"], [], scoring=False)
    assert not v.ok and "judge verification failed" in v.message


def test_arm_threshold_is_a_validated_option():
    assert ArmConfig().judge_threshold == 0.5
    assert ArmConfig.from_options({"judge_threshold": "0.7"}).judge_threshold == 0.7
    with pytest.raises(InvalidInputError, match="judge_threshold"):
        ArmConfig(judge_threshold=1.5)


def test_arm_search_with_a_judge_returns_the_judged_set(minilm):
    liked = {"apple", "banana"}
    judge = OverlapJudge(planted={"Apple": 0.95, "Banana": 0.8, "": 0.1})
    cfg = ArmConfig(keywords=False, expand_ks=(2, 3), base_k=3, pool_size=6, vocab_objects=6, mip_time_limit=10)
    arm = Arm(list(FRUIT), judge, cfg, embedder=minilm)
    trace = Trace()
    hits = arm.search("Which fruits are sweet?", k=5, trace=trace)
    ids = {h.id for h in hits}
    assert ids == liked
    for h in hits:
        assert h.obj.metadata["arm_logprob"] == pytest.approx(math.log(0.95 if h.id == "apple" else 0.8))
    assert hits[0].id == "apple"  # the higher judge confidence wins the aggregation
    assert trace.counters["arm.verify_judge"] >= 1 and judge.chat_calls == 0


def test_build_arm_uses_the_judge(fake_judge_module):
    judge, loaded = fake_judge_module
    arm = build_arm(MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "judge_threshold": 0.6}))
    assert arm.llm is judge and arm.config.judge_threshold == 0.6 and loaded == ["j"]


def test_build_arm_takes_the_bm25_engine_option(tmp_path, minilm):
    """``--option bm25_engine=tantivy`` reaches ARM's BM25 index (cached apart in the work dir), not its dense one."""
    ctx = MethodContext(corpus=list(FRUIT), options={"bm25_engine": "tantivy", "keywords": False}, llm="none",
                        work_dir=tmp_path, embedder=minilm)  # fmt: skip
    arm = build_arm(ctx)
    assert arm.bm25.config.engine == "tantivy"
    assert any(p.name.startswith("bm25-tantivy-") for p in tmp_path.iterdir())
    assert {h.id for h in arm.search("Which fruits are sweet?", k=3)} <= {o.id for o in FRUIT}
