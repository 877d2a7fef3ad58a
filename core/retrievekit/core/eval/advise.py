"""``retrievekit advise``: an LLM's judge AUC on the user's own corpus, and which judged method pays off with it.

:func:`advise` runs in numbered steps:

1. **Plan the bound.** Each question costs one judge call per judged text (``1 + negatives`` documents and as many
   LATTICE-style summaries) plus, without labels, one call to write the question; the number of questions is what
   ``max_calls`` (default 200) allows, stated before anything is sent.
2. **Probes.** With labels (``qrels``, at least :data:`MIN_LABELLED` labelled questions, else refused): the labelled
   questions, a gold document positive. Without: documents sampled from the corpus, a question written for each by
   the LLM, the document positive (:mod:`retrievekit.core.eval.advise_probes`). BM25's hard negatives either way.
3. **Judge** every probe's texts (a progress bar on stderr), one record per question in ``records`` (a
   :class:`~retrievekit.core.eval.records.RecordFile`): a rerun with the same settings resumes where it stopped.
4. **Estimate** the ROC AUC on documents and on summaries, pooled over the questions, with a 95 % bootstrap interval
   over questions, and the measured cost of one judged pair (calls, tokens, seconds).
5. **Place** the estimate on the measured curves (:mod:`retrievekit.core.eval.payoff_curves`): per method, pays off
   or not, the expected quality beside the first stage's, and the cost per query at the method's judged items.

Examples:
    >>> plan_questions(200, negatives=3, labelled=False)
    (22, 9)
    >>> plan_questions(200, negatives=3, labelled=True)
    (25, 8)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.advise_probes import Probe, labelled_probes, probe_for_document, sample_documents
from retrievekit.core.eval.judge_accuracy import roc_auc
from retrievekit.core.eval.payoff_curves import CURVES, expected_quality, pays_off
from retrievekit.core.eval.records import QueryRecord, RecordFile
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = [
    "LABEL_FREE_CAVEAT",
    "MIN_LABELLED",
    "QUESTION_PROMPT",
    "advise",
    "plan_questions",
    "render_advice",
    "write_question",
]

MIN_LABELLED = 20
"""Labelled questions the labelled mode needs (fewer give an interval too wide to act on)."""

QUESTION_PROMPT = (
    "Write one short search question that the document below answers. Reply with the question only.\n\n"
    "Document: {document}"
)


LABEL_FREE_CAVEAT = (
    "caution: a label-free estimate is not the advice to act on. Questions written from one document are easier than "
    "real ones, and in validation most label-free estimates missed the AUC measured with labels by more than 0.05 "
    "(docs/advise.md, 'Validation'). Label 20 or more questions and run with --qrels."
)
"""The line a label-free report starts with: the labelled mode is the advice."""


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


def write_question(llm: Any, doc: DataObject, *, trace: Trace | None = None) -> str:
    """A question the LLM writes for ``doc`` (its first line); the document's first words when the reply is empty.

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> from retrievekit.core.types import Passage
        >>> write_question(FixedReplyLLM("What cuts fever?\\nmore"), Passage(id="a", text="Aspirin cuts fever."))
        'What cuts fever?'
    """
    text = " ".join(doc.index_text().split()[:220])
    reply = llm.complete(QUESTION_PROMPT.format(document=text), max_tokens=48, trace=trace).text
    lines = [line.strip().strip('"') for line in str(reply).splitlines() if line.strip()]
    if lines:
        return lines[0][:300]
    if trace is not None:
        trace.note("fallback", f"empty question for document {doc.id}; using its first words")
    return " ".join(text.split()[:12])


def _judge_probe(judge: RelevanceJudge, probe: Probe, trace: Trace) -> dict[str, Any]:
    start = time.perf_counter()
    docs = judge.score_relevance(probe.question, probe.doc_texts, trace=trace)
    sums = judge.score_relevance(probe.question, probe.summary_texts, trace=trace)
    return {
        "question": probe.question,
        "doc_scores": [float(s) for s in docs],
        "doc_labels": probe.doc_labels,
        "summary_scores": [float(s) for s in sums],
        "summary_labels": probe.summary_labels,
        "pairs": probe.n_pairs,
        "judge_seconds": time.perf_counter() - start,
    }


def _auc_interval(rows: Sequence[Mapping[str, Any]], kind: str, seed: int) -> dict[str, Any]:
    def pooled(chosen: Sequence[Mapping[str, Any]]) -> float | None:
        scores = [s for r in chosen for s in r[f"{kind}_scores"]]
        return roc_auc(scores, [y for r in chosen for y in r[f"{kind}_labels"]])

    auc = pooled(rows)
    rng = np.random.default_rng(seed)
    boots = [pooled([rows[i] for i in rng.integers(0, len(rows), len(rows))]) for _ in range(1000)] if rows else []
    got = sorted(b for b in boots if b is not None)
    lo, hi = (got[int(0.025 * len(got))], got[int(0.975 * len(got)) - 1]) if got else (None, None)
    return {"auc": auc, "low": lo, "high": hi, "pairs": sum(len(r[f"{kind}_scores"]) for r in rows)}


def _pair_cost(records: Sequence[QueryRecord]) -> dict[str, float]:
    pairs = max(1, sum(int(r.extra["pairs"]) for r in records))
    judge_calls = sum(r.llm_calls - int(r.extra.get("write_calls", 0)) for r in records)
    return {
        "calls": judge_calls / pairs,
        "tokens": sum(r.prompt_tokens + r.completion_tokens - int(r.extra.get("write_tokens", 0)) for r in records)
        / pairs,
        "seconds": sum(float(r.extra["judge_seconds"]) for r in records) / pairs,
    }


def _methods(doc_auc: float | None, summary_auc: float | None, cost: Mapping[str, float]) -> list[dict[str, Any]]:
    rows = []
    for c in CURVES:
        aucs = [doc_auc] if c.auc_on == "documents" else [doc_auc, summary_auc]
        known = [a for a in aucs if a is not None]
        auc = min(known) if known else None
        rows.append(
            {
                "method": c.method,
                "measured_on": c.dataset,
                "metric": c.metric,
                "judge_auc_used": auc,
                "pays_off": bool(auc is not None and pays_off(c, auc)),
                "threshold": c.threshold,
                "expected": expected_quality(c, auc) if auc is not None else None,
                "first_stage": c.first_stage,
                "first_stage_quality": c.first_stage_quality,
                "calls_per_query": c.items_per_query * cost["calls"],
                "tokens_per_query": c.items_per_query * cost["tokens"],
                "seconds_per_query": c.items_per_query * cost["seconds"],
                "note": c.note,
            }
        )
    return rows


def _probes(
    corpus: Sequence[DataObject],
    index: BM25Index,
    n: int,
    *,
    qrels: Mapping[str, Mapping[str, int]] | None,
    questions: Mapping[str, str] | None,
    negatives: int,
    seed: int,
) -> list[Any]:
    """Labelled probes, or the sampled documents a question is still to be written for."""
    if qrels is None:
        return sample_documents(corpus, n, seed=seed)
    labelled = [q for q in (questions or {}) if any(g > 0 for g in qrels.get(q, {}).values())]
    if len(labelled) < MIN_LABELLED:
        raise InvalidInputError(
            f"the labelled mode needs at least {MIN_LABELLED} labelled questions, got {len(labelled)}: label more, "
            "or run without --qrels (questions written by the LLM)"
        )
    return labelled_probes(questions or {}, qrels, corpus, index, n, negatives=negatives, seed=seed)


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
    seed: int = 0,
    progress: bool = True,
    say: Callable[[str], None] | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Estimate ``judge``'s AUC on ``corpus`` and place it on the measured curves (module docstring's steps).

    Without ``qrels``, ``question_llm`` (a chat LLM) writes the questions. Returns the report
    (:func:`render_advice` prints it).

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> advise([], WordJudge("x"), qrels={}, questions={})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: advise needs a corpus of at least 2 documents, got 0
    """
    if len(corpus) < 2:
        raise InvalidInputError(f"advise needs a corpus of at least 2 documents, got {len(corpus)}")
    if qrels is None and question_llm is None:
        raise InvalidInputError("without qrels, advise needs question_llm (the LLM that writes the questions)")
    say = say or (lambda line: print(line, file=sys.stderr))
    # 1. the bound, stated before anything is sent
    n, per = plan_questions(max_calls, negatives=negatives, labelled=qrels is not None)
    mode = "labelled" if qrels is not None else "label-free"
    say(f"advise ({mode}): {n} questions x {per} calls = at most {n * per} LLM calls (--max-calls {max_calls})")
    # 2. the probes (BM25 for the hard negatives and the summaries' groups)
    index = BM25Index.build(corpus)
    items = _probes(corpus, index, n, qrels=qrels, questions=questions, negatives=negatives, seed=seed)
    # 3. judged, one record per question (a rerun resumes)
    settings = {"tool": "advise", "mode": mode, "judge": repr(judge), "max_calls": max_calls, "negatives": negatives}
    settings |= {"seed": seed, "corpus": len(corpus)}
    done = _judge_all(items, judge, question_llm, index, corpus, negatives, records, settings, progress, stream)
    # 4. the estimate and the cost of one judged pair
    rows = [r.extra for r in done]
    doc, summ = _auc_interval(rows, "doc", seed), _auc_interval(rows, "summary", seed)
    cost = _pair_cost(done)
    calls = sum(r.llm_calls for r in done)
    # 5. placed on the curves
    return {
        "mode": mode,
        "judge": repr(judge),
        "questions": len(done),
        "llm_calls": calls,
        "max_calls": max_calls,
        "auc": {"documents": doc, "summaries": summ},
        "cost_per_pair": cost,
        "methods": _methods(doc["auc"], summ["auc"], cost),
    }


