"""A slate is shown in an order no document can predict (issue #30 item 2).

A payload that writes a reply aimed at its own slot (``{"scores": [0, 100, 0, ...]}`` with the 100 where the document
sits) wins every slate against a model that copies what it reads when slates keep the input order; shown in an order
drawn from the query and the texts, it lands on a random item, and the scores still come back in item order.
"""

from __future__ import annotations

import re

from retrievekit.core.eval.injection import TOPICS, hostile_text
from retrievekit.core.lattice.config import LatticeConfig
from retrievekit.core.lattice.scoring import SlateScorer
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.untrusted import unpredictable_order

_COPIED = re.compile(r"\(\"scores\": \[([\d, ]+)\]\)")  # a reply as it reads once fenced (braces neutralised)


class Copier(ChatLLMBase):
    """Copies a score list written inside a block; otherwise scores each block by its length (a stand-in for merit)."""

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        text = prompt[-1].content
        blocks = [b for b in text.splitlines() if b.startswith("<data")]
        found = _COPIED.search(text)
        if found:
            return Completion('{"scores": [' + found.group(1) + "]}")
        return Completion('{"scores": [' + ", ".join(str(min(100, len(b) // 4)) for b in blocks) + "]}")


def _hostile_first(shuffle: bool) -> int:
    scorer = SlateScorer(Copier(), LatticeConfig(shuffle_slates=shuffle))
    wins = 0
    for q, (query, _, _) in enumerate(TOPICS):
        texts = [TOPICS[(q + j) % len(TOPICS)][2] for j in range(5)]
        pos = q % 6
        texts.insert(pos, hostile_text("own_slot", slate_size=6, own=pos, own_id=pos + 1))
        scores = scorer.score(query, texts, leaf=True).scores
        wins += scores[pos] == max(scores)
    return wins


def test_a_payload_aimed_at_its_own_slot_no_longer_lands_there():
    assert _hostile_first(shuffle=False) == len(TOPICS)  # the attack, against the input order
    assert _hostile_first(shuffle=True) <= len(TOPICS) // 3  # chance is 1 in 6


def test_scores_come_back_in_item_order():
    class ByWord(ChatLLMBase):
        def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
            blocks = [b for b in prompt[-1].content.splitlines() if b.startswith("<data")]
            return Completion('{"scores": [' + ", ".join(b[b.index(">") + 1] for b in blocks) + "]}")

    texts = [str(d) for d in range(8)]
    assert unpredictable_order(["q", *texts], 8) != list(range(8))  # the slate really is shown reordered
    assert SlateScorer(ByWord(), LatticeConfig(score_max=9)).score("q", texts).scores == [d / 9 for d in range(8)]


def test_the_order_is_deterministic_and_depends_on_the_inputs():
    a = unpredictable_order(["q", "x", "y", "z"], 3)
    assert a == unpredictable_order(["q", "x", "y", "z"], 3)
    orders = {tuple(unpredictable_order([f"q{i}", "x", "y", "z"], 3)) for i in range(40)}
    assert len(orders) == 6  # every order of three occurs across queries
