"""``retrievekit advise``: an LLM's judge AUC on the user's own corpus, and which judged method pays off with it.

:func:`advise` runs in numbered steps:

1. **Plan the bound.** Each question costs one judge call per judged text (``1 + negatives`` documents and as many
   LATTICE-style summaries) plus, without labels, one call to write the question; the number of questions is what
   ``max_calls`` (default 200) allows, stated before anything is sent.
2. **Probes.** With labels (``qrels``, at least :data:`MIN_LABELLED` labelled questions whose relevant documents are
   in the corpus, else refused): the labelled questions, a gold document positive. Without: documents sampled from
   the corpus, a question written for each by the LLM, the document positive
   (:mod:`retrievekit.core.eval.advise_probes`); given the user's ``questions`` (no labels), the writer imitates
   them: their length, punctuation and share of the document's words, measured and reported beside the written
   ones' (:mod:`retrievekit.core.eval.question_style`). The first stage's (BM25, or hybrid) hard negatives either
   way.
3. **Judge** every probe's texts (a progress bar on stderr), one record per question in ``records`` (a
   :class:`~retrievekit.core.eval.records.RecordFile` whose settings hold the judge, the corpus's and the labels'
   digests): a rerun with the same settings resumes where it stopped. A question the judge scores NaN or infinite
   is left out (and not recorded, so a rerun asks again); no usable pairs, no advice
   (:class:`~retrievekit.core.errors.InvalidInputError`).
4. **Estimate** the ROC AUC on documents and on summaries, pooled over the questions, with a 95 % bootstrap interval
   over questions, and the measured cost of one judged pair (calls, tokens, seconds). An interval that holds 0.5 is
   a judge no better than chance, said first.
5. **Place** the estimate on the measured curves (:mod:`retrievekit.core.eval.payoff_curves`): per method, pays off
   or not, the expected quality beside the first stage's, and the cost per query at the method's judged items. A
   label-free estimate gets no verdict: its interval is widened by the validation's largest error
   (:data:`LABEL_FREE_ERROR`).

The model calls (the question writer's, the judge's) are steps of :mod:`retrievekit.core.eval.advise_steps`, sent by
the drivers: :func:`advise` drives them sync, :func:`aadvise` awaits them on the caller's loop.

Examples:
    >>> plan_questions(200, negatives=3, labelled=False)
    (22, 9)
    >>> plan_questions(200, negatives=3, labelled=True)
    (25, 8)
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.advise_probes import Probe, labelled_probes, labelled_questions, sample_documents
from retrievekit.core.eval.advise_report import (
    LABEL_FREE_CAVEAT,
    LABEL_FREE_ERROR,
    auc_interval,
    chance_kinds,
    methods_rows,
    render_advice,
    style_words,
)
from retrievekit.core.eval.advise_steps import QUESTION_PROMPT, AdviseJob, awrite_question, write_question
from retrievekit.core.eval.labels import labels_digest
from retrievekit.core.eval.question_style import QuestionStyle, style_match, style_of
from retrievekit.core.eval.records import QueryRecord, RecordFile, run_signature
from retrievekit.core.index.baselines import corpus_fingerprint
from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.retriever import Retriever
from retrievekit.core.types import DataObject

__all__ = [
    "LABEL_FREE_CAVEAT",
    "LABEL_FREE_ERROR",
    "MIN_LABELLED",
    "QUESTION_PROMPT",
    "aadvise",
    "advise",
    "advise_settings",
    "awrite_question",
    "plan_questions",
    "render_advice",
    "write_question",
]

MIN_LABELLED = 20
"""Labelled questions the labelled mode needs (fewer give an interval too wide to act on)."""


def plan_questions(max_calls: int, *, negatives: int, labelled: bool) -> tuple[int, int]:
    """``(questions, calls per question)`` within ``max_calls``.

    Examples:
        >>> plan_questions(5, negatives=3, labelled=False)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --max-calls 5 cannot pay for one question (9 calls each: 8 judged texts and 1 question written)
    """
    per = 2 * (1 + int(negatives)) + (0 if labelled else 1)
    if int(negatives) < 1:
        raise InvalidInputError(f"negatives must be >= 1, got {negatives}")
    if int(max_calls) < per:
        what = f"{per - (0 if labelled else 1)} judged texts" + ("" if labelled else " and 1 question written")
        raise InvalidInputError(f"--max-calls {max_calls} cannot pay for one question ({per} calls each: {what})")
    return int(max_calls) // per, per


def _pair_cost(records: Sequence[QueryRecord]) -> dict[str, float]:
    pairs = max(1, sum(int(r.extra["pairs"]) for r in records))
    judge_calls = sum(r.llm_calls - int(r.extra.get("write_calls", 0)) for r in records)
    return {
        "calls": judge_calls / pairs,
        "tokens": sum(r.prompt_tokens + r.completion_tokens - int(r.extra.get("write_tokens", 0)) for r in records)
        / pairs,
        "seconds": sum(float(r.extra["judge_seconds"]) for r in records) / pairs,
    }


def _usable_labels(
    questions: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], corpus: Sequence[DataObject]
) -> dict[str, dict[str, int]]:
    """The labels of questions that have a text and a relevant document in the corpus; fewer than
    :data:`MIN_LABELLED` are refused, saying why the others cannot be used."""
    ids = {o.id for o in corpus}
    labelled = {q: dict(g) for q, g in qrels.items() if any(v > 0 for v in g.values())}
    usable = {q: g for q, g in labelled.items() if q in questions and any(v > 0 and d in ids for d, v in g.items())}
    if len(usable) >= MIN_LABELLED:
        return usable
    no_text = sorted(q for q in labelled if q not in questions)
    missing = sorted({d for q, g in labelled.items() if q in questions for d, v in g.items() if v > 0 and d not in ids})
    why = [f"{len(labelled)} questions have a relevant label"]
    if no_text:
        why.append(f"{len(no_text)} of them are not among the questions (e.g. {no_text[0]!r})")
    if missing:
        why.append(f"{len(missing)} relevant ids are not in the corpus (e.g. {missing[0]!r})")
    raise InvalidInputError(
        f"the labelled mode needs at least {MIN_LABELLED} labelled questions, got {len(usable)} with a text and a "
        f"relevant document in the corpus ({'; '.join(why)}): label more (retrievekit label), check that the "
        "labels name this corpus's ids, or run without --qrels (questions written by the LLM)"
    )


def _first_stage(first_stage: str | Retriever, corpus: Sequence[DataObject]) -> tuple[Retriever, str]:
    if isinstance(first_stage, str):
        if first_stage not in ("bm25", "hybrid"):
            raise InvalidInputError(f"first_stage must be 'bm25' or 'hybrid' (or a retriever), got {first_stage!r}")
        return build_method(first_stage, MethodContext(corpus=list(corpus))), first_stage
    return first_stage, type(first_stage).__name__


def advise_settings(
    judge: RelevanceJudge,
    corpus: Sequence[DataObject],
    *,
    qrels: Mapping[str, Mapping[str, int]] | None,
    questions: Mapping[str, str] | None,
    max_calls: int,
    negatives: int,
    seed: int,
    first_stage: str = "bm25",
) -> dict[str, Any]:
    """The settings a run's record file holds: a rerun resumes only under the same ones (the same judge, corpus,
    labels and bound).

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id="a", text="x"), Passage(id="b", text="y")]
        >>> one = advise_settings(WordJudge("x"), docs, qrels={"q": {"a": 1}}, questions={"q": "x?"}, max_calls=200,
        ...                       negatives=3, seed=0)
        >>> two = advise_settings(WordJudge("x"), docs, qrels={"q": {"b": 1}}, questions={"q": "x?"}, max_calls=200,
        ...                       negatives=3, seed=0)
        >>> one["labels"] == two["labels"], one["corpus_digest"] == two["corpus_digest"]
        (False, True)
    """
    mode = "labelled" if qrels is not None else "label-free"
    settings = {"tool": "advise", "mode": mode, "judge": repr(judge), "max_calls": max_calls, "negatives": negatives}
    settings |= {"seed": seed, "corpus": len(corpus), "corpus_digest": corpus_fingerprint(corpus)}
    settings |= {"first_stage": first_stage}
    if qrels is not None:
        settings["labels"] = labels_digest(qrels, questions or {})
    elif questions:  # label-free, imitating these questions
        settings["imitates"] = _questions_digest(questions)
    return settings


def _questions_digest(questions: Mapping[str, str]) -> str:
    text = json.dumps(sorted(questions.values()), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def advise(
    corpus: Sequence[DataObject],
    judge: RelevanceJudge,
    *,
    question_llm: Any = None,
    questions: Mapping[str, str] | None = None,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    max_calls: int = 200,
    negatives: int = 3,
    records: str | Path | None = None,
    records_dir: str | Path | None = None,
    first_stage: str | Retriever = "bm25",
    seed: int = 0,
    progress: bool = True,
    say: Callable[[str], None] | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Estimate ``judge``'s AUC on ``corpus`` and place it on the measured curves (module docstring's steps).

    Without ``qrels``, ``question_llm`` (a chat LLM) writes the questions, imitating ``questions`` when given (the
    report's ``style``: theirs and the written ones measured alike). ``records`` is the record file;
    ``records_dir`` a folder for one named by the run's settings (``advise-<signature>.jsonl``: a rerun of the same
    run resumes, another run starts its own). ``first_stage`` gives the hard negatives: ``"bm25"``, ``"hybrid"`` or
    a retriever over ``corpus``. Returns the report (:func:`render_advice` prints it).

    Raises:
        InvalidInputError: a corpus under 2 documents, too few usable labels, or no usable pairs (the judge scored
            every question NaN or infinite, or no question has a negative): no advice on nothing.

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> advise([], WordJudge("x"), qrels={}, questions={})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: advise needs a corpus of at least 2 documents, got 0
    """
    plan = _plan(
        corpus,
        judge,
        question_llm,
        questions,
        qrels,
        max_calls,
        negatives,
        records,
        records_dir,
        first_stage,
        seed,
        say,
    )
    done, left_out = _judge_all(plan, progress, stream)
    style = _style_report(plan, done)
    return _report(
        done, left_out, mode=plan.mode, judge=judge, max_calls=max_calls, seed=seed, records=plan.records, style=style
    )


