"""Retrievers built by ``from_documents`` own their indexes: two in-memory hybrids live side by side, and closing one
closes what it owns only."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from llama_index.core import Document as LlamaDocument

from retrievekit.core.errors import InvalidInputError
from retrievekit.langchain import RetrieveKitRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LlamaRetriever


def test_two_hybrid_retrievers_without_work_dir(minilm):
    a = RetrieveKitRetriever.from_documents([Document(page_content="Paris is in France.", id="p")], method="hybrid")
    b = RetrieveKitRetriever.from_documents([Document(page_content="Rome is in Italy.", id="r")], method="hybrid")
    assert [d.id for d in a.invoke("France")] == ["p"] and [d.id for d in b.invoke("Italy")] == ["r"]
    with b:  # closing one retriever closes what it owns, not the other's
        pass
    assert [d.id for d in a.invoke("France")] == ["p"]
    with pytest.raises(InvalidInputError, match="closed"):
        b.invoke("Italy")


def test_two_llama_index_hybrid_retrievers_without_work_dir(minilm):
    a = LlamaRetriever.from_documents([LlamaDocument(text="Paris is in France.", id_="p")], method="hybrid")
    with LlamaRetriever.from_documents([LlamaDocument(text="Rome is in Italy.", id_="r")], method="hybrid") as b:
        assert [n.node.node_id for n in b.retrieve("Italy")] == ["r"]
    assert [n.node.node_id for n in a.retrieve("France")] == ["p"]
