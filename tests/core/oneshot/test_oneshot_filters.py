"""One-SHOT rule-based chunk filter: drops, adds, reasons in the trace, bad metadata."""

from __future__ import annotations

from dataclasses import dataclass

from retrievekit.core.oneshot import (
    AddAdjacent,
    DocumentCatalog,
    DocumentInfo,
    DropOtherDates,
    DropOtherDocuments,
    OneShotConfig,
    OneShotSelector,
    analyze_query,
)
from retrievekit.core.oneshot.filters import FilterContext, QueryInfo, parse_date
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


def P(pid: str, doc: int, order: int, text: str = "", **meta: object) -> Passage:
    return Passage(id=pid, text=text or f"rule text of {pid}", metadata={"DocumentID": doc, "order": order, **meta})


CATALOG = DocumentCatalog(
    [
        DocumentInfo(doc_id=1, title="Anti-Money Laundering Rules", aliases=("AML",), version_date="2023-12-21"),
        DocumentInfo(doc_id=2, title="Fund Rules", aliases=("FUNDS",), version_date="2019-03-11"),
    ]
)


def test_analyze_query_finds_documents_years_entities():
    q = analyze_query("Under AML rules in 2023, what must Acme do?", CATALOG, ["Acme", "Globex"])
    assert q.documents == frozenset({1})
    assert q.years == frozenset({2023})
    assert q.entities == frozenset({"Acme"})
    assert analyze_query("aml in lower case is not the acronym", CATALOG).documents == frozenset()
    assert analyze_query("the fund rules say", CATALOG).documents == frozenset({2})  # long names: case-insensitive


def test_catalog_from_chunk_titles():
    cat = DocumentCatalog.from_chunks([P("a", 7, 0, document_title="Market Rules (MKT)")])
    assert cat.find("see MKT 4.1") == [(7, "MKT")]


def test_drop_other_documents_when_retrieval_agrees():
    pool = [(P("a1", 1, 0), 0.9), (P("f1", 2, 0), 0.8), (P("a2", 1, 5), 0.7)]
    sel = OneShotSelector(OneShotConfig(budget=1000, filter=True), catalog=CATALOG)
    res = sel.select("What does AML require?", pool)
    assert "f1" not in res.ids and {"a1", "a2"} <= set(res.ids)
    drops = [e for e in res.trace.events if e.kind == "oneshot.drop"]
    assert len(drops) == 1 and "document 1 (AML)" in drops[0].message and drops[0].data["id"] == "f1"
    assert ("f1", drops[0].data["reason"]) in res.dropped


def test_named_document_only_cross_referenced_is_not_dropped():
    # top-3 are all from document 2, so "AML" is treated as a cross-reference: nothing dropped, and it is noted
    pool = [(P(f"f{i}", 2, i), 1.0 - i / 10) for i in range(3)] + [(P("a1", 1, 0), 0.1)]
    res = OneShotSelector(OneShotConfig(budget=1000, filter=True), catalog=CATALOG).select("AML and funds?", pool)
    assert len(res.ids) == 4
    assert any(e.kind == "filter.skip" and "cross-reference" in e.message for e in res.trace.events)


def test_drop_rules_never_empty_the_pool():
    pool = [(P("f1", 2, 0), 0.9)]
    sel = OneShotSelector(
        OneShotConfig(budget=1000, filter=True), rules=[DropOtherDocuments(support_k=0)], catalog=CATALOG
    )
    res = sel.select("AML?", pool)
    assert res.ids == ["f1"]
    assert any(e.kind == "fallback" and "all 1 candidates" in e.message for e in res.trace.events)


def test_date_rule_missing_and_malformed_dates_are_kept_and_noted():
    pool = [
        (P("new", 1, 0, version_date="2023-12-21"), 0.9),
        (P("old", 1, 1, version_date="2019-03-11"), 0.8),
        (P("none", 1, 2), 0.7),
        (P("bad", 1, 3, version_date="sometime in spring"), 0.6),
        (P("weird", 1, 4, version_date=["2019"]), 0.5),
        (P("yearonly", 1, 5, version_date="2023-10"), 0.4),
    ]
    res = OneShotSelector(OneShotConfig(budget=1000, filter=True), rules=[DropOtherDates()]).select(
        "What changed in 2023?", pool
    )
    assert set(res.ids) == {"new", "none", "bad", "weird", "yearonly"}
    assert [d[0] for d in res.dropped] == ["old"]
    skips = [e for e in res.trace.events if e.kind == "filter.skip"]
    assert len(skips) == 1 and "unparseable date" in skips[0].message  # noted once per query


