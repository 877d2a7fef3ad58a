"""ARM information alignment: constrained keyword decoding only emits corpus N-grams (tiny real model); the
snap fallback for chat LLMs; decomposition fallbacks; the verification name grammar."""

from __future__ import annotations

import pytest
from _tiny_lm import SENTENCES, tiny_local_lm

from retrievekit.core.arm.keywords import (
    align_keywords,
    decompose,
    decompose_constrained,
    in_text,
    rephrase_constrained,
    snap,
)
from retrievekit.core.arm.ngrams import NGramIndex
from retrievekit.core.arm.verify import NameGrammar, verify_draft
from retrievekit.core.errors import LLMOutputError
from retrievekit.core.llm import LocalLM
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    return tiny_local_lm(outlines=False)  # no schema compile: keeps the tests fast


@pytest.fixture(scope="module")
def index() -> NGramIndex:
    return NGramIndex.build([Passage(id=f"s{i}", text=s) for i, s in enumerate(SENTENCES[:4])])


class Scripted(ChatLLMBase):
    """A chat LLM whose replies are the point of the test."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__()
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.prompts.append(str(prompt))
        if trace is not None:
            trace.record_llm_call(10, 5)
        return Completion(self.replies.pop(0) if self.replies else "not json", 10, 5)


@pytest.mark.parametrize("keyword", ["blood", "solar power", "fox"])
def test_constrained_rephrasing_only_emits_corpus_ngrams(lm, index, keyword):
    trace = Trace()
    grams = rephrase_constrained(lm, "What thins the blood?", keyword, index, beams=5, keep=5, trace=trace)
    assert grams, "a random model still yields N-grams under the constraint"
    assert all(g in index for g in grams) and len(grams) == len(set(grams)) <= 5
    assert trace.llm_calls == 1


def test_excluded_ngrams_are_never_emitted(lm, index):
    first = rephrase_constrained(lm, "q", "blood", index, beams=5, keep=5)
    again = rephrase_constrained(lm, "q", "blood", index, beams=5, keep=5, exclude=first)
    assert again and not set(first) & set(again)
    assert all(g in index for g in again)


def test_empty_vocabulary_gives_nothing(lm):
    assert rephrase_constrained(lm, "q", "kw", NGramIndex({}, 3)) == []


def test_align_keywords_constrained_with_the_tiny_model(lm, index):
    trace = Trace()
    out = align_keywords(lm, "What thins the blood?", index, max_keywords=2, beams=3, keep=2, trace=trace)
    assert out.mode == "constrained" and 1 <= len(out.keywords) <= 2
    assert all(g in index for grams in out.ngrams.values() for g in grams)
    assert trace.llm_calls >= 1 + len(out.keywords) - (1 if out.fallback else 0)


def test_constrained_decomposition_yields_question_ngrams(lm):
    question = "Which solar panels convert sunlight into electricity?"
    trace = Trace()
    kws, why = decompose_constrained(lm, question, 3, trace=trace)
    assert why == "" and 1 <= len(kws) <= 3 and trace.llm_calls == 1
    assert all(in_text(k, question) and 1 <= len(k.split()) <= 3 for k in kws)
    assert decompose_constrained(lm, "the of and?", 2)[0] == []  # no content words: nothing to decode


def test_snap_path_for_chat_llms(index):
    llm = Scripted(['{"keywords": [{"keyword": "sun light", "similar": ["solar panel", "zzzz"]}, {"keyword": "fox"}]}'])
    out = align_keywords(llm, "How do panels use the sun?", index, max_keywords=3, keep=3)
    assert out.mode == "snap" and out.keywords == ["sun light", "fox"]
    assert out.ngrams["sun light"] == ["sunlight", "solar panels"]
    assert out.ngrams["fox"] == ["fox"]
    assert all(g in index for grams in out.ngrams.values() for g in grams)
    assert snap("qqqq", index) == []


def test_decomposition_failure_falls_back_to_question_words():
    trace = Trace()
    kws, why = decompose(Scripted(["nope", "still nope", "no"]), "Which solar panels convert sunlight?", 3, trace=trace)
    assert kws == ["solar", "panels", "convert"] and "LLMOutputError" in why
    assert trace.llm_calls == 3  # first try + 2 retries


def test_name_grammar_only_allows_candidate_names():
    g = NameGrammar([[5, 6], [5, 7], [8]], sep=[9], eos=0, max_items=2)
    assert g.allowed([]) == [5, 8] and g.allowed([5]) == [6, 7] and g.allowed([6]) == []
    assert g.allowed([8, 9]) == [0, 5]  # no repeat of [8]; EOS after a complete item
    assert g.allowed([8, 9, 5, 7, 9]) == [0]  # max_items reached
    assert g.parse([8, 9, 5, 7], [-1.0, -0.1, -2.0, -4.0]) == [(2, -1.0)]  # the unfinished item is dropped


def test_verify_draft_scoring_and_chat(lm):
    objs = [Passage(id=f"s{i}", text=s, title=f"Doc {i}") for i, s in enumerate(SENTENCES[:3])]
    names = ["Doc 0", "Doc 1", "Doc 2"]
    trace = Trace()
    v = verify_draft(lm, "What thins the blood?", objs, names, [], scoring=True, beams=2, max_objects=2, trace=trace)
    assert v.ok and 1 <= len(v.chosen) <= 2 and set(v.chosen) <= {"s0", "s1", "s2"}
    assert all(lp <= 0 for lp in v.chosen.values()) and trace.llm_calls == 1
    chat = verify_draft(Scripted(['{"objects": ["Doc 1"]}']), "q", objs, names, ["x"], scoring=False)
    assert chat.ok and chat.chosen == {"s1": 0.0}
    bad = verify_draft(Scripted(["{}"] * 3), "q", objs, names, [], scoring=False)
    assert not bad.ok and "failed" in bad.message


def test_scripted_llm_raises_on_garbage():
    with pytest.raises(LLMOutputError):
        Scripted(["x", "y", "z"]).complete_json("q", {"type": "object"})
