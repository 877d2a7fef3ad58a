"""Rule-based chunk filter driven by metadata (mechanism 2 of "Fishing for Answers").

*Drop* rules remove candidates whose document, date/version or entities conflict with what the query names;
*add* rules propose chunks that share the query's document/entities or are adjacent (by order within a document) to
a kept chunk. Proposals do not bypass the budget: the selector re-runs the knapsack over the pool plus the proposals,
so an add only lands when it is worth its tokens. Every drop and add is recorded in the trace with its reason.

Rules are small frozen dataclasses implementing :class:`DropRule` or :class:`AddRule`; pass your own list to
``OneShotSelector(rules=[...])`` to extend or replace :func:`default_rules`.

What the query "names" comes from :func:`analyze_query`: documents through a :class:`DocumentCatalog` of titles and
aliases (short all-caps aliases match case-sensitively as whole words, longer ones case-insensitively), years and
ISO dates by regex, entities from the entity vocabulary found in the pool's metadata.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> cat = DocumentCatalog([DocumentInfo(doc_id=1, title="Anti-Money Laundering Rules", aliases=("AML",))])
    >>> q = analyze_query("Which AML rule covers this?", cat)
    >>> sorted(q.documents)
    [1]
    >>> other = Passage(id="x", text="...", metadata={"DocumentID": 2})
    >>> ctx = FilterContext(query=q, ranked=[Passage(id="y", text="...", metadata={"DocumentID": 1}), other])
    >>> DropOtherDocuments().drop_reason(other, ctx)
    'query names document 1 (AML); chunk is from document 2'
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from retrievekit.core.oneshot.catalog import DocumentCatalog, DocumentInfo, MetadataKeys
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = [
    "AddAdjacent",
    "AddRule",
    "AddSameDocument",
    "AddSameEntities",
    "DocumentCatalog",
    "DocumentInfo",
    "DropMismatchedEntities",
    "DropOtherDates",
    "DropOtherDocuments",
    "DropRule",
    "FilterContext",
    "MetadataKeys",
    "Proposal",
    "QueryInfo",
    "analyze_query",
    "default_rules",
    "parse_date",
]


_YEAR_RE = re.compile(r"(?<!\d)(19\d\d|20\d\d)(?!\d)")


def parse_date(value: object) -> _dt.date | int | None:
    """Parse a metadata date: ``date``/``datetime``, ``"YYYY-MM-DD"``, ``"YYYY-MM"``, ``"YYYY"`` or an int year.

    Returns a ``date`` (full dates), an ``int`` year (year or year-month only), or ``None`` when missing or
    malformed (the caller keeps the chunk and records why).

    Examples:
        >>> parse_date("2023-12-21"), parse_date("2018-12"), parse_date(2022), parse_date("next spring")
        (datetime.date(2023, 12, 21), 2018, 2022, None)
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, int):
        return value if 1000 <= value <= 9999 else None
    if not isinstance(value, str):
        return None
    s = value.strip()
    if re.fullmatch(r"\d{4}(-\d{2})?", s):
        return int(s[:4])
    if len(s) < 10:
        return None
    try:
        return _dt.date.fromisoformat(s[:10])
    except ValueError:
        return None


def _year(value: _dt.date | int) -> int:
    return value.year if isinstance(value, _dt.date) else value


@dataclass(frozen=True)
class QueryInfo:
    """What a query names: documents (ids, and ``(id, alias)`` as matched), years and entities.

    Examples:
        >>> QueryInfo(text="q", years=frozenset({2023})).years
        frozenset({2023})
    """

    text: str
    documents: frozenset[Any] = frozenset()
    document_mentions: tuple[tuple[Any, str], ...] = ()
    years: frozenset[int] = frozenset()
    entities: frozenset[str] = frozenset()


def _entity_pattern(entity: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(entity) + r"(?!\w)", re.IGNORECASE)


def analyze_query(
    query: str, catalog: DocumentCatalog | None = None, entity_vocabulary: Iterable[str] = ()
) -> QueryInfo:
    """Find the documents, years and entities a query names.

    Examples:
        >>> q = analyze_query("What did Acme Corp report in 2021?", entity_vocabulary=["Acme Corp", "Globex"])
        >>> sorted(q.years), sorted(q.entities)
        ([2021], ['Acme Corp'])
    """
    found = catalog.find(query) if catalog is not None else []
    years = frozenset(int(y) for y in _YEAR_RE.findall(query))
    ents = frozenset(e for e in entity_vocabulary if e and _entity_pattern(e).search(query))
    return QueryInfo(
        text=query,
        documents=frozenset(d for d, _ in found),
        document_mentions=tuple(found),
        years=years,
        entities=ents,
    )


