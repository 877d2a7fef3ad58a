"""Exact BM25 over the live documents while tantivy still counts deleted ones (issue #61).

Tantivy leaves a deleted document in its statistics (document count, document frequencies, average length) until a
merge or a compaction drops it, so its scores drift from a fresh build's after a delete. While deleted documents
are counted, the engine scores its candidates again with tantivy's own BM25 (the same float32 arithmetic, the same
quantised field lengths: :func:`field_norm`) over the live statistics (:class:`Stats`):

- the live document count (tantivy's ``num_docs``), each query term's live document frequency (a count of its live
  matches) and the live documents' total length (kept by the engine as documents come and go);
- each candidate's term frequencies and length, from its stored text analyzed again (:func:`term_counts`).

:func:`top_with_ties` gives tantivy's best hits with every hit tied with the k-th, so that ties are broken by id
whatever the segments. :func:`exact_top` asks tantivy for candidates by its stale scores and widens the set until no
document outside it can reach the k-th exact score: a term's exact weight is at most its stale weight times the ratio
of the two IDFs times the ratio of the average lengths when the live one is larger (:meth:`Stats.bound`). The top k
is then a fresh build's, to float32 rounding.

Examples:
    >>> [field_norm(n) for n in (3, 40, 41, 45, 100)]
    [3, 40, 40, 44, 96]
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrievekit.core.index.tantivy_docs import analyze, stored_object, tantivy
from retrievekit.core.types import DataObject

__all__ = [
    "FIELD_NORMS",
    "TIE_ROOM",
    "Memo",
    "Stats",
    "average_length",
    "exact_top",
    "field_norm",
    "live_frequencies",
    "rescored",
    "tantivy_average",
    "term_counts",
    "top_with_ties",
    "total_length",
]

K1, B = np.float32(1.2), np.float32(0.75)
TIE_ROOM = 64
"""Hits a search asks for beyond ``2k`` at first, room for the hits tied with the ``k``-th (a corpus with
near-duplicates ties many; with block-max pruning, asking for more costs little)."""
_ONE, _HALF = np.float32(1.0), np.float32(0.5)
_SLACK = 1.0 + 1e-5  # float32 rounding in tantivy's scores and ours
_KEPT_COUNTS = 1 << 16  # documents' term counts a Memo keeps


def _decode(code: int) -> int:
    """The field length a one-byte code stands for: 0..23 as they are, then 8 steps per power of two."""
    if code < 24:
        return code
    code -= 24
    bits, shift = code & 7, code >> 3
    return 24 + (bits if shift == 0 else (bits | 8) << (shift - 1))


FIELD_NORMS: tuple[int, ...] = tuple(_decode(c) for c in range(256))
"""The 256 field lengths tantivy can store (one byte a document): exact to 40, coarser above."""


def field_norm(length: int) -> int:
    """The length tantivy scores a document of ``length`` tokens with (the largest storable one not above it).

    Examples:
        >>> field_norm(0), field_norm(1000), field_norm(10**10) == FIELD_NORMS[-1]
        (0, 984, True)
    """
    return FIELD_NORMS[bisect.bisect_right(FIELD_NORMS, length) - 1]


@dataclass(frozen=True)
class Stats:
    """The statistics a BM25 score reads: the document count, the total length of their text, and each term's
    document frequency. :meth:`score` is tantivy's BM25 (k1 1.2, b 0.75) in its float32 arithmetic.

    Examples:
        >>> s = Stats(docs=4, tokens=95, df={"cat": 2})
        >>> round(s.score(["cat"], Counter({"cat": 2}), 4), 4)  # tantivy's 1.244034 for the same document
        1.244
    """

    docs: int
    tokens: int | float
    df: dict[str, int]

    @property
    def average(self) -> np.float32:
        return np.float32(self.tokens) / np.float32(max(self.docs, 1))

    def idf(self, term: str) -> np.float32:
        n = self.df.get(term, 0)
        x = (np.float32(self.docs - n) + _HALF) / (np.float32(n) + _HALF)
        return np.float32(np.log(_ONE + x))

    def score(self, terms: Sequence[str], counts: Counter[str], length: int) -> float:
        """The BM25 score of a document with term ``counts`` and ``length`` tokens for the query ``terms`` (a
        repeated term counts again), unscaled as tantivy gives it."""
        norm = K1 * (_ONE - B + B * np.float32(field_norm(length)) / self.average)
        total = np.float32(0.0)
        for t in terms:
            tf = np.float32(counts.get(t, 0))
            if tf > 0:
                total = np.float32(total + self.idf(t) * (_ONE + K1) * tf / (tf + norm))
        return float(total)

    def bound(self, counted: Stats, terms: Sequence[str]) -> float:
        """How many times its score under ``counted`` (the statistics tantivy scores with) a document's score under
        these statistics can be, at most, for ``terms`` (those no live document holds left out)."""
        avg = float(self.average) / max(float(counted.average), 1e-30)
        ratios = [float(self.idf(t)) / float(counted.idf(t)) for t in set(terms) if self.df.get(t, 0) > 0]
        return max(ratios, default=1.0) * max(1.0, avg) * _SLACK


@dataclass
class Memo:
    """What exact scoring reads that stays the same until the index changes, kept for one state of it (``key``):
    the live total length, live document frequencies, documents' term counts (up to 65,536 of them), tantivy's own
    average length and document count.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> memo = Memo(key=(1, 2))
        >>> rescored(Stats(docs=2, tokens=4, df={"tea": 1}), ["tea"], [Passage(id="a", text="tea")], memo)
        [0.8713850378990173]
        >>> memo.counts
        {'a': (Counter({'tea': 1}), 1)}
    """

    key: tuple[Any, ...]
    tokens: int | None = None  # the live documents' total length, where known
    df: dict[str, int] = field(default_factory=dict)
    counts: dict[str, tuple[Counter[str], int]] = field(default_factory=dict)
    counted: tuple[float, int] | None = None


def live_frequencies(searcher: Any, schema: Any, terms: Sequence[str], memo: Memo | None = None) -> dict[str, int]:
    """Each of ``terms``' number of live documents (a count of its matches: deleted ones are skipped).

    Examples:
        >>> from retrievekit.core.index.tantivy_docs import fill, new_index
        >>> from retrievekit.core.types import Passage
        >>> index = new_index(None)
        >>> _ = fill(index, [Passage(id="a", text="tea"), Passage(id="b", text="tea rain")])
        >>> live_frequencies(index.searcher(), index.schema, ["tea", "rain", "snow"])
        {'rain': 1, 'snow': 0, 'tea': 2}
    """
    t = tantivy()
    known = memo.df if memo is not None else {}
    for term in sorted(set(terms) - set(known)):
        query = t.Query.term_query(schema, "text", term, index_option="basic")
        known[term] = int(searcher.search(query, 1, count=True).count or 0)
    return {term: known[term] for term in sorted(set(terms))}


def average_length(searcher: Any, schema: Any, term: str, address: Any) -> tuple[float, int]:
    """The average text length and the document count tantivy scores with now (deleted documents included), read
    from its explanation of ``term``'s score for the document at ``address`` (which must hold it).

    Examples:
        >>> from retrievekit.core.index.tantivy_docs import fill, new_index
        >>> from retrievekit.core.types import Passage
        >>> index = new_index(None)
        >>> _ = fill(index, [Passage(id="a", text="tea tea"), Passage(id="b", text="tea rain cups")])
        >>> q = tantivy().Query.term_query(index.schema, "text", "tea")
        >>> average_length(index.searcher(), index.schema, "tea", index.searcher().search(q, 1).hits[0][1])
        (2.5, 2)
    """
    query = tantivy().Query.term_query(schema, "text", term, index_option="freq")
    found: dict[str, float] = {}

    def walk(node: dict[str, Any]) -> None:
        for detail in node.get("details", ()):
            text = str(detail.get("description", ""))
            if text.startswith(("avgdl", "N,")):
                found[text.split(",")[0]] = float(detail["value"])
            walk(detail)

    walk(json.loads(query.explain(searcher, address).to_json()))
    return found["avgdl"], int(found["N"])


def tantivy_average(searcher: Any, schema: Any) -> tuple[float, int] | None:
    """The average length and document count tantivy scores with now (deleted documents included): the
    :func:`average_length` of the first stored document holding a term (None: no document has one).

    Examples:
        >>> from retrievekit.core.index.tantivy_docs import fill, new_index
        >>> from retrievekit.core.types import Passage
        >>> index = new_index(None)
        >>> _ = fill(index, [Passage(id="a", text="the of"), Passage(id="b", text="tea rain cups")])
        >>> tantivy_average(index.searcher(), index.schema)
        (1.5, 2)
    """
    for _, addr in searcher.search(tantivy().Query.all_query(), 64, count=False).hits:
        words = analyze(stored_object(searcher.doc(addr)).index_text())
        if words:
            return average_length(searcher, schema, words[0], addr)
    return None


def term_counts(text: str) -> tuple[Counter[str], int]:
    """The index's terms of ``text`` with their counts, and its length in terms, as the index's analyzer makes them
    (:func:`~retrievekit.core.index.tantivy_docs.analyze`).

    Examples:
        >>> term_counts("The cats of Rome, and the cats."), term_counts("Les chats à Rome")[1]
        ((Counter({'cat': 2, 'rome': 1}), 3), 3)
    """
    words = analyze(text)
    return Counter(words), len(words)


def total_length(objects: Iterable[DataObject]) -> int:
    """The objects' length in the index's terms, all together (what the live total length gains or loses).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> total_length([Passage(id="a", text="The cats of Rome"), Passage(id="b", text="tea")])
        3
    """
    return sum(len(analyze(obj.index_text())) for obj in objects)


def rescored(
    stats: Stats, terms: Sequence[str], objects: Sequence[DataObject], memo: Memo | None = None
) -> list[float]:
    """Each object's score under ``stats`` (its stored text analyzed again, or its counts kept in ``memo``),
    unscaled.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> rescored(Stats(docs=2, tokens=4, df={"tea": 1}), ["tea"], [Passage(id="a", text="tea cups")])
        [0.6931471824645996]
    """
    if memo is None:
        return [stats.score(terms, *term_counts(obj.index_text())) for obj in objects]
    if len(memo.counts) > _KEPT_COUNTS:
        memo.counts.clear()
    out = []
    for obj in objects:
        counts = memo.counts.get(obj.id)
        if counts is None:  # (another thread may clear the memo meanwhile: the counts are kept here too)
            counts = memo.counts[obj.id] = term_counts(obj.index_text())
        out.append(stats.score(terms, *counts))
    return out


def top_with_ties(search: Callable[[int], list[tuple[float, Any]]], k: int) -> list[tuple[float, Any]]:
    """The hits ``search(m)`` gives (its ``m`` best ``(score, address)`` pairs, best first) down to the ``k``-th
    score, every hit tied with the ``k``-th included, so that ties can be broken by id whatever the segments.
    ``2k + TIE_ROOM`` hits are asked for at once, then eight times as many while the last one still ties the
    ``k``-th (each ask is a search of its own).

    Examples:
        >>> ranked = [(3.0, "a"), (2.0, "b"), (2.0, "c"), (1.0, "d")]
        >>> top_with_ties(lambda m: ranked[:m], 2)
        [(3.0, 'a'), (2.0, 'b'), (2.0, 'c')]
        >>> asked = []
        >>> many = [(1.0, i) for i in range(500)]
        >>> len(top_with_ties(lambda m: asked.append(m) or many[:m], 1)), asked
        (500, [66, 528])
    """
    limit = 2 * k + TIE_ROOM
    while True:
        hits = search(limit)
        if len(hits) < limit or hits[-1][0] < hits[k - 1][0]:
            break
        limit *= 8
    return [h for h in hits if h[0] >= hits[k - 1][0]] if len(hits) > k else hits


def exact_top(
    top: Callable[[int], list[tuple[float, Any]]],
    read: Callable[[Any], DataObject],
    stats: Stats,
    counted: Stats,
    terms: Sequence[str],
    k: int,
    memo: Memo | None = None,
) -> list[tuple[float, DataObject]]:
    """The ``k`` best objects by exact score (ties by id): ``top(m)`` gives tantivy's ``m`` best ``(score,
    address)`` pairs by its own (stale) scores, ``read`` an address's object. The first ``k + max(5, k // 4)``
    candidates are scored again, then twice as many at a time until none left out can reach the k-th exact score.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> docs = [(0.9, Passage(id="a", text="tea")), (0.5, Passage(id="b", text="tea tea"))]
        >>> s = Stats(docs=2, tokens=3, df={"tea": 2})
        >>> [o.id for _, o in exact_top(lambda m: docs[:m], lambda o: o, s, s, ["tea"], 1)]
        ['b']
    """
    ratio, exact = stats.bound(counted, terms), dict[str, tuple[float, DataObject]]()
    m = k + max(5, k // 4)
    while True:
        hits = [(score, read(addr)) for score, addr in top(m)]
        new = [obj for _, obj in hits if obj.id not in exact]
        exact.update((o.id, (s, o)) for s, o in zip(rescored(stats, terms, new, memo), new, strict=True))
        ranked = sorted(exact.values(), key=lambda h: (-h[0], h[1].id))
        if len(hits) < m or (len(ranked) >= k and ranked[k - 1][0] > ratio * hits[-1][0]):
            return [(s, o) for s, o in ranked[:k] if s > 0]
        m *= 2
