"""Issue #64 item 3: given the user's own questions and no labels, ``advise``'s question writer imitates them (their
examples, length and punctuation in its prompt; paraphrase asked when their words are not the documents'), and the
report measures the written questions beside theirs."""

from __future__ import annotations

import asyncio

import pytest
from _advise import CORPUS, WORDS, KeywordQuestions, KnownAUC

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.advise import aadvise, advise, render_advice
from retrievekit.core.eval.advise_steps import QUESTION_PROMPT
from retrievekit.core.eval.question_style import style_of, style_prompt
from retrievekit.core.index.bm25 import BM25Index

USER = {f"u{i}": f"anything known on {w} follow up" for i, w in enumerate(WORDS[:12])}  # 6 words, no '?'


class Recording(KeywordQuestions):
    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def reply(self, text: str):
        self.prompts.append(text)
        return super().reply(text.split("Document:")[-1])  # about the document's keyword, not an example's


def quiet(**kw):
    return {"progress": False, "say": lambda line: None, **kw}


def test_the_writer_imitates_the_users_questions_and_the_report_measures_both(tmp_path):
    writer = Recording()
    r = advise(CORPUS, KnownAUC(0.9), question_llm=writer, questions=USER, max_calls=45, **quiet())
    assert r["mode"] == "label-free" and r["questions"] == 5 and len(writer.prompts) == 5
    for prompt in writer.prompts:
        assert prompt.startswith("Here are questions people ask about these documents:")
        assert sum(q in prompt for q in USER.values()) == 4  # four of them, as examples
        assert "(about 6 words)" in prompt and "question mark" not in prompt  # theirs end without '?'
    style = r["style"]
    # 5 terms (anyth, known, the keyword, follow, up), 2 in the document (the keyword, "followed"): 0.4
    assert style["yours"] == {"words": 6.0, "question_mark": 0.0, "overlap": pytest.approx(2 / 5)}
    # the scripted writer's questions ("What is <keyword>?"): 3 words, each with '?'
    assert style["written"]["words"] == 3.0 and style["written"]["question_mark"] == 1.0
    # "what" and the keyword; the document holds the keyword: 0.5
    assert style["written"]["overlap"] == 0.5 and set(style["examples"]) <= set(USER.values())
    text = render_advice(r)
    assert "imitating your questions (6 words, 0 % end with '?'" in text
    assert "the written ones: 3 words, 100 % end with '?'" in text


def test_without_questions_the_writer_gets_todays_prompt_and_no_style():
    writer = Recording()
    r = advise(CORPUS, KnownAUC(0.9), question_llm=writer, max_calls=45, **quiet())
    assert r["style"] is None and all(p.startswith(QUESTION_PROMPT.split("{")[0]) for p in writer.prompts)


def test_imitating_runs_keep_records_of_their_own(tmp_path):
    plain = advise(CORPUS, KnownAUC(0.9), question_llm=Recording(), max_calls=45, records_dir=tmp_path, **quiet())
    writer = Recording()
    imitated = advise(
        CORPUS, KnownAUC(0.9), question_llm=writer, questions=USER, max_calls=45, records_dir=tmp_path, **quiet()
    )
    assert imitated["records"] != plain["records"] and len(writer.prompts) == 5  # nothing replayed from the other
    again = Recording()
    advise(CORPUS, KnownAUC(0.9), question_llm=again, questions=USER, max_calls=45, records_dir=tmp_path, **quiet())
    assert again.prompts == []  # the same run resumes from its records


def test_awaited_advise_imitates_the_same_way():
    writer = Recording()
    r = asyncio.run(aadvise(CORPUS, KnownAUC(0.9), question_llm=writer, questions=USER, max_calls=45, **quiet()))
    assert r["style"]["yours"]["words"] == 6.0 and all(p.startswith("Here are questions") for p in writer.prompts)


def test_the_prompt_asks_for_paraphrase_only_when_their_words_are_not_the_documents():
    index = BM25Index.build(CORPUS)
    copying = style_of([f"Study {w} of cells?" for w in WORDS[:5]], index)
    assert copying.overlap == 1.0 and copying.question_mark == 1.0
    assert "own words" not in style_prompt(copying, "doc") and "question mark" in style_prompt(copying, "doc")
    assert "own words" in style_prompt(style_of(list(USER.values()), index), "doc")
    with pytest.raises(InvalidInputError, match="at least one non-empty question"):
        style_of(["", "  "], index)