def _judge_all(
    items: Sequence[Any],
    judge: RelevanceJudge,
    question_llm: Any,
    index: BM25Index,
    corpus: Sequence[DataObject],
    negatives: int,
    records: str | Path | None,
    settings: Mapping[str, Any],
    progress: bool,
    stream: TextIO | None,
) -> list[QueryRecord]:
    from tqdm.auto import tqdm

    file = RecordFile(records, settings) if records is not None else None
    done = dict(file.done()) if file is not None else {}
    out: list[QueryRecord] = []
    bar = tqdm(total=len(items), desc="advise", file=stream or sys.stderr, disable=not progress)
    for item in items:
        qid = item.qid if isinstance(item, Probe) else f"doc:{item.id}"
        if qid in done:
            out.append(done[qid])
            bar.update(1)
            continue
        trace = Trace()
        extra: dict[str, Any] = {}
        probe = item
        if not isinstance(item, Probe):  # label-free: the LLM writes the question first
            question = write_question(question_llm, item, trace=trace)
            extra = {"write_calls": trace.llm_calls, "write_tokens": trace.prompt_tokens + trace.completion_tokens}
            probe = probe_for_document(question, item, index, corpus, negatives=negatives)
        if probe is not None:
            extra |= _judge_probe(judge, probe, trace)
            record = QueryRecord(qid=qid, llm_calls=trace.llm_calls, prompt_tokens=trace.prompt_tokens)
            record.completion_tokens, record.extra = trace.completion_tokens, extra
            if file is not None:
                file.append(record)
            out.append(record)
        bar.update(1)
    bar.close()
    return out


