"""Issue #54 item 2: advise's estimate lands where a scripted judge of known AUC puts it, within its call bound."""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.advise import advise, render_advice
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.types import Passage

WORDS = [f"zq{i:03d}x" for i in range(80)]  # one unique keyword per document
CORPUS = [
    Passage(id=f"d{i}", text=f"Study {w} of cells. Patients with {w} were followed for months in the clinic.")
    for i, w in enumerate(WORDS)
]


class KeywordQuestions(ChatLLMBase):
    """Writes 'What is <the document's keyword>?' (the point: a question whose positive is known)."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.calls += 1
        text = prompt if isinstance(prompt, str) else prompt[-1].content
        word = re.search(r"zq\d{3}x", text).group(0)
        self._record(trace, 20, 5)
        return Completion(f"What is {word}?", 20, 5)


class KnownAUC:
    """A judge of known ROC AUC: N(d, 1) for a text holding the question's keyword, N(0, 1) otherwise, drawn from a
    hash of the pair (so repeatable); AUC = Phi(d / sqrt 2)."""

    def __init__(self, auc: float) -> None:
        from statistics import NormalDist

        self.d = math.sqrt(2) * NormalDist().inv_cdf(auc)
        self.auc = auc
        self.pairs = 0

    def __repr__(self) -> str:  # names the judge in the record file's settings
        return f"KnownAUC({self.auc})"

    def score_relevance(self, query, candidates, *, trace=None):
        word = re.search(r"zq\d{3}x", query).group(0)
        out = []
        for c in candidates:
            self.pairs += 1
            seed = int(hashlib.sha256(f"{query}|{c}".encode()).hexdigest()[:8], 16)
            z = float(np.random.default_rng(seed).normal())
            out.append(1 / (1 + math.exp(-(z + (self.d if word in c else 0.0)))))
        return out


@pytest.mark.parametrize("auc", [0.95, 0.7])
def test_the_label_free_estimate_lands_on_the_known_auc(auc):
    judge, writer, said = KnownAUC(auc), KeywordQuestions(), []
    r = advise(CORPUS, judge, question_llm=writer, max_calls=720, negatives=3, progress=False, say=said.append)
    assert said[0].startswith("advise (label-free): 80 questions x 9 calls = at most 720")
    assert r["questions"] == 80 and writer.calls == 80 and judge.pairs == 80 * 8 and r["llm_calls"] <= 720
    for kind in ("documents", "summaries"):
        a = r["auc"][kind]
        assert a["low"] <= auc <= a["high"] and abs(a["auc"] - auc) < 0.1  # the truth inside its 95 % interval
    lattice = next(m for m in r["methods"] if m["method"] == "lattice")
    oneshot = next(m for m in r["methods"] if m["method"] == "oneshot")
    assert lattice["pays_off"] is (auc >= 0.9) and oneshot["pays_off"]
    assert (lattice["expected"] > lattice["first_stage_quality"]) is (auc >= 0.9)
    assert "lattice: pays off" in render_advice(r) if auc >= 0.9 else "lattice: does not pay off" in render_advice(r)


def test_the_labelled_mode_and_its_refusal():
    questions = {f"q{i}": f"What is {w}?" for i, w in enumerate(WORDS)}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(len(WORDS))}
    judge = KnownAUC(0.9)
    r = advise(CORPUS, judge, questions=questions, qrels=qrels, max_calls=200, progress=False, say=lambda s: None)
    assert r["mode"] == "labelled" and r["questions"] == 25 and judge.pairs == 200
    assert abs(r["auc"]["documents"]["auc"] - 0.9) < 0.1
    few = {q: qrels[q] for q in list(qrels)[:19]}
    with pytest.raises(InvalidInputError, match="at least 20 labelled questions, got 19"):
        advise(CORPUS, judge, questions=questions, qrels=few, progress=False, say=lambda s: None)


def test_a_rerun_resumes_from_its_records(tmp_path):
    path = tmp_path / "advise.jsonl"
    first = KnownAUC(0.8)
    a = advise(CORPUS, first, question_llm=KeywordQuestions(), max_calls=45, records=path, progress=False)
    again, writer = KnownAUC(0.8), KeywordQuestions()
    b = advise(CORPUS, again, question_llm=writer, max_calls=45, records=path, progress=False)
    assert a["questions"] == 5 and a["llm_calls"] <= 45 and again.pairs == 0 and writer.calls == 0
    assert a["auc"] == b["auc"]


def test_a_cosine_judged_run_resumes_after_its_embedder_loaded(tmp_path):
    """The record file names the judge by its repr; the cosine judge's must not change when MiniLM loads on the
    first call (it did: CosineJudge(MiniLM) then CosineJudge(MiniLMEmbedder), and the resume was refused)."""
    from retrievekit.core.judge.cosine import CosineJudge

    path = tmp_path / "advise.jsonl"
    judge = CosineJudge()
    a = advise(CORPUS, judge, question_llm=KeywordQuestions(), max_calls=18, records=path, progress=False)
    writer = KeywordQuestions()
    b = advise(CORPUS, judge, question_llm=writer, max_calls=18, records=path, progress=False)
    assert a["questions"] == 2 and writer.calls == 0 and a["auc"] == b["auc"]


def test_a_label_free_report_says_the_labelled_mode_is_the_advice():
    free = advise(CORPUS, KnownAUC(0.9), question_llm=KeywordQuestions(), max_calls=18, progress=False)
    questions = {f"q{i}": f"What is {w}?" for i, w in enumerate(WORDS[:20])}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(20)}
    labelled = advise(CORPUS, KnownAUC(0.9), questions=questions, qrels=qrels, max_calls=160, progress=False)
    assert "--qrels" in render_advice(free).splitlines()[1]
    assert "label-free" not in render_advice(labelled) and "caution" not in render_advice(labelled)
