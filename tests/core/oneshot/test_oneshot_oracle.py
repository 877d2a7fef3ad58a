"""One-SHOT cropping with the gold-label oracle (issue #17.1): a sentence stands for its passage, so the exact
oracle never drops a sentence of a gold passage and crops every other passage to its best (first) sentence.

Real components: the oracle, the sentence cropper and the One-SHOT selector (knapsack, crop, refill).
"""

from __future__ import annotations

from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.cropping import SentenceCropper
from retrievekit.core.oneshot.selector import OneShotSelector
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, ScoredHit

Q = "Who must report losses?"
_PASSAGES = [
    Passage(id=f"p{i}", text=f"Rule {i} applies to firms. Firms must report losses {i}.\nThey pay a fee. Rome is old.")
    for i in range(6)
]
GOLD = {"p1", "p4"}


def test_the_oracle_crop_keeps_gold_passages_whole_and_crops_the_rest():
    oracle = OracleJudge({Q: GOLD})
    for p in _PASSAGES:
        trace = Trace()
        out = SentenceCropper(oracle).crop(Q, p.text, trace=trace, chunk_id=p.id)
        assert trace.judged[0].refs == (frozenset({p.id}),) * 4
        if p.id in GOLD:
            assert not out.cropped and out.text == p.text and out.kept == (0, 1, 2, 3)
        else:
            assert out.cropped and out.kept == (0,) and out.text == f"Rule {p.id[1:]} applies to firms."


def test_the_selector_with_the_oracle_never_drops_a_gold_sentence():
    hits = [ScoredHit(p, 1.0 - i / 10, i) for i, p in enumerate(_PASSAGES)]
    cfg = OneShotConfig(budget=120, crop=True, crop_max_chunks=6)
    trace = Trace()
    res = OneShotSelector(cfg, llm=OracleJudge({Q: GOLD})).select(Q, hits, trace=trace)
    by_id = {c.id: c for c in res.chunks}
    original = {p.id: p.text for p in _PASSAGES}
    assert GOLD <= set(by_id)
    for pid in GOLD:
        assert by_id[pid].obj.text == original[pid] and not by_id[pid].cropped
    assert any(c.cropped for c in res.chunks if c.id not in GOLD)
    assert {next(iter(r)) for b in trace.judged for r in b.refs} <= set(original)
