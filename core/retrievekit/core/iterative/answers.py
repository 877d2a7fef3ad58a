"""Answer exact match and token F1, the SQuAD / HotpotQA / MuSiQue convention.

Normalisation: lower-case, drop punctuation, drop the articles *a*, *an*, *the*, collapse whitespace.
With several gold answers (MuSiQue aliases) the best score over them counts.

Examples:
    >>> answer_exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
    >>> round(answer_f1("Stanley Hall", ["G. Stanley Hall"]), 3)
    0.8
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

__all__ = ["answer_exact_match", "answer_f1", "answer_scores", "normalize_answer"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces.

    Examples:
        >>> normalize_answer("  The  Nile, River. ")
        'nile river'
    """
    s = str(text).lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _golds(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else [str(g) for g in golds]


def _f1(pred: str, gold: str) -> float:
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def answer_exact_match(prediction: str | None, golds: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0 (None counts as empty).

    Examples:
        >>> answer_exact_match(None, ["x"]), answer_exact_match("Yes.", "yes")
        (0.0, 1.0)
    """
    pred = normalize_answer(prediction or "")
    return float(any(pred == normalize_answer(g) for g in _golds(golds)))


def answer_f1(prediction: str | None, golds: str | Iterable[str]) -> float:
    """Best token-overlap F1 between the prediction and any gold answer.

    Examples:
        >>> answer_f1("red apple", ["apple"])
        0.6666666666666666
    """
    scores = [_f1(prediction or "", g) for g in _golds(golds)]
    return max(scores) if scores else 0.0


def answer_scores(prediction: str | None, golds: str | Iterable[str]) -> dict[str, float]:
    """``{"em": ..., "f1": ...}`` for one prediction.

    Examples:
        >>> answer_scores("Paris", ["Paris", "City of Light"])
        {'em': 1.0, 'f1': 1.0}
    """
    return {"em": answer_exact_match(prediction, golds), "f1": answer_f1(prediction, golds)}