def _entities_of(obj: DataObject, key: str) -> frozenset[str]:
    raw = obj.metadata.get(key)
    if isinstance(raw, str):
        return frozenset([raw]) if raw.strip() else frozenset()
    if isinstance(raw, (list, tuple, set, frozenset)):
        return frozenset(str(e) for e in raw if isinstance(e, str) and e.strip())
    return frozenset()


@dataclass
class FilterContext:
    """What rules see: the analysed query, the pool in relevance order, metadata keys, a neighbour lookup and the trace.

    ``lookup(doc_id, order)`` returns the chunk at that position of a document (from a corpus) or ``None``; without
    one, :class:`AddAdjacent` only finds neighbours inside the pool.

    Examples:
        >>> FilterContext(query=QueryInfo(text="q")).keys.order
        'order'
    """

    query: QueryInfo
    ranked: Sequence[DataObject] = ()
    keys: MetadataKeys = field(default_factory=MetadataKeys)
    lookup: Callable[[Any, Any], DataObject | None] | None = None
    trace: Trace | None = None
    _noted: set[str] = field(default_factory=set, repr=False)

    def note_once(self, key: str, kind: str, message: str, **data: Any) -> None:
        """Record an event in the trace once per ``key`` (e.g. one note for all malformed dates of a rule).

        Examples:
            >>> c = FilterContext(query=QueryInfo(text="q"), trace=Trace())
            >>> c.note_once("k", "filter.skip", "x"); c.note_once("k", "filter.skip", "x"); len(c.trace.events)
            1
        """
        if self.trace is not None and key not in self._noted:
            self._noted.add(key)
            self.trace.note(kind, message, **data)

    def neighbour(self, obj: DataObject, offset: int) -> DataObject | None:
        """The chunk ``offset`` positions away in the same document (pool first, then ``lookup``), or None.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> a = Passage(id="a", text="x", metadata={"DocumentID": 1, "order": 0})
            >>> b = Passage(id="b", text="y", metadata={"DocumentID": 1, "order": 1})
            >>> FilterContext(query=QueryInfo(text="q"), ranked=[a, b]).neighbour(a, 1).id
            'b'
        """
        doc, order = obj.metadata.get(self.keys.document), obj.metadata.get(self.keys.order)
        if doc is None or isinstance(order, bool) or not isinstance(order, int):
            return None
        target = order + offset
        for o in self.ranked:
            if o.metadata.get(self.keys.document) == doc and o.metadata.get(self.keys.order) == target:
                return o
        return self.lookup(doc, target) if self.lookup is not None else None


@runtime_checkable
class DropRule(Protocol):
    """A rule that may drop a candidate: return a reason string to drop, ``None`` to keep.

    Examples:
        >>> @dataclass(frozen=True)
        ... class DropEmpty:
        ...     name: str = "drop-empty"
        ...     def drop_reason(self, obj, ctx):
        ...         return "empty text" if not obj.text.strip() else None
        >>> isinstance(DropEmpty(), DropRule)
        True
    """

    @property
    def name(self) -> str:
        """The rule's name (appears in every trace entry it causes)."""
        ...

    def drop_reason(self, obj: DataObject, ctx: FilterContext) -> str | None:
        """Why ``obj`` should be dropped, or None."""
        ...


@dataclass(frozen=True)
class Proposal:
    """A chunk an add rule wants considered, with the relevance it should compete with and why.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> Proposal(Passage(id="a", text="x"), 0.4, "adjacent to b").reason
        'adjacent to b'
    """

    obj: DataObject
    relevance: float
    reason: str


@runtime_checkable
class AddRule(Protocol):
    """A rule that proposes chunks given the kept ones (``(object, relevance)`` pairs) and the pool.

    Examples:
        >>> isinstance(AddAdjacent(), AddRule)
        True
    """

    @property
    def name(self) -> str:
        """The rule's name (appears in every trace entry it causes)."""
        ...

    def propose(
        self, kept: Sequence[tuple[DataObject, float]], pool: Mapping[str, float], ctx: FilterContext
    ) -> list[Proposal]:
        """Chunks to consider adding (``pool`` maps candidate id to relevance)."""
        ...


