"""Training pairs for the judge: positives from qrels or synthesised from a corpus, hard negatives from a retriever.

* :func:`pairs_from_qrels` -- one positive :class:`JudgePair` per (query, relevant object) of a loaded dataset;
* :func:`synthesize_pairs` -- corpus only: a chat LLM writes a question for sampled passages (empty replies and
  replies that merely copy the passage are dropped and counted in :class:`SynthesisResult`);
* :func:`mine_hard_negatives` -- for each query, top retriever hits that are not among its positives.

Everything is deterministic for a fixed ``seed`` (sorted ids, seeded samplers).

Examples:
    >>> from retrievekit.core.eval.datasets import Dataset, Query
    >>> from retrievekit.core.index.bm25 import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> docs = [Passage(id="a", text="aspirin relieves pain"), Passage(id="b", text="aspirin is a drug"),
    ...         Passage(id="c", text="rome is a city")]
    >>> ds = Dataset("toy", "train", docs, [Query("q1", "does aspirin relieve pain?")], {"q1": {"a": 1}})
    >>> pos = pairs_from_qrels(ds)
    >>> [(p.query_id, p.passage_id, p.label) for p in pos]
    [('q1', 'a', 1)]
    >>> neg = mine_hard_negatives(pos, docs, BM25Index.build(docs), n_negatives=1)
    >>> [(p.passage_id, p.label) for p in neg]
    [('b', 0)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrievekit.core.errors import EmptyCorpusError, InvalidInputError, LLMOutputError
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = [
    "SYNTH_PROMPT",
    "JudgePair",
    "SynthesisResult",
    "mine_hard_negatives",
    "object_text",
    "pairs_from_qrels",
    "synthesize_pairs",
]

SYNTH_PROMPT = 'Passage: {passage}\n\nWrite a specific question about "{topic}" that this passage answers.'
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "what which when where who whom whose why how does this that these those there their they them with from into "
    "about answer question passage text document study specific mean means role type kind between other have been "
    "were will would could should shall being".split()
)


@dataclass(frozen=True)
class JudgePair:
    """One labelled (query, passage) pair.

    Attributes:
        query: the query text.
        passage: the passage text the judge reads (title and body).
        label: 1 relevant, 0 not.
        query_id: id of the query (pairs of one query stay on one side of the train/holdout split).
        passage_id: id of the corpus object.

    Examples:
        >>> JudgePair("q", "text", 1, "q1", "d1").label
        1
        >>> JudgePair("q", "text", 2, "q1", "d1")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: label must be 0 or 1, got 2
    """

    query: str
    passage: str
    label: int
    query_id: str
    passage_id: str

    def __post_init__(self) -> None:
        if self.label not in (0, 1):
            raise InvalidInputError(f"label must be 0 or 1, got {self.label!r}")


def object_text(obj: DataObject) -> str:
    """The text a judge reads for a corpus object (``index_text()``: title and body).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> object_text(Passage(id="a", title="Aspirin", text="A drug."))
        'Aspirin\\nA drug.'
    """
    return str(obj.index_text())


def pairs_from_qrels(dataset: Any, *, min_grade: int = 1) -> list[JudgePair]:
    """Positive pairs of a loaded :class:`~retrievekit.core.eval.datasets.Dataset`: its queries x qrels (grade >= ``min_grade``).

    Qrels pointing at objects missing from the corpus are skipped. Order: query file order, then object id.

    Examples:
        >>> from retrievekit.core.eval.datasets import Dataset, Query
        >>> from retrievekit.core.types import Passage
        >>> ds = Dataset("t", "train", [Passage(id="a", text="x")], [Query("q", "x?")], {"q": {"a": 1, "gone": 1}})
        >>> len(pairs_from_qrels(ds))
        1
    """
    by_id = dataset.objects_by_id()
    out: list[JudgePair] = []
    for q in dataset.queries:
        for oid in sorted(dataset.qrels.get(q.id, {})):
            if dataset.qrels[q.id][oid] < min_grade or oid not in by_id:
                continue
            out.append(JudgePair(q.text, object_text(by_id[oid]), 1, q.id, oid))
    return out


def mine_hard_negatives(
    pairs: Sequence[JudgePair],
    corpus: Sequence[DataObject],
    retriever: Retriever,
    *,
    n_negatives: int = 3,
    skip_top: int = 0,
    pool: int | None = None,
    seed: int = 0,
    exclude: Mapping[str, Iterable[str]] | None = None,
) -> list[JudgePair]:
    """Negative pairs: per query, retriever hits that are not positives of that query.

    Args:
        pairs: labelled pairs; every label-1 pair's ``passage_id`` counts as a positive of its query.
        corpus: the objects the retriever searches (hit ids are looked up here for the passage text).
        retriever: BM25, dense, ... (anything with ``search``).
        n_negatives: negatives per query.
        skip_top: non-positive hits skipped first (likely unlabelled positives).
        pool: sample ``n_negatives`` from the top ``pool`` remaining hits (seeded); None takes them in rank order.
        seed: seed of the sampler.
        exclude: extra ``{query_id: ids}`` never used as negatives (e.g. the full qrels).

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id=str(i), text=f"drug {i}") for i in range(5)]
        >>> neg = mine_hard_negatives([JudgePair("drug 1", "drug 1", 1, "q", "1")], docs, BM25Index.build(docs))
        >>> len(neg), "1" in {p.passage_id for p in neg}
        (3, False)
    """
    if n_negatives < 0 or skip_top < 0:
        raise InvalidInputError("n_negatives and skip_top must be >= 0")
    if pool is not None and pool < n_negatives:
        raise InvalidInputError(f"pool ({pool}) must be >= n_negatives ({n_negatives})")
    by_id = {o.id: o for o in corpus}
    if not by_id:
        raise EmptyCorpusError("cannot mine negatives from an empty corpus")
    positives: dict[str, set[str]] = {}
    query_text: dict[str, str] = {}
    for p in pairs:
        query_text.setdefault(p.query_id, p.query)
        if p.label == 1:
            positives.setdefault(p.query_id, set()).add(p.passage_id)
    for qid, ids in (exclude or {}).items():
        positives.setdefault(qid, set()).update(ids)
    rng = np.random.default_rng(seed)
    out: list[JudgePair] = []
    if n_negatives == 0:
        return out
    for qid in sorted(query_text):
        pos = positives.get(qid, set())
        want = skip_top + (pool if pool is not None else n_negatives)
        k = min(len(by_id), want + len(pos))
        hits = retriever.search(query_text[qid], k=k)
        cands = [h.id for h in hits if h.id not in pos and h.id in by_id][skip_top:]
        if pool is not None:
            cands = cands[:pool]
            if len(cands) > n_negatives:
                picked = sorted(rng.choice(len(cands), size=n_negatives, replace=False).tolist())
                cands = [cands[i] for i in picked]
        for oid in cands[:n_negatives]:
            out.append(JudgePair(query_text[qid], object_text(by_id[oid]), 0, qid, oid))
    return out


@dataclass(frozen=True)
class SynthesisResult:
    """Pairs synthesised from a corpus, and what was dropped.

    Attributes:
        pairs: positive pairs (synthetic question, its source passage).
        requested: passages asked about.
        dropped_empty: replies with fewer than 3 words.
        dropped_echo: replies that copy the passage (no question of their own).
        dropped_generic: replies sharing no content word with the passage ("What is the answer?"), echoing the
            prompt ("... this question ..."), looping (a repeated word 3-gram), or repeating a question already kept
            for another passage.
        failed: LLM calls that raised.

    Examples:
        >>> SynthesisResult(pairs=[], requested=2, dropped_empty=1, dropped_echo=1).dropped
        2
    """

    pairs: list[JudgePair]
    requested: int
    dropped_empty: int = 0
    dropped_echo: int = 0
    failed: int = 0
    dropped_generic: int = 0
    examples_dropped: list[str] = field(default_factory=list, repr=False)

    @property
    def dropped(self) -> int:
        """Replies not used (empty, echo, generic or failed).

        Examples:
            >>> SynthesisResult([], 3, failed=1).dropped
            1
        """
        return self.dropped_empty + self.dropped_echo + self.dropped_generic + self.failed


def _clean_question(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    q = lines[0] if lines else ""
    q = re.sub(r"^(question|q)\s*[:.\-]\s*", "", q, flags=re.IGNORECASE).strip().strip("\"'` ").strip()
    if "?" in q:
        q = q[: q.index("?") + 1]
    return q


def _is_echo(question: str, passage: str) -> bool:
    q = question.lower().rstrip("?").strip()
    if q and q in passage.lower():
        return True
    qw, pw = _WORD.findall(question.lower()), set(_WORD.findall(passage.lower()))
    if not qw:
        return True
    novel = [w for w in qw if w not in pw]
    # A real question brings at least one word of its own (what/which/how, ...) unless it is long.
    return len(qw) >= 6 and not novel


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _STOP}


_PROMPT_ECHOES = ("this question", "question about", "answered by the passage", "this passage answers")


def _is_generic(question: str, passage: str) -> bool:
    """No content word from the passage, an echo of the prompt, or a looping reply (a repeated word 3-gram)."""
    low = question.lower()
    if any(e in low for e in _PROMPT_ECHOES):
        return True
    words = _WORD.findall(low)
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    if len(grams) != len(set(grams)):
        return True
    return not (_content_words(question) & _content_words(passage))


def _topic(obj: DataObject, passage: str) -> str:
    title = str(getattr(obj, "title", "") or "").strip()
    return title or " ".join(passage.split()[:8])


def synthesize_pairs(
    corpus: Sequence[DataObject],
    llm: ChatLLM,
    n: int,
    *,
    seed: int = 0,
    max_tokens: int = 40,
    max_passage_chars: int = 600,
    trace: Trace | None = None,
) -> SynthesisResult:
    """Ask ``llm`` to write a question for ``n`` sampled passages (seeded); keep the usable ones as positives.

    The prompt names the passage's title (or its first words) as the topic. Replies are cut to their first line and
    first question mark; a reply of fewer than 3 words is dropped as empty, one that copies the passage as an echo,
    one with no content word from the passage or already kept for another passage as generic (all counted, and
    noted in ``trace``). A call that raises ``LLMOutputError`` counts as failed. SmolLM2-135M mostly writes generic
    questions (docs/methods/judge.md has a measured run); a stronger ``llm`` keeps more.

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> from retrievekit.core.types import Passage
        >>> fixed = FixedReplyLLM("Question: What relieves the pain?\\nMore text")
        >>> res = synthesize_pairs([Passage(id="a", text="Aspirin relieves pain.")], fixed, 1)
        >>> res.pairs[0].query, res.dropped
        ('What relieves the pain?', 0)
    """
    if n < 1:
        raise InvalidInputError(f"n must be >= 1, got {n}")
    objs = list(corpus)
    if not objs:
        raise EmptyCorpusError("cannot synthesise pairs from an empty corpus")
    rng = np.random.default_rng(seed)
    idx = sorted(rng.choice(len(objs), size=min(n, len(objs)), replace=False).tolist())
    pairs: list[JudgePair] = []
    empty = echo = generic = failed = 0
    seen: set[str] = set()
    dropped_examples: list[str] = []
    for i in idx:
        obj = objs[i]
        passage = object_text(obj)
        prompt = SYNTH_PROMPT.format(passage=passage[:max_passage_chars], topic=_topic(obj, passage)[:120])
        try:
            reply = llm.complete(prompt, max_tokens=max_tokens, temperature=0.0, trace=trace).text
        except LLMOutputError as e:
            failed += 1
            if trace is not None:
                trace.note("synth_failed", f"{obj.id}: {e}")
            continue
        q = _clean_question(reply)
        if len(_WORD.findall(q)) < 3:
            empty += 1
            dropped_examples.append(reply[:120])
            continue
        if _is_echo(q, passage):
            echo += 1
            dropped_examples.append(reply[:120])
            continue
        key = " ".join(_WORD.findall(q.lower()))
        if _is_generic(q, passage) or key in seen:
            generic += 1
            dropped_examples.append(reply[:120])
            continue
        seen.add(key)
        pairs.append(JudgePair(q, passage, 1, f"syn-{obj.id}", obj.id))
    if trace is not None and (empty or echo or generic or failed):
        trace.note(
            "synth_dropped",
            f"dropped {empty} empty, {echo} echo, {generic} generic, {failed} failed of {len(idx)} synthetic questions",
        )
    return SynthesisResult(pairs, len(idx), empty, echo, failed, generic, dropped_examples)
