"""The BM25 engine reaches every BM25 index a method builds (issue #63: one BM25 under every method): ``bm25``,
``hybrid`` and ``arm`` take ``bm25_engine`` (tests in ``test_corpus_fingerprint.py`` and ``test_arm_judge_hook.py``),
and so do the first stages of ``llm-rerank`` and ``judge-rerank``; a first stage without a BM25 index refuses it by
name, before anything is built."""

from __future__ import annotations

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.fakes import WordScoreLLM
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.types import Passage

DOCS = [Passage(id="a", text="sun or rain"), Passage(id="b", text="rain, rain"), Passage(id="c", text="snow")]


class _Sunny:
    """A stand-in judge: a text with "sun" is relevant."""

    def score_relevance(self, query, candidates, *, trace=None):
        return [0.9 if "sun" in c else 0.1 for c in candidates]


@pytest.mark.parametrize("engine", ["bm25s", "tantivy"])
def test_the_first_stages_bm25_index_is_on_the_engine_asked_for(engine):
    llm_rerank = build_method(
        "llm-rerank",
        MethodContext(corpus=DOCS, llm=WordScoreLLM("sun"), options={"calls": "1", "first_stage": "bm25",
                                                                       "bm25_engine": engine}),
    )  # fmt: skip
    assert llm_rerank.first_stage.config.engine == engine
    assert [h.id for h in llm_rerank.search("rain", k=2)] == ["a", "b"]  # the LLM puts the sunny one first
    judged = build_method("judge-rerank", MethodContext(corpus=DOCS, judge=_Sunny(), options={"bm25_engine": engine}))
    assert judged.first_stage.config.engine == engine
    assert judged.search("rain", k=1)[0].id == "a"


@pytest.mark.parametrize("method", ["llm-rerank", "judge-rerank"])
def test_a_first_stage_without_bm25_refuses_the_engine_by_name(method):
    ctx = MethodContext(corpus=DOCS, llm=WordScoreLLM("sun"), judge=_Sunny(),
                        options={"first_stage": "dense", "bm25_engine": "tantivy"})  # fmt: skip
    with pytest.raises(InvalidInputError, match="bm25_engine reaches no BM25 index with first_stage=dense"):
        build_method(method, ctx)
    with pytest.raises(InvalidInputError, match="bm25_engine must be one of"):
        build_method(method, MethodContext(corpus=DOCS, llm=WordScoreLLM("sun"), judge=_Sunny(),
                                           options={"first_stage": "bm25", "bm25_engine": "lucene"}))  # fmt: skip