@dataclass(frozen=True)
class DropOtherDocuments:
    """Drop chunks from other documents when the query names document(s) and retrieval agrees.

    "Retrieval agrees" (our choice): at least one of the top ``support_k`` candidates comes from a named document.
    A document named only as a cross-reference (e.g. "section 205 of the FSMR" asked about a guidance note) then does
    not wipe out the pool. ``support_k=0`` drops whenever a document is named. Chunks without a document id are kept.

    Examples:
        >>> DropOtherDocuments().support_k
        3
    """

    support_k: int = 3
    name: str = "drop-other-documents"

    def drop_reason(self, obj: DataObject, ctx: FilterContext) -> str | None:
        named = ctx.query.documents
        if not named:
            return None
        doc = obj.metadata.get(ctx.keys.document)
        if doc is None or doc in named:
            return None
        if self.support_k > 0:
            top = [o.metadata.get(ctx.keys.document) for o in ctx.ranked[: self.support_k]]
            if not any(d in named for d in top):
                ctx.note_once(
                    f"{self.name}:unsupported",
                    "filter.skip",
                    f"{self.name}: query names {sorted(map(str, named))} but none of the top {self.support_k} "
                    "candidates is from it; treating the mention as a cross-reference (no drops)",
                )
                return None
        names = ", ".join(f"{d} ({a})" for d, a in ctx.query.document_mentions) or ", ".join(map(str, named))
        return f"query names document {names}; chunk is from document {doc}"


@dataclass(frozen=True)
class DropOtherDates:
    """Drop chunks whose date/version year is not among the years the query names.

    Missing dates keep the chunk; malformed dates keep it too and are recorded once per query in the trace.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ctx = FilterContext(query=QueryInfo(text="in 2020", years=frozenset({2020})))
        >>> DropOtherDates().drop_reason(Passage(id="a", text="x", metadata={"version_date": "2023-01-05"}), ctx)
        'query names year(s) [2020]; chunk is dated 2023-01-05'
        >>> DropOtherDates().drop_reason(Passage(id="b", text="x", metadata={"version_date": "soon"}), ctx) is None
        True
    """

    name: str = "drop-other-dates"

    def drop_reason(self, obj: DataObject, ctx: FilterContext) -> str | None:
        if not ctx.query.years:
            return None
        raw = obj.metadata.get(ctx.keys.date)
        if raw is None or raw == "":
            return None
        parsed = parse_date(raw)
        if parsed is None:
            ctx.note_once(
                f"{self.name}:malformed",
                "filter.skip",
                f"{self.name}: unparseable date {raw!r} in {ctx.keys.date!r} (chunk {obj.id}); such chunks are kept",
            )
            return None
        if _year(parsed) in ctx.query.years:
            return None
        return f"query names year(s) {sorted(ctx.query.years)}; chunk is dated {raw}"


@dataclass(frozen=True)
class DropMismatchedEntities:
    """Drop chunks that carry entities, none of which the query names, when the query names some known entity.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ctx = FilterContext(query=QueryInfo(text="Acme?", entities=frozenset({"Acme"})))
        >>> DropMismatchedEntities().drop_reason(Passage(id="a", text="x", metadata={"entities": ["Globex"]}), ctx)
        "query names entities ['Acme']; chunk is about ['Globex']"
    """

    name: str = "drop-mismatched-entities"

    def drop_reason(self, obj: DataObject, ctx: FilterContext) -> str | None:
        if not ctx.query.entities:
            return None
        ents = _entities_of(obj, ctx.keys.entities)
        if not ents or {e.lower() for e in ents} & {e.lower() for e in ctx.query.entities}:
            return None
        return f"query names entities {sorted(ctx.query.entities)}; chunk is about {sorted(ents)}"


