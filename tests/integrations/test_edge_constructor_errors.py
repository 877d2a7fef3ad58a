"""Bad constructor arguments to the edges' components raise retrievekit's typed error where they are given.

Before, ``RetrieveKitRetriever(retriever="x")`` was accepted and failed at its first query with a raw
``AttributeError``, ``k=-1`` was accepted until the query, and every other refusal reached a LangChain user wrapped
in pydantic's ``ValidationError``.
"""

from __future__ import annotations

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index import BM25Index
from retrievekit.core.types import Passage
from retrievekit.langchain import JudgeCompressor, LatticeRetriever, OneShotCompressor, RetrieveKitDocumentIndex
from retrievekit.langchain import RetrieveKitRetriever as LangChainRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LlamaIndexRetriever


@pytest.fixture(scope="module")
def core():
    return BM25Index.build([Passage(id="a", text="red apples"), Passage(id="b", text="green pears")])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda core: LangChainRetriever(retriever="not a retriever"), "wraps a retrievekit core retriever"),
        (lambda core: LangChainRetriever(retriever=core, k=-1), "k must be a positive integer, got -1"),
        (lambda core: LangChainRetriever(retriever=core, k="many"), r"RetrieveKitRetriever\(\): k: Input should be"),
        (lambda core: LangChainRetriever(), r"retriever: Field required"),
        (lambda core: LatticeRetriever(retriever=object()), "LatticeRetriever.. wraps a retrievekit core retriever"),
        (lambda core: OneShotCompressor(budget=-1), "budget must be a positive int"),
        (lambda core: OneShotCompressor(budget="lots"), r"OneShotCompressor\(\): budget: Input should be"),
        (lambda core: JudgeCompressor(judge=3), "judge must implement score_relevance"),
        (lambda core: RetrieveKitDocumentIndex(method="nope"), "a LiveIndex is one of"),
        (lambda core: RetrieveKitDocumentIndex(method="bm25", k="x"), r"RetrieveKitDocumentIndex\(\): k: Input should"),
        (lambda core: LlamaIndexRetriever("not a retriever"), "wraps a retrievekit core retriever"),
        (lambda core: LlamaIndexRetriever(core, similarity_top_k=0), "k must be a positive integer, got 0"),
    ],
)
def test_a_bad_argument_is_refused_with_the_typed_error_at_construction(core, build, message):
    with pytest.raises(InvalidInputError, match=message) as refused:
        build(core)
    assert type(refused.value).__module__ == "retrievekit.core.errors"


def test_good_arguments_still_build_working_components(core):
    assert [d.id for d in LangChainRetriever(retriever=core, k=1).invoke("pears")] == ["b"]
    assert [n.node.node_id for n in LlamaIndexRetriever(core, similarity_top_k=1).retrieve("apples")] == ["a"]
