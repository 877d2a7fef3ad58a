"""MindRef core with a tiny real (random-weight) model: every title real, every passage an exact span."""

from __future__ import annotations

import dataclasses
import doctest
from collections.abc import Sequence
from typing import Any

import pytest
from _mindref import SMALL, corpus
from _tiny_lm import SENTENCES, TITLES, build_tiny_lm, tiny_local_lm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import retrievekit.core.generative.mindref as mindref_module
from retrievekit.core.errors import EmptyQueryError, InvalidInputError
from retrievekit.core.generative import MindRef, MindRefConfig, first_sentence_title
from retrievekit.core.index.suffix_array import SuffixArrayTooLargeError
from retrievekit.core.llm import LocalLM
from retrievekit.core.llm.protocol import Beam
from retrievekit.core.registry import MethodContext, available_methods
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


@pytest.fixture(scope="module")
def lm() -> LocalLM:
    return tiny_local_lm()


@pytest.fixture(scope="module")
def mr(lm: LocalLM) -> MindRef:
    return MindRef(corpus(), lm, SMALL)


def check_hits(mr: MindRef, hits: Sequence[Any]) -> None:
    by_id = {o.id: i for i, o in enumerate(mr.corpus)}
    for h in hits:
        meta = h.obj.metadata
        i = by_id[meta["document_id"]]
        doc = mr.corpus[i]
        assert h.obj.title == mr.titles[i]
        assert tuple(mr.lm.encode(mr.config.title_prefix + mr.titles[i])) in mr.trie
        toks = mr.doc_tokens(i)
        span = toks[meta["token_start"] : meta["token_end"]]
        assert meta["token_end"] - meta["token_start"] <= mr.config.passage_tokens
        assert mr.lm.decode([int(t) for t in span]).strip() == h.obj.text
        assert h.obj.text in doc.text  # exact substring of the document
        assert meta["score"] == pytest.approx(h.score)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet="abcdefghijklmnopqrstuvwxyz ?.ABC", min_size=1, max_size=40).filter(str.strip))
def test_property_titles_real_and_passages_exact(mr: MindRef, query: str) -> None:
    trace = Trace()
    titles = mr.recall_titles(query, trace=trace)
    assert 1 <= len(titles) <= SMALL.title_return
    for t in titles:
        assert t.token_ids in mr.trie
        assert all(mr.titles[d] == t.title for d in t.documents)
    hits = mr.search(query, k=5, trace=trace)
    assert hits and [h.rank for h in hits] == list(range(len(hits)))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    check_hits(mr, hits)
    assert mr.checks["title_violations"] == 0 and mr.checks["passage_violations"] == 0
    assert mr.checks["text_not_substring"] == 0
    assert not [e for e in trace.events if e.kind == "constraint_violation"]
    assert trace.llm_calls >= 2 and "mindref.titles" in trace.stage_seconds


def test_score_is_lam_weighted(mr: MindRef) -> None:
    for h in mr.search("solar power", k=3):
        m = h.obj.metadata
        if m["passage_score"] is not None:
            assert h.score == pytest.approx(0.9 * m["title_score"] + 0.1 * m["passage_score"])


def test_k_is_honoured_by_widening_the_same_title_search(mr: MindRef, lm: LocalLM) -> None:
    paper = MindRef(corpus(), lm, dataclasses.replace(SMALL, widen_to_k=False))
    t0 = Trace()
    base = paper.search("solar power", k=4, trace=t0)
    assert len(base) == SMALL.title_return  # the paper's output: one passage in each of the 2 best titles
    assert [e.kind for e in t0.events].count("short_of_k") == 1 and t0.llm_calls == 2
    trace = Trace()
    hits = mr.search("solar power", k=4, trace=trace)
    assert len(hits) == 4 and len({h.id for h in hits}) == 4
    kinds = [e.kind for e in trace.events]
    assert "widen_to_k" in kinds and "short_of_k" not in kinds
    assert trace.llm_calls == 3  # one title search (not repeated) + the paper's prefix search + one for the extras
    widened = {h.id: h.score for h in hits}
    for h in base:  # the paper's hits are unchanged (same passage, same score), only joined by more
        assert widened[h.id] == pytest.approx(h.score)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    check_hits(mr, hits)
    assert [h.id for h in mr.search("solar power", k=1)] == [max(base, key=lambda h: h.score).id]


def test_k_beyond_every_title_fills_with_passages_then_says_it_is_short(lm: LocalLM) -> None:
    docs = [Passage(id=f"d{i}", title=TITLES[i], text=" ".join(SENTENCES[i : i + 4])) for i in range(3)]
    mr = MindRef(docs, lm, SMALL)
    trace = Trace()
    hits = mr.search("solar power", k=12, trace=trace)
    assert {h.obj.metadata["document_id"] for h in hits} == {"d0", "d1", "d2"}  # every document, not just 2
    assert len(hits) == len({h.id for h in hits}) <= 12
    assert len(hits) > 3 and any(h.id.startswith("d") and "#tok" in h.id for h in hits)  # more passages per document
    if len(hits) < 12:
        short = [e for e in trace.events if e.kind == "short_of_k"]
        assert len(short) == 1 and "3 distinct titles" in short[0].message
    check_hits(mr, hits)


