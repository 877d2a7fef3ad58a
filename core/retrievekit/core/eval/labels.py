"""A user's questions and relevance labels as files: read with typed errors, written atomically, digested.

* :func:`read_questions` -- the user's questions: one a line (plain text), or JSONL objects with ``text`` (or
  ``question``) and an optional ``id`` (or ``_id``). A question without an id gets :func:`question_id`, a hash of
  its text, so ids stay the same when the file is reordered or grows.
* :func:`read_qrels` / :func:`write_qrels` -- labels as a BEIR-style qrels TSV (``query-id<TAB>corpus-id<TAB>score``,
  a header line), the file ``retrievekit advise --qrels`` and the dataset loaders read; written atomically, so a
  crash leaves the previous file whole.
* :func:`labels_digest` -- a hash of the labels a run used (its record file's settings hold it, so a run on other
  labels never reuses the records of this one).
* :func:`labels_needed` -- labelled questions for a wanted half-width of the AUC's 95 % interval, from the measured
  spread (:data:`HALF_WIDTH_AT_ONE`, docs/advise.md, "How many labels").

Examples:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "labels.tsv"
    >>> write_qrels(p, {"q1": {"d1": 1, "d2": 0}})
    >>> read_qrels(p)
    {'q1': {'d1': 1, 'd2': 0}}
    >>> labels_needed(0.1)
    54
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.storage import atomic_write_text

__all__ = [
    "HALF_WIDTH_AT_ONE",
    "MAX_QUESTION_CHARS",
    "labels_digest",
    "labels_needed",
    "question_id",
    "read_qrels",
    "read_questions",
    "write_qrels",
]

HALF_WIDTH_AT_ONE = 0.73
"""Half-width of advise's 95 % bootstrap interval on the AUC times the square root of the labelled questions: the
largest over the 15 labelled validation runs (5 judges x 3 datasets) and both kinds (documents 0.67, summaries 0.73;
docs/advise.md, "How many labels", ``benchmarks/advise_labels_needed.py``). With ``n`` labelled questions the
half-width is about this over ``sqrt(n)``."""

MAX_QUESTION_CHARS = 2000
"""Longest question :func:`read_questions` takes (a longer line is refused with its line number)."""

_HEADER = "query-id\tcorpus-id\tscore"


def _lines(path: str | os.PathLike[str], what: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line; a missing file, a folder or bytes that are not UTF-8 are
    refused with an :class:`InvalidInputError` naming the file (and line)."""
    p = Path(path)
    if not p.is_file():
        problem = "is a folder" if p.is_dir() else "does not exist"
        raise InvalidInputError(f"{what} file {p} {problem}")
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InvalidInputError(f"{what} file {p} cannot be read ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise InvalidInputError(f"{what} file {p} line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x})") from None
    return [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]


def question_id(text: str) -> str:
    """The id of a question given without one: ``q`` and 12 hex digits of its text's sha256 (spaces normalised).

    Examples:
        >>> question_id("What cuts fever?") == question_id("  What cuts   fever? ")
        True
    """
    return "q" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


def _json_question(path: Path, lineno: int, line: str) -> tuple[str | None, str]:
    try:
        row = json.loads(line)
    except ValueError as e:
        raise InvalidInputError(f"questions file {path} line {lineno}: invalid JSON ({e})") from None
    if not isinstance(row, dict):
        raise InvalidInputError(
            f"questions file {path} line {lineno}: expected a JSON object, got {type(row).__name__}"
        )
    text = row.get("text", row.get("question"))
    qid = row.get("id", row.get("_id"))
    if not isinstance(text, str):
        raise InvalidInputError(f"questions file {path} line {lineno}: no 'text' (or 'question') string")
    if qid is not None and (not isinstance(qid, str | int) or isinstance(qid, bool) or not str(qid).strip()):
        raise InvalidInputError(f"questions file {path} line {lineno}: 'id' must be a non-empty string or int")
    return (None if qid is None else str(qid).strip()), text


def read_questions(path: str | os.PathLike[str]) -> dict[str, str]:
    """``{question id: text}`` in file order: one question a line, or JSONL (a line starting ``{``).

    A repeated question (same text, or same id) keeps its first line. Refused, naming the file and line: a missing
    or unreadable file, bytes that are not UTF-8, invalid JSON, a question longer than :data:`MAX_QUESTION_CHARS`, a
    file without questions.

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.jsonl"
        >>> _ = p.write_text('{"id": "7", "text": "What cuts fever?"}\\nDoes rain help?\\n')
        >>> read_questions(p) == {"7": "What cuts fever?", question_id("Does rain help?"): "Does rain help?"}
        True
        >>> read_questions(p.parent / "none.txt")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: questions file .../none.txt does not exist
    """
    p = Path(path)
    out: dict[str, str] = {}
    seen: set[str] = set()
    for lineno, line in _lines(p, "questions"):
        qid, text = _json_question(p, lineno, line) if line.lstrip().startswith("{") else (None, line)
        text = " ".join(text.split())
        if not text:
            raise InvalidInputError(f"questions file {p} line {lineno}: empty question")
        if len(text) > MAX_QUESTION_CHARS:
            raise InvalidInputError(
                f"questions file {p} line {lineno}: a question of {len(text)} characters (at most {MAX_QUESTION_CHARS})"
            )
        qid = qid or question_id(text)
        if qid in out or text in seen:
            continue
        out[qid] = text
        seen.add(text)
    if not out:
        raise InvalidInputError(f"questions file {p} holds no questions (one a line, or JSONL with 'text')")
    return out