async def aadvise(
    corpus: Sequence[DataObject],
    judge: RelevanceJudge,
    *,
    question_llm: Any = None,
    questions: Mapping[str, str] | None = None,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    max_calls: int = 200,
    negatives: int = 3,
    records: str | Path | None = None,
    records_dir: str | Path | None = None,
    first_stage: str | Retriever = "bm25",
    seed: int = 0,
    progress: bool = True,
    say: Callable[[str], None] | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """:func:`advise` awaited: the same plan (built on the bridge's bounded pool: the first stage's index and
    searches) and the same steps, the question writer's and the judge's calls awaited on the caller's loop (a served
    model's requests as its tasks, no thread per request); cancelling the awaiting task cancels the requests in
    flight and sends no more (the questions already judged stay in ``records``).

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import WordJudge
        >>> asyncio.run(aadvise([], WordJudge("x"), qrels={}, questions={}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: advise needs a corpus of at least 2 documents, got 0
    """
    plan = await run_off_loop(
        _plan,
        corpus,
        judge,
        question_llm,
        questions,
        qrels,
        max_calls,
        negatives,
        records,
        records_dir,
        first_stage,
        seed,
        say,
    )
    tally = _Tally(plan, progress, stream)
    try:
        for item in plan.items:
            qid = _qid(item)
            tally.add(qid, tally.known(qid) or await plan.job.arun(item, qid))
    finally:
        done, left_out = tally.close()
    style = await run_off_loop(_style_report, plan, done)
    report = functools.partial(_report, mode=plan.mode, judge=judge, max_calls=max_calls, seed=seed, style=style)
    return await run_off_loop(report, done, left_out, records=plan.records)


@dataclass
class _Plan:
    """Steps 1-2 done: the items to judge, the job that judges one, the record file and its settings."""

    items: list[Any]
    job: AdviseJob
    records: str | Path | None
    settings: dict[str, Any]
    mode: str
    unprobed: int = 0  # labelled questions drawn that have no hard negative (no probe): counted, not judged
    style: QuestionStyle | None = None  # label-free with the user's questions: how they read, imitated


def _plan(
    corpus: Sequence[DataObject],
    judge: RelevanceJudge,
    question_llm: Any,
    questions: Mapping[str, str] | None,
    qrels: Mapping[str, Mapping[str, int]] | None,
    max_calls: int,
    negatives: int,
    records: str | Path | None,
    records_dir: str | Path | None,
    first_stage: str | Retriever,
    seed: int,
    say: Callable[[str], None] | None,
) -> _Plan:
    """Steps 1 and 2 (the bound, stated before anything is sent; the probes) and the record file's settings."""
    if len(corpus) < 2:
        raise InvalidInputError(f"advise needs a corpus of at least 2 documents, got {len(corpus)}")
    if qrels is None and question_llm is None:
        raise InvalidInputError("without qrels, advise needs question_llm (the LLM that writes the questions)")
    say = say or (lambda line: print(line, file=sys.stderr))
    usable = _usable_labels(questions or {}, qrels, corpus) if qrels is not None else None
    n, per = plan_questions(max_calls, negatives=negatives, labelled=qrels is not None)
    mode = "labelled" if qrels is not None else "label-free"
    say(f"advise ({mode}): {n} questions x {per} calls = at most {n * per} LLM calls (--max-calls {max_calls})")
    index, stage = _first_stage(first_stage, corpus)  # the hard negatives and the summaries' groups
    style = None
    if usable is None:
        items: list[Any] = sample_documents(corpus, n, seed=seed)
        if questions:
            style = style_of(list(questions.values()), index, seed=seed)
            say(f"imitating your {len(questions)} questions: {style_words(style.as_dict())}")
    else:
        items = labelled_probes(questions or {}, usable, corpus, index, n, negatives=negatives, seed=seed)
        unprobed = min(n, len(labelled_questions(questions or {}, usable, corpus))) - len(items)
    settings = advise_settings(
        judge,
        corpus,
        qrels=usable,
        questions=questions,
        max_calls=max_calls,
        negatives=negatives,
        seed=seed,
        first_stage=stage,
    )
    if records is None and records_dir is not None:
        records = Path(records_dir) / f"advise-{run_signature(settings)}.jsonl"
        say(f"records: {records} (a rerun with the same settings resumes from them)")
    job = AdviseJob(judge, question_llm, index, corpus, negatives, style)
    return _Plan(items, job, records, settings, mode, unprobed if usable is not None else 0, style)


def _report(
    done: Sequence[QueryRecord],
    left_out: Mapping[str, int],
    *,
    mode: str,
    judge: RelevanceJudge,
    max_calls: int,
    seed: int,
    records: str | Path | None,
    style: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Steps 4 and 5: the estimate, its cost, and the curves; refused without usable pairs."""
    rows = [r.extra for r in done]
    auc = {"documents": auc_interval(rows, "doc", seed), "summaries": auc_interval(rows, "summary", seed)}
    not_finite, no_negatives = left_out.get("not finite", 0), left_out.get("no probe", 0)
    if any(a["auc"] is None for a in auc.values()):
        why = f"{not_finite} questions were scored NaN or infinite by the judge" if not_finite else "no question had"
        why += "" if not_finite else f" both a positive and a negative text ({no_negatives} had no hard negative)"
        raise InvalidInputError(
            f"advise has no usable pairs to estimate {judge!r}'s AUC from ({len(done)} usable questions; {why}): "
            "no advice. Check the judge (a served judge must return finite log-probabilities) and the corpus."
        )
    cost = _pair_cost(done)
    widened = {}
    if mode == "label-free":
        widened = {
            k: [max(0.0, a["low"] - LABEL_FREE_ERROR[k]), min(1.0, a["high"] + LABEL_FREE_ERROR[k])]
            for k, a in auc.items()
        }
    return {
        "mode": mode,
        "judge": repr(judge),
        "questions": len(done),
        "left_out": not_finite,
        "no_negatives": no_negatives,
        "llm_calls": sum(r.llm_calls for r in done),
        "max_calls": max_calls,
        "auc": auc,
        "widened": widened,
        "no_better_than_chance": chance_kinds(auc),
        "cost_per_pair": cost,
        "records": None if records is None else str(records),
        "style": style,
        "methods": methods_rows(auc["documents"]["auc"], auc["summaries"]["auc"], cost, verdict=mode == "labelled"),
    }


def _style_report(plan: _Plan, done: Sequence[QueryRecord]) -> dict[str, Any] | None:
    """Label-free with the user's questions: theirs and the written ones measured alike (None otherwise)."""
    if plan.style is None:
        return None
    by_id = {o.id: o for o in plan.job.corpus}
    written = [
        (str(r.extra["question"]), by_id[r.qid.removeprefix("doc:")].index_text())
        for r in done
        if "question" in r.extra and r.qid.removeprefix("doc:") in by_id
    ]
    return style_match(plan.style, written) | {"examples": list(plan.style.examples)}


def _qid(item: Any) -> str:
    return item.qid if isinstance(item, Probe) else f"doc:{item.id}"


class _Tally:
    """Step 3's bookkeeping: the records read back (a rerun resumes), those written, the questions left out, the
    progress bar."""

    def __init__(self, plan: _Plan, progress: bool, stream: TextIO | None) -> None:
        from tqdm.auto import tqdm

        self.file = RecordFile(plan.records, plan.settings) if plan.records is not None else None
        self.done = dict(self.file.done()) if self.file is not None else {}
        self.out: list[QueryRecord] = []
        self.left_out = {"not finite": 0, "no probe": plan.unprobed}
        self.bar = tqdm(total=len(plan.items), desc="advise", file=stream or sys.stderr, disable=not progress)

    def known(self, qid: str) -> QueryRecord | None:
        """The question's record read back from the file, if any."""
        return self.done.get(qid)

    def add(self, qid: str, record: QueryRecord | str) -> None:
        """One question done: its record kept (and written, unless read back), or counted as left out."""
        if isinstance(record, QueryRecord):
            if self.file is not None and qid not in self.done:
                self.file.append(record)
            self.out.append(record)
        if isinstance(record, str):
            self.left_out[record] += 1
        self.bar.update(1)

    def close(self) -> tuple[list[QueryRecord], dict[str, int]]:
        self.bar.close()
        return self.out, self.left_out


def _judge_all(plan: _Plan, progress: bool, stream: TextIO | None) -> tuple[list[QueryRecord], dict[str, int]]:
    """Every item judged or read back from the records; returns the records and how many were left out, by why."""
    tally = _Tally(plan, progress, stream)
    try:
        for item in plan.items:
            qid = _qid(item)
            tally.add(qid, tally.known(qid) or plan.job.run(item, qid))
    finally:
        done = tally.close()
    return done