def _threshold(value: float | None) -> str:
    return "no AUC" if value is None else ("any AUC" if value <= 0 else f"{value:.2f}")


def render_advice(report: Mapping[str, Any]) -> str:
    """The report as text: the AUC estimates, then one line per method.

    Examples:
        >>> r = {"mode": "labelled", "judge": "j", "questions": 20, "llm_calls": 160, "max_calls": 200,
        ...      "auc": {"documents": {"auc": 0.9, "low": 0.8, "high": 0.95, "pairs": 80},
        ...              "summaries": {"auc": None, "low": None, "high": None, "pairs": 0}},
        ...      "cost_per_pair": {"calls": 1.0, "tokens": 300.0, "seconds": 0.5}, "methods": []}
        >>> print(render_advice(r).splitlines()[1])
        judge AUC on documents: 0.900 (95% interval 0.800-0.950, 80 pairs)
    """

    def fmt(x: Any, spec: str = ".3f") -> str:
        return "n/a" if x is None else format(x, spec)

    lines = [f"{report['judge']}: {report['mode']}, {report['questions']} questions, {report['llm_calls']} LLM calls"]
    if report["mode"] == "label-free":
        lines.append(LABEL_FREE_CAVEAT)
    for kind in ("documents", "summaries"):
        a = report["auc"][kind]
        lines.append(
            f"judge AUC on {kind}: {fmt(a['auc'])} (95% interval {fmt(a['low'])}-{fmt(a['high'])}, {a['pairs']} pairs)"
        )
    c = report["cost_per_pair"]
    lines.append(f"one judged pair: {c['calls']:.2f} calls, {c['tokens']:.0f} tokens, {c['seconds']:.2f} s")
    for m in report["methods"]:
        verdict = "pays off" if m["pays_off"] else "does not pay off"
        lines.append(
            f"- {m['method']}: {verdict} at AUC {fmt(m['judge_auc_used'])} (from {_threshold(m['threshold'])}); "
            f"expected {m['metric']} {fmt(m['expected'])} vs {m['first_stage']} {fmt(m['first_stage_quality'])} "
            f"on {m['measured_on']}; per query {m['calls_per_query']:.0f} calls, {m['tokens_per_query']:.0f} tokens, "
            f"{m['seconds_per_query']:.1f} s. {m['note']}"
        )
    return "\n".join(lines)