def _grade(p: Path, lineno: int, value: str) -> int | None:
    try:
        grade = float(value)
    except ValueError:
        return None
    if not math.isfinite(grade) or grade != int(grade):
        raise InvalidInputError(f"qrels file {p} line {lineno}: score {value!r} is not a whole number")
    return int(grade)


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """``{query id: {corpus id: grade}}`` from a qrels TSV (``query-id<TAB>corpus-id<TAB>score``).

    The first line may be a header (any line whose score is not a number). Refused with an
    :class:`InvalidInputError` naming the file and line: a missing or unreadable file, bytes that are not UTF-8, a
    line without exactly three tab-separated columns, an empty id, a score that is not a whole number (past the
    header), one pair given two different grades, a file without labels.

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.tsv"
        >>> _ = p.write_text("qid\\tdocid\\trel\\n1\\t100\\t1\\n1\\t101\\t0\\n")
        >>> read_qrels(p)
        {'1': {'100': 1, '101': 0}}
        >>> _ = p.write_text("1\\t100\\t1\\n1 101 0\\n")
        >>> read_qrels(p)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: qrels file .../q.tsv line 2: 1 tab-separated column(s), expected 3 (query-id<TAB>corpus-id<TAB>score)
    """
    p = Path(path)
    out: dict[str, dict[str, int]] = {}
    for n, (lineno, line) in enumerate(_lines(p, "qrels")):
        row = line.rstrip("\r\n").split("\t")
        if len(row) != 3:
            raise InvalidInputError(
                f"qrels file {p} line {lineno}: {len(row)} tab-separated column(s), expected 3 "
                "(query-id<TAB>corpus-id<TAB>score)"
            )
        qid, doc, value = (c.strip() for c in row)
        grade = _grade(p, lineno, value)
        if grade is None:
            if n == 0:
                continue  # a header
            raise InvalidInputError(f"qrels file {p} line {lineno}: score {value!r} is not a number")
        if not qid or not doc:
            raise InvalidInputError(f"qrels file {p} line {lineno}: an empty query id or corpus id")
        before = out.setdefault(qid, {}).setdefault(doc, grade)
        if before != grade:
            raise InvalidInputError(f"qrels file {p} line {lineno}: ({qid}, {doc}) labelled {before} and {grade}")
    if not out:
        raise InvalidInputError(f"qrels file {p} holds no labels (lines query-id<TAB>corpus-id<TAB>score)")
    return out


def write_qrels(path: str | os.PathLike[str], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write ``qrels`` as a TSV with a header, sorted, atomically (the old file stays whole until the new one is in).

    Ids holding a tab or a line break are refused (the file could not be read back).

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "l.tsv"
        >>> write_qrels(p, {"q": {"d\\t1": 1}})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: id 'd\\t1' holds a tab or a line break: it cannot be written to a qrels TSV
    """
    lines = [_HEADER]
    for qid in sorted(qrels):
        for doc in sorted(qrels[qid]):
            for name in (qid, doc):
                if any(c in name for c in "\t\r\n") or not name.strip():
                    raise InvalidInputError(
                        f"id {name!r} holds a tab or a line break: it cannot be written to a qrels TSV"
                    )
            lines.append(f"{qid}\t{doc}\t{int(qrels[qid][doc])}")
    atomic_write_text(path, "\n".join(lines) + "\n")


def labels_digest(qrels: Mapping[str, Mapping[str, int]], questions: Mapping[str, str]) -> str:
    """A short hash of the labels and the labelled questions' texts (what a labelled run's records depend on).

    Examples:
        >>> a = labels_digest({"q": {"d1": 1}}, {"q": "why?"})
        >>> a == labels_digest({"q": {"d1": 1}}, {"q": "why?", "other": "unlabelled"}), a == labels_digest({"q": {"d2": 1}}, {"q": "why?"})
        (True, False)
    """
    labelled = {q: {d: int(g) for d, g in sorted(qrels[q].items())} for q in sorted(qrels)}
    texts = {q: questions[q] for q in sorted(labelled) if q in questions}
    text = json.dumps({"qrels": labelled, "questions": texts}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def labels_needed(half_width: float) -> int:
    """Labelled questions (each with a relevant passage in the corpus) for a 95 % interval of about
    ``+-half_width`` on the AUC: ``(HALF_WIDTH_AT_ONE / half_width)^2``, at least 20 (advise's minimum).

    Examples:
        >>> labels_needed(0.05), labels_needed(0.2)
        (214, 20)
        >>> labels_needed(0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: the interval's half-width must be a number in (0, 0.5), got 0
    """
    if isinstance(half_width, bool) or not isinstance(half_width, int | float) or not 0 < half_width < 0.5:
        raise InvalidInputError(f"the interval's half-width must be a number in (0, 0.5), got {half_width!r}")
    return max(20, math.ceil((HALF_WIDTH_AT_ONE / half_width) ** 2))