def test_parse_date_variants():
    import datetime as dt

    assert parse_date(dt.datetime(2020, 1, 2, 3)) == dt.date(2020, 1, 2)
    assert parse_date("2020-13-45") is None
    assert parse_date(True) is None and parse_date(None) is None and parse_date(12) is None
    assert parse_date("2022") == 2022


def test_entity_rules_drop_and_add():
    pool = [
        (Passage(id="acme", text="Acme filed.", metadata={"entities": ["Acme"]}), 0.9),
        (Passage(id="globex", text="Globex filed.", metadata={"entities": ["Globex"]}), 0.8),
        (Passage(id="plain", text="Anyone may file.", metadata={}), 0.7),
        (Passage(id="acme2", text="Acme again " * 30, metadata={"entities": "Acme"}), 0.1),
    ]
    res = OneShotSelector(OneShotConfig(budget=200, filter=True)).select("What did Acme file?", pool)
    assert "globex" not in res.ids
    assert {"acme", "plain", "acme2"} <= set(res.ids)


def test_adjacent_add_uses_corpus_lookup_within_budget():
    corpus = [P(f"d{i}", 1, i, text=f"clause {i} text") for i in range(6)]
    lookup = OneShotSelector.corpus_lookup(corpus)
    sel = OneShotSelector(OneShotConfig(budget=7, filter=True), rules=[AddAdjacent()], lookup=lookup)
    res = sel.select("clause three", [(corpus[3], 1.0)])
    assert res.ids[0] == "d3" and len(res.ids) == 2 and set(res.ids) <= {"d2", "d3", "d4"}
    assert res.tokens_used <= 7
    adds = [e for e in res.trace.events if e.kind == "oneshot.add" and "id" in e.data]
    assert adds and all("kept chunk d3" in e.message for e in adds)
    assert all(c.origin == "add:add-adjacent" for c in res.chunks if c.id != "d3")
    # a tight budget leaves no room: the add is proposed but not admitted
    tight = OneShotSelector(OneShotConfig(budget=3, filter=True), rules=[AddAdjacent()], lookup=lookup)
    res2 = tight.select("clause three", [(corpus[3], 1.0)])
    assert res2.ids == ["d3"]
    assert any("did not fit" in e.message for e in res2.trace.events)


def test_adds_never_resurrect_dropped_chunks():
    corpus = [P("a0", 1, 0), P("a1", 1, 1, version_date="2001-01-01")]
    sel = OneShotSelector(
        OneShotConfig(budget=100, filter=True),
        rules=[DropOtherDates(), AddAdjacent()],
        lookup=OneShotSelector.corpus_lookup(corpus),
    )
    res = sel.select("rules of 2023", [(corpus[0], 1.0), (corpus[1], 0.5)])
    assert res.ids == ["a0"]


@dataclass(frozen=True)
class DropShort:
    """A user-defined rule: declarative, a name and a reason."""

    name: str = "drop-short"

    def drop_reason(self, obj, ctx):
        return "fewer than 3 words" if len(obj.text.split()) < 3 else None


def test_user_rules_extend_the_filter():
    pool = [(Passage(id="a", text="one two"), 0.9), (Passage(id="b", text="one two three"), 0.5)]
    res = OneShotSelector(OneShotConfig(budget=100, filter=True), rules=[DropShort()]).select("q", pool)
    assert res.ids == ["b"] and res.dropped == [("a", "drop-short: fewer than 3 words")]


def test_filter_context_neighbour_ignores_bad_order():
    a = Passage(id="a", text="x", metadata={"DocumentID": 1, "order": "first"})
    assert FilterContext(query=QueryInfo(text="q"), trace=Trace()).neighbour(a, 1) is None
