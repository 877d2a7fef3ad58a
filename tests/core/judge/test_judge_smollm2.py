"""The judge on the real SmolLM2 (slow: loads the 135M model): answer tokens, zero-shot scores, chat delegation."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.judge import Judge, JudgePrompt
from retrievekit.core.judge.prompt import CHAT_TEMPLATE_ID, answer_token_ids
from retrievekit.core.trace import Trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lm():
    from retrievekit.core.llm.local import LocalLM

    return LocalLM.load("smollm2", device="cpu")


def test_smollm2_answers_are_single_tokens(lm):
    shared, yes, no = answer_token_ids(lm.tokenizer)
    assert shared == [] and lm.tokenizer.decode([yes]) == " yes" and lm.tokenizer.decode([no]) == " no"
    ids = JudgePrompt().encode("q", "p", lm.tokenizer)
    assert ids[0] == lm.tokenizer.bos_token_id  # as the shared trainer encodes it


def test_zero_shot_smollm2_scores_batched_and_deterministic(lm):
    judge = Judge.zero_shot(llm=lm, batch_size=2)
    assert judge.prompt.template_id == CHAT_TEMPLATE_ID and not judge.trained
    cands = ["Aspirin relieves mild pain and fever.", "Rome is the capital of Italy.", "Aspirin"]
    trace = Trace()
    batched = judge.score_relevance("Does aspirin relieve pain?", cands, trace=trace)
    single = [judge.score_relevance("Does aspirin relieve pain?", [c])[0] for c in cands]
    assert np.allclose(batched, single, atol=1e-4)
    assert all(0.0 < p < 1.0 for p in batched) and trace.llm_calls == 2
    assert batched == judge.score_relevance("Does aspirin relieve pain?", cands)
    reply = judge.complete("Name a colour.", max_tokens=4)  # a judge passed as llm= still writes text
    assert reply.completion_tokens <= 4


def test_judge_rerank_zero_shot_option(lm, small_corpus):
    from retrievekit.core.judge.method import build_judge_rerank
    from retrievekit.core.registry import MethodContext

    r = build_judge_rerank(MethodContext(corpus=small_corpus, options={"judge_dir": "zero-shot", "rerank_k": "3"}))
    trace = Trace()
    hits = r.search("Which fruit is yellow?", k=3, trace=trace)
    assert 1 <= len(hits) <= 3 and all(0.0 < h.score < 1.0 for h in hits)
    assert any(e.kind == "judge" and "zero-shot" in e.message for e in trace.events)
