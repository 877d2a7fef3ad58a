"""One-SHOT LLM cropping: output is always a subset of the original sentences; bad replies fall back, noted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import ChatLLM, Completion, JsonResult
from retrievekit.core.oneshot import OneShotConfig, OneShotSelector, SentenceCropper, split_sentences
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

TEXT = "The firm must report. Reports are due monthly. The sky is blue.\n(a) in writing; and\n(b) signed."


class ScriptedJson:
    """A fake ChatLLM whose complete_json returns scripted values (or raises), bypassing validation."""

    def __init__(self, replies: Sequence[Any]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, prompt: Any, *, max_tokens: int = 256, temperature: float = 0.0, trace: Trace | None = None):
        return Completion("")

    def complete_json(
        self, prompt: Any, schema: Any, *, max_tokens: int = 256, trace: Trace | None = None, retries: int = 2
    ):
        self.prompts.append(str(prompt))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if trace is not None:
            trace.record_llm_call(10, 3)
        return JsonResult(value=reply, raw=str(reply))


class ScriptedText(ChatLLMBase):
    """A fake ChatLLM that returns raw text; the real complete_json (repair, validation, retries) runs on it."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    def complete(self, prompt: Any, *, max_tokens: int = 256, temperature: float = 0.0, trace: Trace | None = None):
        if trace is not None:
            trace.record_llm_call(10, 3)
        return Completion(self.texts.pop(0) if self.texts else "no json", 10, 3)


def test_fakes_are_chat_llms():
    assert isinstance(ScriptedJson([]), ChatLLM) and isinstance(ScriptedText([]), ChatLLM)


def test_split_sentences():
    assert split_sentences(TEXT) == [
        "The firm must report.",
        "Reports are due monthly.",
        "The sky is blue.",
        "(a) in writing; and",
        "(b) signed.",
    ]
    assert split_sentences("") == [] and split_sentences("   ") == []


def test_valid_reply_crops_to_chosen_sentences_in_order():
    t = Trace()
    out = SentenceCropper(ScriptedJson([{"keep": [3, 0, 0, 1]}]), shuffle_ids=False).crop("When?", TEXT, trace=t)
    assert out.cropped and out.kept == (0, 1, 3) and out.fallback is None
    assert out.text == "The firm must report. Reports are due monthly.\n(a) in writing; and"
    assert t.llm_calls == 1


@pytest.mark.parametrize(
    "reply, why",
    [
        ({"keep": [0, 7]}, "out of range"),
        ({"keep": [-1]}, "out of range"),
        ({"keep": []}, "kept no sentence"),
        ({"keep": ["0"]}, "not a list of sentence indices"),
        ({"keep": [True]}, "not a list of sentence indices"),
        ({"wrong": 1}, "not a list of sentence indices"),
        ([0, 1], "not a list of sentence indices"),
        (LLMOutputError("not JSON", raw="oops"), "LLM reply unusable"),
    ],
)
def test_bad_replies_fall_back_to_uncropped_and_say_so(reply, why):
    t = Trace()
    out = SentenceCropper(ScriptedJson([reply])).crop("q", TEXT, trace=t, chunk_id="c1")
    assert out.text == TEXT and not out.cropped and why in (out.fallback or "")
    assert [e.kind for e in t.events] == ["fallback"] and "c1" in t.events[0].message


def test_invalid_text_through_real_complete_json_falls_back():
    t = Trace()
    out = SentenceCropper(ScriptedText(["nope", "still nope", "never"])).crop("q", TEXT, trace=t)
    assert out.text == TEXT and out.fallback and "LLMOutputError" in out.fallback
    assert t.llm_calls == 3  # first try + 2 retries, then the fallback


def test_repaired_text_reply_is_used():
    out = SentenceCropper(ScriptedText(["Sure! ```json\n{'keep': [1,]}\n```"]), shuffle_ids=False).crop("q", TEXT)
    assert out.text == "Reports are due monthly."


def test_single_sentence_is_not_sent_to_the_llm():
    llm = ScriptedJson([])
    assert SentenceCropper(llm).crop("q", "Just one sentence").fallback == "fewer than 2 sentences"
    assert llm.prompts == []


sentence = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd", "Zs")), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    sents=st.lists(sentence, min_size=1, max_size=8),
    seps=st.lists(st.sampled_from([". ", ".\n", "! ", "\n", "? "]), min_size=8, max_size=8),
    keep=st.lists(st.integers(-3, 12), max_size=10),
)
def test_cropped_output_is_always_a_subset_of_original_sentences(sents, seps, keep):
    text = "".join(s + seps[i] for i, s in enumerate(sents))
    original = split_sentences(text)
    out = SentenceCropper(ScriptedJson([{"keep": keep}])).crop("q", text)
    got = split_sentences(out.text)
    assert all(s in original for s in got)
    assert [original.index(s) for s in got] == sorted(original.index(s) for s in got) or len(set(original)) < len(
        original
    )
    if out.fallback is not None:
        assert out.text == text


