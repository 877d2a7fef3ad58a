"""What ``retrievekit advise`` asks its models, written once as steps (:mod:`retrievekit.core.llm.calls`).

Two models, two steps, each free of I/O and sent by the drivers (:mod:`retrievekit.core.llm.drivers`):

* :func:`question_step` -- the question writer (label-free mode): one chat call per sampled document, its reply's
  first line the question (the document's first words when the reply is empty, noted as a fallback).
* :func:`probe_step` -- the judge: one judge call for the probe's documents, then, when those scores are usable, one
  for its summaries. A reply the judge hook refuses as NaN or infinite
  (:data:`~retrievekit.core.llm.judge_hooks.NON_FINITE_SCORES`) leaves the question out (None); any other unusable
  reply is an ``InvalidInputError`` naming the judge.

:func:`write_question` drives the first with :func:`~retrievekit.core.llm.drivers.drive`, :func:`awrite_question`
awaits it with :func:`~retrievekit.core.llm.drivers.adrive`; :class:`AdviseJob` does one question either way
(``run`` / ``arun``), which ``advise`` and ``aadvise`` repeat over the planned questions.

Examples:
    >>> from retrievekit.core.fakes import FixedReplyLLM, WordJudge
    >>> from retrievekit.core.llm.drivers import drive
    >>> from retrievekit.core.types import Passage
    >>> drive(question_step(Passage(id="a", text="Aspirin cuts fever.")), FixedReplyLLM("What cuts fever?"))
    'What cuts fever?'
    >>> from retrievekit.core.eval.advise_probes import Probe
    >>> probe = Probe("q1", "aspirin?", ["aspirin", "rome"], [1, 0], ["aspirin and rain"], [1])
    >>> drive(probe_step(probe, "WordJudge"), WordJudge("aspirin"))["doc_scores"]
    [0.9, 0.2]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.eval.advise_probes import Probe, probe_for_document
from retrievekit.core.eval.question_style import QuestionStyle, style_prompt
from retrievekit.core.eval.records import QueryRecord
from retrievekit.core.llm.bridge import run_in_pool
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.judge_hooks import NON_FINITE_SCORES
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["QUESTION_PROMPT", "AdviseJob", "awrite_question", "probe_step", "question_step", "write_question"]

QUESTION_PROMPT = (
    "Write one short search question that the document below answers. Reply with the question only.\n\n"
    "Document: {document}"
)


def question_step(doc: DataObject, *, trace: Trace | None = None, style: QuestionStyle | None = None) -> Step[str]:
    """The question writer as a step: one chat call (48 tokens) for ``doc``; its reply's first line, else (an
    empty reply) the document's first words, noted in ``trace`` as a fallback. With ``style`` (the user's questions
    measured), the prompt asks for a question like theirs (:func:`~retrievekit.core.eval.question_style.style_prompt`).

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> from retrievekit.core.llm.drivers import drive
        >>> from retrievekit.core.types import Passage
        >>> drive(question_step(Passage(id="a", text="Aspirin cuts fever in adults.")), FixedReplyLLM(""))
        'Aspirin cuts fever in adults.'
    """
    text = " ".join(doc.index_text().split()[:220])
    prompt = QUESTION_PROMPT.format(document=text) if style is None else style_prompt(style, text)
    (reply,) = yield [ModelCall.chat("advise.question", prompt, max_tokens=48)]
    if isinstance(reply, BaseException):
        raise reply
    lines = [line.strip().strip('"') for line in str(reply.text).splitlines() if line.strip()]
    if lines:
        return lines[0][:300]
    if trace is not None:
        trace.note("fallback", f"empty question for document {doc.id}; using its first words")
    return " ".join(text.split()[:12])


def write_question(llm: Any, doc: DataObject, *, trace: Trace | None = None, style: QuestionStyle | None = None) -> str:
    """A question the LLM writes for ``doc`` (its first line); the document's first words when the reply is empty
    (:func:`question_step`, driven).

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> from retrievekit.core.types import Passage
        >>> write_question(FixedReplyLLM("What cuts fever?\\nmore"), Passage(id="a", text="Aspirin cuts fever."))
        'What cuts fever?'
    """
    return drive(question_step(doc, trace=trace, style=style), llm, trace=trace)


async def awrite_question(
    llm: Any, doc: DataObject, *, trace: Trace | None = None, style: QuestionStyle | None = None
) -> str:
    """:func:`write_question` awaited (a served LLM's request on the caller's loop; cancelled with the task).

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> from retrievekit.core.types import Passage
        >>> asyncio.run(awrite_question(FixedReplyLLM("Why?"), Passage(id="a", text="Because.")))
        'Why?'
    """
    return await adrive(question_step(doc, trace=trace, style=style), llm, trace=trace)


def _scores_step(
    question: str, texts: Sequence[str], refs: Sequence[Sequence[str]], judge_name: str
) -> Step[list[float] | None]:
    """One judge call (with the ids each text stands for, when known): its scores, or None when the judge scored NaN
    or infinite."""
    (got,) = yield [ModelCall.judge(question, list(texts), refs=[set(r) for r in refs] or None)]
    if isinstance(got, LLMOutputError) and str(got) == NON_FINITE_SCORES:
        return None
    if isinstance(got, LLMOutputError):
        raise InvalidInputError(f"judge {judge_name} gave unusable scores: {got}") from got
    if isinstance(got, BaseException):
        raise got
    return [float(s) for s in got]


def probe_step(probe: Probe, judge_name: str) -> Step[dict[str, Any] | None]:
    """The judge's work on one probe as a step: its documents, then its summaries (module docstring); the record's
    fields, or None when the question is left out.

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> from retrievekit.core.llm.drivers import drive
        >>> probe = Probe("q1", "aspirin?", ["aspirin"], [1], ["rome"], [0])
        >>> drive(probe_step(probe, "WordJudge"), WordJudge("aspirin"))["summary_scores"]
        [0.2]
    """
    docs = yield from _scores_step(probe.question, probe.doc_texts, probe.doc_refs, judge_name)
    if docs is None:
        return None
    sums = yield from _scores_step(probe.question, probe.summary_texts, probe.summary_refs, judge_name)
    if sums is None:
        return None
    return {
        "question": probe.question,
        "doc_scores": docs,
        "doc_labels": probe.doc_labels,
        "summary_scores": sums,
        "summary_labels": probe.summary_labels,
        "pairs": probe.n_pairs,
    }


class AdviseJob:
    """What judging one planned item needs (the judge, the question writer, the first stage, the corpus), and the
    item judged: sync (:meth:`run`) or awaited (:meth:`arun`), the same steps.

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> probe = Probe("q1", "aspirin?", ["aspirin", "rome"], [1, 0], ["aspirin", "rome"], [1, 0])
        >>> record = AdviseJob(WordJudge("aspirin"), None, None, [], 1).run(probe, "q1")
        >>> record.qid, record.extra["doc_scores"]
        ('q1', [0.9, 0.2])
    """

    def __init__(
        self,
        judge: RelevanceJudge,
        writer: Any,
        index: Retriever,
        corpus: Sequence[DataObject],
        negatives: int,
        style: QuestionStyle | None = None,
    ) -> None:
        self.judge, self.writer, self.index, self.corpus, self.negatives = judge, writer, index, corpus, negatives
        self.style = style

    def run(self, item: Any, qid: str) -> QueryRecord | str:
        """One question judged: its record, or why not (``"no probe"``, ``"not finite"``: a score NaN or
        infinite)."""
        trace = Trace()
        extra: dict[str, Any] = {}
        probe = item
        if not isinstance(item, Probe):  # label-free: the LLM writes the question first
            question = write_question(self.writer, item, trace=trace, style=self.style)
            extra = _write_cost(trace) | {"question": question}
            probe = probe_for_document(question, item, self.index, self.corpus, negatives=self.negatives)
        if probe is None:
            return "no probe"
        start = time.perf_counter()
        judged = drive(probe_step(probe, repr(self.judge)), self.judge, trace=trace)
        return _record(qid, trace, extra, judged, time.perf_counter() - start)

    async def arun(self, item: Any, qid: str) -> QueryRecord | str:
        """:meth:`run` awaited: the writer's and the judge's calls on the caller's loop (a served model's requests
        as its tasks), the first stage's search on the bridge's bounded pool."""
        trace = Trace()
        extra: dict[str, Any] = {}
        probe = item
        if not isinstance(item, Probe):
            question = await awrite_question(self.writer, item, trace=trace, style=self.style)
            extra = _write_cost(trace) | {"question": question}
            probe = await run_in_pool(self._probe_for, question, item)
        if probe is None:
            return "no probe"
        start = time.perf_counter()
        judged = await adrive(probe_step(probe, repr(self.judge)), self.judge, trace=trace)
        return _record(qid, trace, extra, judged, time.perf_counter() - start)

    def _probe_for(self, question: str, doc: DataObject) -> Probe | None:
        return probe_for_document(question, doc, self.index, self.corpus, negatives=self.negatives)


def _write_cost(trace: Trace) -> dict[str, Any]:
    return {"write_calls": trace.llm_calls, "write_tokens": trace.prompt_tokens + trace.completion_tokens}


def _record(
    qid: str, trace: Trace, extra: dict[str, Any], judged: dict[str, Any] | None, seconds: float
) -> QueryRecord | str:
    if judged is None:
        return "not finite"
    record = QueryRecord(qid=qid, llm_calls=trace.llm_calls, prompt_tokens=trace.prompt_tokens)
    record.completion_tokens, record.extra = trace.completion_tokens, extra | judged | {"judge_seconds": seconds}
    return record