@dataclass(frozen=True)
class _AddBoosted:
    """Propose the pool chunks, in ranked order, not kept yet, that :meth:`reason` gives a reason for, with their
    pool relevance raised by ``boost``: the one rule of :class:`AddSameDocument` and :class:`AddSameEntities`."""

    boost: float = 0.25
    name: str = ""

    def reason(self, ctx: FilterContext) -> Callable[[DataObject], str | None] | None:
        """Why a chunk is proposed for this query (None: not proposed), or None when the query gives no reason."""
        raise NotImplementedError

    def propose(
        self, kept: Sequence[tuple[DataObject, float]], pool: Mapping[str, float], ctx: FilterContext
    ) -> list[Proposal]:
        reason = self.reason(ctx)
        if reason is None:
            return []
        kept_ids = {o.id for o, _ in kept}
        out = []
        for o in ctx.ranked:
            why = reason(o) if o.id not in kept_ids and o.id in pool else None
            if why is not None:
                out.append(Proposal(o, pool[o.id] * (1 + self.boost), why))
        return out


@dataclass(frozen=True)
class AddSameDocument(_AddBoosted):
    """Propose pool chunks from a document the query names, with relevance raised by ``boost`` (our choice: +25%).

    Examples:
        >>> AddSameDocument().boost
        0.25
    """

    name: str = "add-same-document"

    def reason(self, ctx: FilterContext) -> Callable[[DataObject], str | None] | None:
        if not ctx.query.documents:
            return None

        def named(o: DataObject) -> str | None:
            doc = o.metadata.get(ctx.keys.document)
            return f"from document {doc}, which the query names" if doc in ctx.query.documents else None

        return named


@dataclass(frozen=True)
class AddSameEntities(_AddBoosted):
    """Propose pool chunks sharing an entity the query names, with relevance raised by ``boost`` (our choice: +25%).

    Examples:
        >>> AddSameEntities().name
        'add-same-entities'
    """

    name: str = "add-same-entities"

    def reason(self, ctx: FilterContext) -> Callable[[DataObject], str | None] | None:
        if not ctx.query.entities:
            return None
        want = {e.lower() for e in ctx.query.entities}

        def sharing(o: DataObject) -> str | None:
            shared = sorted(e for e in _entities_of(o, ctx.keys.entities) if e.lower() in want)
            return f"shares entities {shared} with the query" if shared else None

        return sharing


@dataclass(frozen=True)
class AddAdjacent:
    """Propose the neighbours (within ``window`` positions, same document) of each kept chunk.

    A neighbour competes with ``weight`` x the kept chunk's relevance (or its own pool relevance, if higher).
    Our choice: window 1, weight 0.5. Empty-text neighbours are skipped.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> a = Passage(id="a", text="x", metadata={"DocumentID": 1, "order": 4})
        >>> b = Passage(id="b", text="y", metadata={"DocumentID": 1, "order": 5})
        >>> ctx = FilterContext(query=QueryInfo(text="q"), lookup=lambda d, o: b if o == 5 else None)
        >>> [(p.obj.id, p.relevance) for p in AddAdjacent().propose([(a, 0.8)], {}, ctx)]
        [('b', 0.4)]
    """

    window: int = 1
    weight: float = 0.5
    name: str = "add-adjacent"

    def propose(
        self, kept: Sequence[tuple[DataObject, float]], pool: Mapping[str, float], ctx: FilterContext
    ) -> list[Proposal]:
        kept_ids = {o.id for o, _ in kept}
        best: dict[str, Proposal] = {}
        for obj, rel in kept:
            for off in [d for k in range(1, self.window + 1) for d in (-k, k)]:
                nb = ctx.neighbour(obj, off)
                if nb is None or nb.id in kept_ids or not nb.text.strip():
                    continue
                value = max(self.weight * rel, pool.get(nb.id, 0.0))
                prev = best.get(nb.id)
                if prev is None or value > prev.relevance:
                    where = "after" if off > 0 else "before"
                    best[nb.id] = Proposal(nb, value, f"{abs(off)} position(s) {where} kept chunk {obj.id}")
        return list(best.values())


def default_rules() -> list[DropRule | AddRule]:
    """The rules ``filter=True`` applies when no list is given: three drops, then three adds.

    Examples:
        >>> [r.name for r in default_rules()]
        ['drop-other-documents', 'drop-other-dates', 'drop-mismatched-entities', 'add-same-document', 'add-same-entities', 'add-adjacent']
    """
    return [
        DropOtherDocuments(),
        DropOtherDates(),
        DropMismatchedEntities(),
        AddSameDocument(),
        AddSameEntities(),
        AddAdjacent(),
    ]


# The public home of these names stays this module (docs, the demo corpus's ids, pickles), as before the split.
for _public in (DocumentCatalog, DocumentInfo, MetadataKeys):
    _public.__module__ = __name__
del _public
