"""The pairs ``retrievekit advise`` asks a judge about: a question, its positive and BM25's hard negatives.

A :class:`Probe` is one question with its judged texts in two kinds:

* ``documents``: the positive document, then ``negatives`` hard negatives (BM25's top hits for the question that are
  not positive, then, when the question reaches fewer, BM25's nearest documents to the positive);
* ``summaries``: LATTICE-style summaries (the extractive idea: the first sentence of each of a few documents, each
  document grouped with its nearest BM25 neighbours): the positive's group first, then one group per hard negative
  (groups never contain a positive).

Labelled probes (:func:`labelled_probes`) take the question and its positives from qrels; label-free probes
(:func:`sample_documents`, then :func:`probe_for_document` with a question the LLM wrote for the document) take the
sampled document as the positive. Sampling is seeded and sorted, so a run is repeatable.

Examples:
    >>> from retrievekit.core.index.bm25 import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> docs = [Passage(id=str(i), text=f"Topic {i} words. More about {i}.") for i in range(6)]
    >>> p = probe_for_document("What about topic 2?", docs[2], BM25Index.build(docs), docs, negatives=2)
    >>> p.doc_labels, p.summary_labels
    ([1, 0, 0], [1, 0, 0])
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from retrievekit.core.retriever import Retriever
from retrievekit.core.types import DataObject

__all__ = [
    "Probe",
    "extractive_summary",
    "labelled_probes",
    "labelled_questions",
    "probe_for_document",
    "sample_documents",
]

GROUP_SIZE = 3
"""Documents per LATTICE-style summary."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Probe:
    """One question and the texts a judge is asked about (positive first in each kind).

    ``doc_refs`` / ``summary_refs``: the corpus ids each text stands for (a document: itself; a summary: its group),
    passed to a judge that reads them (the gold-label :class:`~retrievekit.core.judge.oracle.OracleJudge`).

    Examples:
        >>> Probe("q1", "why?", ["a", "b"], [1, 0], ["sa", "sb"], [1, 0]).n_pairs
        4
    """

    qid: str
    question: str
    doc_texts: list[str]
    doc_labels: list[int]
    summary_texts: list[str]
    summary_labels: list[int]
    meta: dict[str, str] = field(default_factory=dict)
    doc_refs: list[list[str]] = field(default_factory=list)
    summary_refs: list[list[str]] = field(default_factory=list)

    @property
    def n_pairs(self) -> int:
        """Judge calls this probe costs (one per text)."""
        return len(self.doc_texts) + len(self.summary_texts)


def extractive_summary(objects: Sequence[DataObject], max_chars: int = 600) -> str:
    """A short summary of a few documents: each one's first sentence, joined (at most ``max_chars``).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> extractive_summary([Passage(id="a", text="Aspirin cuts fever. It is old."), Passage(id="b", text="Rain.")])
        'Aspirin cuts fever. Rain.'
    """
    firsts = [_SENTENCE.split(" ".join(o.index_text().split()), maxsplit=1)[0] for o in objects]
    return " ".join(f for f in firsts if f)[:max_chars]


def _neighbours(index: Retriever, obj: DataObject, avoid: set[str], n: int) -> list[DataObject]:
    text = " ".join(obj.index_text().split()[:64]) or obj.id
    hits = index.search(text, k=n + len(avoid) + 1)
    return [h.obj for h in hits if h.id != obj.id and h.id not in avoid][:n]


def _group(index: Retriever, obj: DataObject, avoid: set[str]) -> list[DataObject]:
    return [obj, *_neighbours(index, obj, avoid, GROUP_SIZE - 1)]


def _probe(
    qid: str, question: str, positive: DataObject, gold: set[str], index: Retriever, negatives: int
) -> Probe | None:
    hits = [h.obj for h in index.search(question, k=negatives + len(gold) + 5)]
    hits += _neighbours(index, positive, gold, negatives)  # when the question's words reach few documents
    negs = list({o.id: o for o in hits if o.id not in gold}.values())[:negatives]
    if not negs:
        return None
    docs = [positive.index_text(), *(o.index_text() for o in negs)]
    groups = [_group(index, positive, set()), *(_group(index, o, gold) for o in negs)]
    labels = [1] + [0] * len(negs)
    probe = Probe(qid, question, docs, labels, [extractive_summary(g) for g in groups], list(labels))
    probe.meta = {"positive": positive.id}
    probe.doc_refs = [[o.id] for o in (positive, *negs)]
    probe.summary_refs = [[o.id for o in g] for g in groups]
    return probe


def probe_for_document(
    question: str, doc: DataObject, index: Retriever, corpus: Sequence[DataObject], *, negatives: int = 3
) -> Probe | None:
    """The label-free probe of ``doc``: the question written for it, ``doc`` positive, BM25's hard negatives.

    None when the corpus has no other document.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> one = [Passage(id="a", text="alone")]
        >>> probe_for_document("q?", one[0], BM25Index.build(one), one) is None
        True
    """
    return _probe(f"doc:{doc.id}", question, doc, {doc.id}, index, negatives)


def sample_documents(corpus: Sequence[DataObject], n: int, *, seed: int = 0, min_words: int = 8) -> list[DataObject]:
    """``n`` documents drawn without replacement (seeded; documents of at least ``min_words`` words preferred).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id=str(i), text="word " * 10) for i in range(5)]
        >>> [d.id for d in sample_documents(docs, 2, seed=1)] == [d.id for d in sample_documents(docs, 2, seed=1)]
        True
    """
    ordered = sorted(corpus, key=lambda o: o.id)
    long = [o for o in ordered if len(o.index_text().split()) >= min_words]
    pool = long if len(long) >= n else ordered
    return random.Random(seed).sample(pool, min(n, len(pool)))


def labelled_questions(
    questions: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], corpus: Sequence[DataObject]
) -> list[str]:
    """The ids of the questions :func:`labelled_probes` draws from (sorted): those with a relevant document in
    ``corpus``.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> labelled_questions({"q": "?", "r": "?"}, {"q": {"a": 1}, "r": {"zz": 1}}, [Passage(id="a", text="x")])
        ['q']
    """
    ids = {o.id for o in corpus}
    return sorted(q for q in questions if any(g > 0 and d in ids for d, g in qrels.get(q, {}).items()))


def labelled_probes(
    questions: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    corpus: Sequence[DataObject],
    index: Retriever,
    n: int,
    *,
    negatives: int = 3,
    seed: int = 0,
) -> list[Probe]:
    """Up to ``n`` probes from labelled questions (seeded draw): a gold document positive, BM25's non-gold hits the
    negatives.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id=str(i), text=f"topic {i} text") for i in range(4)]
        >>> [p.meta["positive"] for p in labelled_probes({"q": "topic 1"}, {"q": {"1": 1}}, docs, BM25Index.build(docs), 5)]
        ['1']
    """
    by_id = {o.id: o for o in corpus}
    usable = labelled_questions(questions, qrels, corpus)
    chosen = random.Random(seed).sample(usable, min(n, len(usable)))
    out = []
    for qid in chosen:
        gold = {d for d, g in qrels[qid].items() if g > 0 and d in by_id}
        probe = _probe(qid, questions[qid], by_id[sorted(gold)[0]], gold, index, negatives)
        if probe is not None:
            out.append(probe)
    return out
