"""How a user's questions read, so that ``advise``'s label-free question writer can imitate them (issue #64 item 3).

The label-free estimate is biased upwards when the writer copies the document's words into its question: a judge
then tells the positive from the negatives by word overlap alone, which real questions do not allow. Given the
user's own questions (``advise --questions FILE`` without labels), :func:`style_of` measures three things about them
and keeps a few as examples; :func:`style_prompt` asks the writer for a question in that style; :func:`style_match`
measures the written questions the same way, so the report shows how close the imitation came:

* ``words``: the median number of words a question has;
* ``question_mark``: the share that end with ``?``;
* ``overlap``: the mean share of a question's terms (lower-cased, stop words out, stemmed: BM25's analysis) found in
  its document. A user's question has no labelled document, so its first stage's top hit stands in for it (an upper
  bound: that hit was chosen for sharing the question's words); a written question's document is its source.

Examples:
    >>> style = QuestionStyle(("does vitamin d help bones?",), words=5, question_mark=1.0, overlap=0.4)
    >>> print(style_prompt(style, "Vitamin D supplements reduce fractures in the elderly.").splitlines()[0])
    Here are questions people ask about these documents:
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.retriever import Retriever

__all__ = ["PARAPHRASE_BELOW", "QuestionStyle", "overlap", "style_match", "style_of", "style_prompt"]

PARAPHRASE_BELOW = 0.6
"""When the user's questions share less than this of their terms with their documents, the writer is asked to use
its own words rather than the document's."""

_EXAMPLES = 4


@dataclass(frozen=True)
class QuestionStyle:
    """What :func:`style_of` measured of a user's questions, and a few of them as examples for the writer.

    Examples:
        >>> QuestionStyle(("why?",), words=1, question_mark=1.0, overlap=0.0).as_dict()["words"]
        1
    """

    examples: tuple[str, ...]
    words: float
    question_mark: float
    overlap: float

    def as_dict(self) -> dict[str, Any]:
        """The measures and examples as a JSON-ready dict (a report's ``style``).

        Examples:
            >>> sorted(QuestionStyle(("why?",), 1, 1.0, 0.0).as_dict())
            ['examples', 'overlap', 'question_mark', 'words']
        """
        out = asdict(self)
        out["examples"] = list(self.examples)
        return out


def _terms(text: str) -> set[str]:
    from retrievekit.core.index.tantivy_docs import analyze

    return set(analyze(text))


def overlap(question: str, document: str, terms: Callable[[str], set[str]] = _terms) -> float:
    """The share of ``question``'s terms found in ``document`` (0.0 for a question without terms).

    Examples:
        >>> overlap("Do statins lower cholesterol?", "Statins lowered LDL cholesterol in the trial.")
        0.75
    """
    mine = terms(question)
    return len(mine & terms(document)) / len(mine) if mine else 0.0


def _measures(pairs: Sequence[tuple[str, str]], terms: Callable[[str], set[str]]) -> tuple[float, float, float]:
    words = statistics.median(len(q.split()) for q, _ in pairs)
    marks = sum(q.rstrip().endswith("?") for q, _ in pairs) / len(pairs)
    shared = statistics.fmean(overlap(q, d, terms) for q, d in pairs)
    return float(words), round(marks, 4), round(shared, 4)


def style_of(
    questions: Sequence[str],
    index: Retriever,
    *,
    examples: int = _EXAMPLES,
    seed: int = 0,
    terms: Callable[[str], set[str]] = _terms,
) -> QuestionStyle:
    """Measure ``questions`` (each against its top hit in ``index``) and keep ``examples`` of them (seeded draw).

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> index = BM25Index.build([Passage(id="a", text="Statins lower cholesterol."), Passage(id="b", text="Rain.")])
        >>> style = style_of(["do statins work?", "what lowers cholesterol"], index, examples=1)
        >>> style.words, style.question_mark, style.overlap, len(style.examples)
        (3.0, 0.5, 0.5, 1)
    """
    asked = [q.strip() for q in questions if q and q.strip()]
    if not asked:
        raise InvalidInputError("imitating your questions needs at least one non-empty question")
    pairs = []
    for q in asked:
        hits = index.search(q, 1)
        pairs.append((q, hits[0].obj.index_text() if hits else ""))
    words, marks, shared = _measures(pairs, terms)
    chosen = random.Random(seed).sample(sorted(set(asked)), min(examples, len(set(asked))))
    return QuestionStyle(tuple(chosen), words=words, question_mark=marks, overlap=shared)


def style_prompt(style: QuestionStyle, document: str) -> str:
    """The writer's prompt: the user's example questions, their length and punctuation, and (when their words are
    not the documents') an instruction to paraphrase; then the document.

    Examples:
        >>> style = QuestionStyle(("how do statins work",), words=4, question_mark=0.0, overlap=0.9)
        >>> "own words" in style_prompt(style, "doc"), "question mark" in style_prompt(style, "doc")
        (False, False)
    """
    shown = "\n".join(f"- {q}" for q in style.examples)
    shape = f"about {round(style.words)} words"
    if style.question_mark >= 0.5:
        shape += ", ending with a question mark"
    own = ""
    if style.overlap < PARAPHRASE_BELOW:
        own = "Use your own words, as those people do, rather than the document's wording. "
    return (
        f"Here are questions people ask about these documents:\n{shown}\n\n"
        f"Write one new question in the same style ({shape}) that the document below answers. {own}"
        f"Reply with the question only.\n\nDocument: {document}"
    )


def style_match(
    style: QuestionStyle, written: Sequence[tuple[str, str]], terms: Callable[[str], set[str]] = _terms
) -> dict[str, Any]:
    """The written questions (each with its source document) measured as :func:`style_of` measures the user's,
    beside the user's measures.

    Examples:
        >>> style = QuestionStyle(("why?",), words=3, question_mark=1.0, overlap=0.2)
        >>> style_match(style, [("do statins work?", "Statins work.")])["written"]
        {'words': 3.0, 'question_mark': 1.0, 'overlap': 0.6667}
    """
    yours = {"words": style.words, "question_mark": style.question_mark, "overlap": style.overlap}
    if not written:
        return {"yours": yours, "written": None}
    words, marks, shared = _measures(written, terms)
    return {"yours": yours, "written": {"words": words, "question_mark": marks, "overlap": shared}}