def test_titles_that_tokenize_the_same_map_to_every_document(lm: LocalLM) -> None:
    docs = [
        Passage(id="a", title="Solar panels", text=SENTENCES[2]),
        Passage(id="b", title="Solar panels ", text=SENTENCES[3]),  # same ids after stripping
        Passage(id="c", title="Wind farms", text=SENTENCES[3]),
    ]
    mr = MindRef(docs, lm, SMALL)
    assert len(mr.trie) == 2
    docs_of = {t.title: t.documents for t in mr.recall_titles("solar")}
    assert docs_of["Solar panels"] == (0, 1)
    hits = mr.search("solar", k=5)
    ids = [h.id for h in hits]
    assert {"a", "b"} <= set(ids) and len(ids) == len(set(ids))
    check_hits(mr, hits)


def test_empty_documents_get_a_fallback_passage(lm: LocalLM) -> None:
    docs = [Passage(id="e1", title="Aspirin", text=""), Passage(id="e2", title="Wind farms", text="")]
    mr = MindRef(docs, lm, SMALL)
    trace = Trace()
    hits = mr.search("pain", k=5, trace=trace)
    assert {h.id for h in hits} == {"e1", "e2"}
    assert all(h.obj.text == "" for h in hits)
    assert any(e.kind == "fallback" for e in trace.events)


class JunkPrefixLM(LocalLM):
    """Returns a stage-2 prefix that occurs in no document (as a buggy or foreign decoder might)."""

    def constrained_beam_search(self, prompt: Any, allowed_tokens: Any, **kw: Any) -> list[Beam]:  # type: ignore[override]
        if isinstance(prompt, str) and "paragraph" in prompt:
            return [Beam(token_ids=(5, 5, 5, 5, 5, 5, 5), text="junk", score=-1.0)]
        return super().constrained_beam_search(prompt, allowed_tokens, **kw)


def test_prefix_found_nowhere_is_skipped_and_recorded() -> None:
    model, tok = build_tiny_lm()
    mr = MindRef(corpus(), JunkPrefixLM(model, tok), SMALL)
    trace = Trace()
    hits = mr.search("history of rome", k=5, trace=trace)
    kinds = [e.kind for e in trace.events]
    assert "prefix_not_found" in kinds and "fallback" in kinds
    assert hits and all(h.obj.metadata["token_start"] == 0 for h in hits)
    check_hits(mr, hits)


def test_suffix_array_too_big_is_a_clear_error(lm: LocalLM) -> None:
    mr = MindRef(corpus(), lm, MindRefConfig(title_beams=3, passage_beams=2, prefix_tokens=3, max_sa_tokens=5))
    with pytest.raises(SuffixArrayTooLargeError, match="max_tokens=5"):
        mr.search("solar", k=2)


def test_bad_input(mr: MindRef, lm: LocalLM) -> None:
    with pytest.raises(EmptyQueryError):
        mr.search("   ")
    with pytest.raises(InvalidInputError):
        mr.search("x", k=0)
    with pytest.raises(InvalidInputError):
        MindRef([], lm)
    with pytest.raises(InvalidInputError):
        MindRefConfig(title_return=20)
    with pytest.raises(InvalidInputError):
        MindRefConfig(lam=1.5)
    with pytest.raises(InvalidInputError, match="query"):
        MindRefConfig(title_prompt="no placeholder")
    with pytest.raises(InvalidInputError, match="unknown MindRef option"):
        MindRefConfig.from_options({"beams": 3})


def test_untitled_documents(lm: LocalLM) -> None:
    docs = [Passage(id="x", text="Aspirin thins the blood. More text."), Passage(id="y", text="", title="")]
    assert MindRef(docs[:1], lm).titles == ["Aspirin thins the blood."]
    assert MindRef(docs[:1], lm, MindRefConfig(untitled="id")).titles == ["x"]
    assert MindRef(docs[:1], lm, title_fn=lambda o: "Custom").titles == ["Custom"]
    meta = Passage(id="m", text="Body.", metadata={"title": "From metadata"})
    assert MindRef([meta], lm).titles == ["From metadata"]
    assert first_sentence_title("x" * 300, 10) == "x" * 10


def test_registered_for_bench() -> None:
    assert "mindref" in available_methods()
    cfg = MindRefConfig.from_options({"title_beams": "3", "lam": "0.5"})
    assert cfg.title_beams == 3 and cfg.lam == 0.5
    assert MethodContext(corpus=[], llm="smollm2").llm == "smollm2"


def test_doctests() -> None:
    assert doctest.testmod(mindref_module, optionflags=doctest.ELLIPSIS).failed == 0