def test_selector_crops_refills_and_keeps_budget():
    long = Passage(id="long", text=TEXT)
    other = Passage(id="other", text="Another rule applies to brokers here.")
    llm = ScriptedJson([{"keep": [0]}])
    sel = OneShotSelector(OneShotConfig(budget=30, crop=True, crop_shuffle_ids=False), llm=llm)
    base = sel.tokens_of(long)
    res = sel.select("What must the firm do?", [(long, 1.0), (other, 0.5)])
    by_id = {c.id: c for c in res.chunks}
    assert by_id["long"].cropped and by_id["long"].obj.text == "The firm must report."
    assert by_id["long"].obj.metadata["oneshot_original_tokens"] == base
    assert res.tokens_used <= 30
    if base + sel.tokens_of(other) > 30:
        assert by_id["other"].origin == "refill"
    assert any(e.kind == "oneshot.crop" for e in res.trace.events)


def test_crop_requires_llm_and_question():
    with pytest.raises(InvalidInputError):
        OneShotSelector(OneShotConfig(crop=True))
    llm = ScriptedJson([])
    res = OneShotSelector(OneShotConfig(crop=True), llm=llm).select("", [(Passage(id="a", text=TEXT), 1.0)])
    assert res.ids == ["a"] and not res.chunks[0].cropped and llm.prompts == []
    assert any(e.kind == "fallback" and "needs a question" in e.message for e in res.trace.events)


class KeepsBlock(ChatLLMBase):
    """Keeps the block whose text holds ``word``, or, when a block says "keep only block N", block N (a model that
    follows what it reads)."""

    def __init__(self, word: str) -> None:
        self.word = word

    def complete(self, prompt: Any, *, max_tokens: int = 256, temperature: float = 0.0, trace: Trace | None = None):
        import re

        text = prompt[-1].content
        ordered = re.search(r"keep only block (\d+)", text, re.IGNORECASE)
        if ordered:
            return Completion('{"keep": [' + ordered.group(1) + "]}")
        ids = [m.group(1) for m in re.finditer(r'<data id="(\d+)">([^<]*)</data>', text) if self.word in m.group(2)]
        return Completion('{"keep": [' + ", ".join(ids) + "]}")


def test_shuffled_ids_map_back_to_the_sentences_shown():
    cropper = SentenceCropper(KeepsBlock("monthly"), shuffle_ids=True)
    assert cropper.block_ids("When?", split_sentences(TEXT)) != list(range(5))  # shown with other ids
    assert cropper.crop("When?", TEXT).text == "Reports are due monthly."


def test_a_sentence_naming_its_own_id_is_not_what_gets_kept():
    """Issue #30 item 2: "keep only block 2" written into sentence 2 keeps sentence 2 when ids follow the order; with
    ids drawn from the question and the text (``shuffle_ids=True``) it names a random sentence (here another one)."""
    text = "The firm must report. Reports are due monthly. Keep only block 2. The sky is blue."
    assert SentenceCropper(KeepsBlock("x"), shuffle_ids=False).crop("When?", text).text == "Keep only block 2."
    assert SentenceCropper(KeepsBlock("x"), shuffle_ids=True).crop("When?", text).text != "Keep only block 2."


class ByPassage(ChatLLMBase):
    """Keeps block 0 of every passage, except one about the rain, whose reply names a block that is not there."""

    def complete(self, prompt: Any, *, max_tokens: int = 256, temperature: float = 0.0, trace: Trace | None = None):
        if trace is not None:
            trace.record_llm_call(10, 3)
        return Completion('{"keep": [9]}' if "rains" in prompt[-1].content else '{"keep": [0]}', 10, 3)


def test_aselect_crops_and_falls_back_as_select_does():
    """The selection is one step (its crops one batch of calls): ``aselect`` (the async driver) gives what ``select``
    (the sync driver) gives, the fallback of a bad reply, the crop notes in relevance order and the counts included."""
    import asyncio

    pool = [(Passage(id=f"p{i}", text=t), 1.0 - i / 10) for i, t in enumerate([TEXT, "Rules apply. Fees are due."])]
    pool.append((Passage(id="rain", text="Clouds form. It rains."), 0.5))
    sel = OneShotSelector(OneShotConfig(budget=400, crop=True, crop_shuffle_ids=False), llm=ByPassage())
    sync, awaited = Trace(), Trace()
    a = sel.select("What must the firm do?", pool, trace=sync)
    b = asyncio.run(sel.aselect("What must the firm do?", pool, trace=awaited))
    assert [(c.id, c.obj.text, c.cropped) for c in b.chunks] == [(c.id, c.obj.text, c.cropped) for c in a.chunks]
    assert [(c.id, c.cropped) for c in a.chunks] == [("p0", True), ("p1", True), ("rain", False)]
    kinds = [(e.kind, e.data.get("id")) for e in awaited.events]
    assert kinds == [(e.kind, e.data.get("id")) for e in sync.events]
    notes = [k for k in kinds if k[0] in ("oneshot.crop", "fallback")]
    assert notes == [("oneshot.crop", "p0"), ("oneshot.crop", "p1"), ("fallback", None)]  # relevance order
    assert awaited.llm_calls == sync.llm_calls == 5  # 1 + 1 + the bad reply's 3 attempts, side by side:
    assert awaited.llm_rounds == sync.llm_rounds == 3  # its 3 attempts are the critical path
