"""A judge that returns NaN is refused by every reranker, the same way the judged methods refuse it (issue #15.6).

Before, NaN scores passed ``JudgeRerankRetriever``, the LlamaIndex ``JudgeReranker`` and the LangChain
``JudgeCompressor`` and came back as NaN in a wrong order. All three now go through the checked judge call.
"""

from __future__ import annotations

import math

import pytest
from _corpora import FRUIT
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from retrievekit.core.errors import LLMOutputError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.judge.method import JudgeRerankConfig, JudgeRerankRetriever
from retrievekit.langchain import JudgeCompressor
from retrievekit.llama_index import JudgeReranker


class NaNJudge:
    """Scores the first candidate NaN and the others by position (a judge with a broken readout)."""

    def score_relevance(self, query, candidates, *, trace=None):
        return [math.nan] + [1.0 / (i + 2) for i in range(len(candidates) - 1)]


def test_the_core_reranker_refuses_nan():
    r = JudgeRerankRetriever(BM25Index.build(FRUIT), NaNJudge(), JudgeRerankConfig(rerank_k=5))
    with pytest.raises(LLMOutputError, match="NaN"):
        r.search("river", k=3)


def test_the_llama_index_reranker_refuses_nan():
    nodes = [NodeWithScore(node=TextNode(text=p.text, id_=p.id), score=1.0) for p in FRUIT[:4]]
    with pytest.raises(LLMOutputError, match="NaN"):
        JudgeReranker(judge=NaNJudge(), top_n=2).postprocess_nodes(nodes, QueryBundle("river"))


def test_the_langchain_compressor_refuses_nan():
    docs = [Document(page_content=p.text, id=p.id) for p in FRUIT[:4]]
    with pytest.raises(LLMOutputError, match="NaN"):
        JudgeCompressor(judge=NaNJudge(), top_n=2).compress_documents(docs, "river")


def test_finite_scores_still_rerank():
    docs = [Document(page_content=p.text, id=p.id) for p in FRUIT[:4]]

    class Finite(NaNJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            return [0.1, 0.9, 0.5, 0.2][: len(candidates)]

    out = JudgeCompressor(judge=Finite(), top_n=2).compress_documents(docs, "river")
    assert [d.id for d in out] == [FRUIT[1].id, FRUIT[2].id]
    assert [d.metadata["relevance_score"] for d in out] == [0.9, 0.5]
