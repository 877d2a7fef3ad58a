"""One-SHOT's stated rules for bad scores and duplicate ids (issue #52 item 5), through the real LlamaIndex
postprocessor and LangChain compressor: a non-finite score (NaN, inf, -inf) ranks after every other candidate,
never before one scored 0.5; two nodes with one id and one text are merged (the best finite score kept), two with
one id and different texts are refused naming the id."""

from __future__ import annotations

import math

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.langchain import OneShotCompressor
from retrievekit.llama_index import OneShotPostprocessor

TEXT = "one two three four five"  # 5 regex tokens: a budget of 5 keeps exactly one node


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_score_ranks_last_in_llamaindex(bad):
    nodes = [
        NodeWithScore(node=TextNode(id_="bad", text=TEXT), score=bad),
        NodeWithScore(node=TextNode(id_="good", text=TEXT.upper()), score=0.5),
    ]
    pp = OneShotPostprocessor(budget=5)
    assert [n.node.node_id for n in pp.postprocess_nodes(nodes, query_str="q")] == ["good"]
    both = OneShotPostprocessor(budget=100).postprocess_nodes(nodes, query_str="q")
    assert [n.node.node_id for n in both] == ["good", "bad"]
    assert any(e.kind == "oneshot.scores" and "ranked last" in e.message for e in pp.last_trace.events)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_score_ranks_last_in_langchain(bad):
    docs = [
        Document(page_content=TEXT, id="bad", metadata={"score": bad}),
        Document(page_content=TEXT.upper(), id="good", metadata={"score": 0.5}),
    ]
    assert [d.id for d in OneShotCompressor(budget=5).compress_documents(docs, "q")] == ["good"]


def test_one_id_and_one_text_merge_keeping_the_best_score():
    nodes = [
        NodeWithScore(node=TextNode(id_="a", text=TEXT), score=0.1),
        NodeWithScore(node=TextNode(id_="b", text="six seven eight nine ten"), score=0.5),
        NodeWithScore(node=TextNode(id_="a", text=TEXT), score=0.9),
    ]
    pp = OneShotPostprocessor(budget=5)
    out = pp.postprocess_nodes(nodes, query_str="q")
    assert [(n.node.node_id, n.score) for n in out] == [("a", 0.9)]
    assert any(e.kind == "oneshot.dedupe" and "best score" in e.message for e in pp.last_trace.events)


def test_one_id_with_two_texts_is_refused_naming_the_id():
    nodes = [
        NodeWithScore(node=TextNode(id_="a", text=TEXT), score=0.9),
        NodeWithScore(node=TextNode(id_="a", text="an entirely different chunk"), score=0.8),
    ]
    with pytest.raises(InvalidInputError, match="'a'.*different texts"):
        OneShotPostprocessor(budget=100).postprocess_nodes(nodes, query_str="q")


@pytest.mark.parametrize("mode", ["rank", "minmax", "max", "raw"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_one_bad_score_leaves_the_finite_scores_order_alone(mode, bad):
    """Issue #62 item 8: ``[0.1, 0.9, nan]`` with room for one node keeps the 0.9 node, in every normalisation; the
    bad node comes after both finite ones when there is room for all."""
    texts = [TEXT, "six seven eight nine ten", "eleven twelve thirteen fourteen fifteen"]
    nodes = [
        NodeWithScore(node=TextNode(id_=i, text=t), score=s)
        for i, t, s in zip(["low", "high", "bad"], texts, [0.1, 0.9, bad], strict=True)
    ]
    config = OneShotConfig(budget=5, score_normalization=mode)
    assert [n.node.node_id for n in OneShotPostprocessor(config=config).postprocess_nodes(nodes, query_str="q")] == [
        "high"
    ]
    every = OneShotPostprocessor(config=OneShotConfig(budget=100, score_normalization=mode))
    assert [n.node.node_id for n in every.postprocess_nodes(nodes, query_str="q")] == ["high", "low", "bad"]
    docs = [Document(page_content=n.node.text, id=n.node.node_id, metadata={"score": n.score}) for n in nodes]
    assert [d.id for d in OneShotCompressor(config=config).compress_documents(docs, "q")] == ["high"]
