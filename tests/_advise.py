"""Scripted pieces of the advise tests: a corpus of one keyword a document, a question writer that asks about a
document's keyword, and a judge of known ROC AUC (the scripted scores are the point: the estimate must land on them).
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
from _judges import ScriptedChat

from retrievekit.core.types import Passage

WORDS = [f"zq{i:03d}x" for i in range(80)]  # one unique keyword per document
CORPUS = [
    Passage(id=f"d{i}", text=f"Study {w} of cells. Patients with {w} were followed for months in the clinic.")
    for i, w in enumerate(WORDS)
]


class KeywordQuestions(ScriptedChat):
    """Writes 'What is <the document's keyword>?' (the point: a question whose positive is known)."""

    def reply(self, text: str) -> tuple[str, int, int]:
        word = re.search(r"zq\d{3}x", text).group(0)
        return f"What is {word}?", 20, 5


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
