"""``benchmarks/advise_validation.py`` writes each label-free question once and replays it for every judge: a
question written through the model-call driver (which sends chat messages, not a text) is found again with no writer
to ask, in the plain writer's mode and the imitating one, and a kept file from before (keyed by the prompt's text)
stays valid."""

from __future__ import annotations

import hashlib
import json
import sys

from _paths import REPO

from retrievekit.core.eval.advise_steps import QUESTION_PROMPT, write_question
from retrievekit.core.eval.question_style import QuestionStyle
from retrievekit.core.fakes import FixedReplyLLM
from retrievekit.core.types import Passage

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.advise_validation import RecordedQuestions  # noqa: E402

DOC = Passage(id="d1", text="Aspirin lowers fever in adults within an hour.")
STYLE = QuestionStyle(("does aspirin help", "what lowers a fever"), words=3, question_mark=0.0, overlap=0.3)


def test_a_written_question_is_replayed_without_the_writer_in_both_label_free_modes(tmp_path):
    path = tmp_path / "questions.jsonl"
    for style, reply in ((None, "What lowers fever?"), (STYLE, "does aspirin lower fever")):
        assert write_question(RecordedQuestions(FixedReplyLLM(reply), path), DOC, style=style) == reply
        assert write_question(RecordedQuestions(None, path), DOC, style=style) == reply  # no writer: replayed
    assert len(path.read_text().splitlines()) == 2


def test_a_file_kept_by_the_text_of_the_prompt_is_still_replayed(tmp_path):
    path = tmp_path / "questions.jsonl"
    prompt = QUESTION_PROMPT.format(document=DOC.text)
    row = {"prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(), "reply": "Kept?"}
    path.write_text(json.dumps(row) + "\n")
    assert write_question(RecordedQuestions(None, path), DOC) == "Kept?"
