"""MindRef test data: a small config and an eight-document corpus drawn from the tiny LM's sentences and titles.

Shared by the MindRef core and output-check tests (tests/core/generative).
"""

from __future__ import annotations

from _tiny_lm import SENTENCES, TITLES

from retrievekit.core.generative import MindRefConfig
from retrievekit.core.types import Passage

SMALL = MindRefConfig(
    title_beams=4, title_return=2, title_max_new_tokens=16, passage_beams=3, prefix_tokens=5, passage_tokens=12
)


def corpus() -> list[Passage]:
    docs = []
    for i in range(8):
        title = TITLES[i % len(TITLES)] if i % 4 else ""  # every 4th untitled: first sentence becomes the title
        docs.append(Passage(id=f"d{i}", title=title, text=" ".join(SENTENCES[i : i + 3])))
    return docs
