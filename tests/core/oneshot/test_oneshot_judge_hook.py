"""One-SHOT cropping with a relevance judge (issue #9): the judge scores each sentence of a chunk and the cropper
keeps the exact spans at or above ``crop_judge_threshold``.

The judge is scripted (tests/_judges.py): the planted scores are the point, and every test asserts that the crop
follows them.
"""

from __future__ import annotations

import pytest
from _corpora import FRUIT
from _judges import OverlapJudge

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.cropping import SentenceCropper
from retrievekit.core.oneshot.method import build_oneshot
from retrievekit.core.oneshot.selector import OneShotSelector
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, ScoredHit

_CHUNK = "The sky is blue today.  Firms must report losses.\nThey pay a fee. Rome is old.\n(a) daily losses only."


def test_cropping_keeps_the_judged_sentences_exact_spans():
    judge = OverlapJudge(planted={"Firms": 0.9, "fee": 0.6, "daily": 0.5, "": 0.1})
    trace = Trace()
    out = SentenceCropper(judge).crop("Who reports losses?", _CHUNK, trace=trace, chunk_id="c1")
    assert out.cropped and out.kept == (1, 2, 4) and out.n_sentences == 5
    assert out.text == "Firms must report losses.\nThey pay a fee.\n(a) daily losses only."
    assert judge.judge_calls[0][1] == [
        "The sky is blue today.",
        "Firms must report losses.",
        "They pay a fee.",
        "Rome is old.",
        "(a) daily losses only.",
    ]
    assert trace.counters["oneshot.judge_crops"] == 1 and judge.chat_calls == 0
    note = next(e for e in trace.events if e.kind == "oneshot.judge")
    assert note.data["kept"] == [1, 2, 4] and note.data["scores"] == [0.1, 0.9, 0.6, 0.1, 0.5]


def test_cropping_threshold_and_best_sentence():
    judge = OverlapJudge(planted={"Firms": 0.4, "fee": 0.45, "": 0.1})
    strict = SentenceCropper(judge, judge_threshold=0.5).crop("q", _CHUNK)
    assert strict.kept == (2,) and strict.text == "They pay a fee."
    loose = SentenceCropper(judge, judge_threshold=0.0).crop("q", _CHUNK)
    assert not loose.cropped and loose.text == _CHUNK  # every sentence kept: the chunk is unchanged


def test_cropping_judge_failure_keeps_the_chunk():
    class Broken(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            return []

    trace = Trace()
    out = SentenceCropper(Broken()).crop("q", _CHUNK, trace=trace)
    assert out.text == _CHUNK and out.fallback.startswith("judge reply unusable")
    assert any(e.kind == "fallback" for e in trace.events)


def test_oneshot_selector_crops_with_the_judge_and_its_threshold():
    judge = OverlapJudge(planted={"Firms": 0.9, "fee": 0.6, "": 0.1})
    cfg = OneShotConfig(budget=500, crop=True, crop_judge_threshold=0.7)
    hits = [ScoredHit(Passage(id="c1", text=_CHUNK), 1.0, 0)]
    trace = Trace()
    res = OneShotSelector(cfg, llm=judge).select("Who reports losses?", hits, trace=trace)
    assert res.chunks[0].cropped and res.chunks[0].obj.text == "Firms must report losses."
    assert res.chunks[0].obj.metadata["oneshot_kept_sentences"] == [1]
    with pytest.raises(InvalidInputError, match="crop_judge_threshold"):
        OneShotConfig(crop_judge_threshold=2)


def test_build_oneshot_crops_with_the_judge(fake_judge_module):
    judge, _ = fake_judge_module
    r = build_oneshot(MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "crop_judge_threshold": "0.6"}))
    assert r.selector.llm is judge and r.selector.config.crop and r.selector.config.crop_judge_threshold == 0.6
    with pytest.raises(InvalidInputError, match="crop=false"):
        build_oneshot(MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "crop": "false"}))
