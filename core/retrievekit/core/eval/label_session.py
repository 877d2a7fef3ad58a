"""What ``retrievekit label`` keeps: the user's questions, each one's candidate passages, and the labels given so far.

A :class:`LabelSession` shows each question with the first stage's top ``k`` passages (BM25, or hybrid, over the
user's corpus). Each passage gets *relevant*, *not relevant* or *skip*. Every label is saved as it is given: the
relevant and not-relevant ones to a qrels TSV (``query-id<TAB>corpus-id<TAB>score``, 1 or 0; written atomically, so
a crash leaves the previous file whole), the skipped ones to ``<labels>.skipped`` beside it. A new session on the
same files resumes where the last one stopped; labels of questions it does not show are kept as they are.

Enough is labelled when :func:`~retrievekit.core.eval.labels.labels_needed` questions (for the wanted half-width of
the AUC's interval) have a passage labelled relevant: that is what ``retrievekit advise --qrels`` counts.

Examples:
    >>> import tempfile, pathlib
    >>> from retrievekit.core.types import Passage
    >>> docs = [Passage(id=f"d{i}", text=t) for i, t in enumerate(["solar power", "wind power", "tidal flats"])]
    >>> s = LabelSession(docs, {"q1": "wind power"}, pathlib.Path(tempfile.mkdtemp()) / "l.tsv", k=2)
    >>> [c["id"] for c in s.question(0)["candidates"]]
    ['d1', 'd0']
    >>> s.label("q1", "d1", "relevant")["labelled"]
    1
    >>> s.labels_path.read_text().splitlines()[1]
    'q1\\td1\\t1'
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.labels import labels_needed, read_qrels, write_qrels
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.retriever import Retriever
from retrievekit.core.storage import atomic_write_text
from retrievekit.core.types import DataObject

__all__ = ["CHOICES", "LabelSession"]

CHOICES = {"relevant": 1, "not": 0, "skip": None}
"""The labels a passage takes: relevant (grade 1), not relevant (grade 0), skip (kept aside, not in the qrels)."""

MAX_PASSAGE_CHARS = 4000
"""Characters of a passage the page shows (the rest is cut, said with an ellipsis)."""


def _skipped(path: Path) -> set[tuple[str, str]]:
    if not path.is_file():
        return set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"skipped-labels file {path} cannot be read ({e})") from None
    out = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InvalidInputError(f"skipped-labels file {path} line {n}: expected query-id<TAB>corpus-id")
        out.add((parts[0], parts[1]))
    return out


class LabelSession:
    """The questions, their candidates and the labels (module docstring).

    Args:
        corpus: the user's documents.
        questions: ``{question id: text}`` in the order to show them.
        labels_path: the qrels TSV to write (read first when it exists: the session resumes).
        k: candidate passages a question (the first stage's top ``k``).
        first_stage: ``"bm25"``, ``"hybrid"`` or a retriever over ``corpus``.
        half_width: the wanted half-width of the AUC's 95 % interval (how many labels are enough).

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> LabelSession([Passage(id="a", text="x")], {}, pathlib.Path(tempfile.mkdtemp()) / "l.tsv")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: label needs at least one question
    """

    def __init__(
        self,
        corpus: Sequence[DataObject],
        questions: Mapping[str, str],
        labels_path: str | os.PathLike[str],
        *,
        k: int = 5,
        first_stage: str | Retriever = "bm25",
        half_width: float = 0.1,
    ) -> None:
        if not questions:
            raise InvalidInputError("label needs at least one question")
        if not corpus:
            raise InvalidInputError("label needs a corpus of at least one document")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
            raise InvalidInputError(f"candidates a question must be an int in 1..50, got {k!r}")
        self.needed = labels_needed(half_width)
        self.half_width = half_width
        self.qids = list(questions)
        self.questions = dict(questions)
        self.by_id = {o.id: o for o in corpus}
        self.k = k
        if isinstance(first_stage, str):
            if first_stage not in ("bm25", "hybrid"):
                raise InvalidInputError(f"first stage must be 'bm25' or 'hybrid', got {first_stage!r}")
            first_stage = build_method(first_stage, MethodContext(corpus=list(corpus)))
        self.first_stage = first_stage
        self.labels_path = Path(labels_path)
        self.skipped_path = self.labels_path.with_name(self.labels_path.name + ".skipped")
        self.qrels: dict[str, dict[str, int]] = read_qrels(self.labels_path) if self.labels_path.exists() else {}
        self.skipped = _skipped(self.skipped_path)
        self._candidates: dict[str, list[str]] = {}

    def candidates(self, qid: str) -> list[str]:
        """The ids of ``qid``'s candidate passages (the first stage's top ``k``; computed once)."""
        if qid not in self._candidates:
            self._candidates[qid] = [h.id for h in self.first_stage.search(self.questions[qid], k=self.k)]
        return self._candidates[qid]

    def _given(self, qid: str, doc: str) -> str | None:
        grade = self.qrels.get(qid, {}).get(doc)
        if grade is not None:
            return "relevant" if grade > 0 else "not"
        return "skip" if (qid, doc) in self.skipped else None

    def is_done(self, qid: str) -> bool:
        """Every candidate of ``qid`` has a label (skip included)."""
        return all(self._given(qid, d) is not None for d in self.candidates(qid))

    def progress(self) -> dict[str, Any]:
        """Questions done, questions with a relevant passage (``labelled``), how many are needed, the next to do."""
        labelled = sum(1 for q in self.qids if any(g > 0 for g in self.qrels.get(q, {}).values()))
        done = [q for q in self.qids if self.is_done(q)]
        todo = next((i for i, q in enumerate(self.qids) if q not in set(done)), None)
        return {
            "questions": len(self.qids),
            "done": len(done),
            "labelled": labelled,
            "needed": self.needed,
            "half_width": self.half_width,
            "enough": labelled >= self.needed,
            "next": todo,
        }

    def question(self, index: int) -> dict[str, Any]:
        """Question ``index`` (0-based) with its candidates and the labels they have."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.qids):
            raise InvalidInputError(f"question index must be in 0..{len(self.qids) - 1}, got {index!r}")
        qid = self.qids[index]
        cands = []
        for doc in self.candidates(qid):
            obj = self.by_id[doc]
            text = obj.index_text()
            cut = text[:MAX_PASSAGE_CHARS] + ("..." if len(text) > MAX_PASSAGE_CHARS else "")
            cands.append({"id": doc, "text": cut, "label": self._given(qid, doc)})
        return {"index": index, "id": qid, "text": self.questions[qid], "candidates": cands}

    def label(self, qid: str, doc: str, choice: str) -> dict[str, Any]:
        """Give ``doc`` the label ``choice`` (a key of :data:`CHOICES`) for ``qid``, save, return the progress.

        Only a shown question's candidates take labels (anything else is an :class:`InvalidInputError`).
        """
        if qid not in self.questions:
            raise InvalidInputError(f"unknown question id {qid!r}")
        if choice not in CHOICES:
            raise InvalidInputError(f"label must be one of {sorted(CHOICES)}, got {choice!r}")
        if doc not in self.candidates(qid):
            raise InvalidInputError(f"{doc!r} is not a candidate passage of question {qid!r}")
        grade = CHOICES[choice]
        if grade is None:
            self.qrels.get(qid, {}).pop(doc, None)
            self.skipped.add((qid, doc))
        else:
            self.qrels.setdefault(qid, {})[doc] = grade
            self.skipped.discard((qid, doc))
        self._save()
        return self.progress()

    def _save(self) -> None:
        kept = {q: g for q, g in self.qrels.items() if g}
        if kept:
            write_qrels(self.labels_path, kept)
        elif self.labels_path.exists():
            self.labels_path.unlink()  # every label turned into a skip: no qrels (a file without rows is refused)
        atomic_write_text(self.skipped_path, "".join(f"{q}\t{d}\n" for q, d in sorted(self.skipped)))
