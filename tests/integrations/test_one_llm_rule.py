"""One ``llm=`` rule for every constructor of an edge: ``from_documents`` and ``from_vector_store`` take the same values
(a served spec, a model's name, a framework's model, ``None``), so a method reached through the user's vector store
gets the model it would get from documents. ``from_vector_store`` used to wrap ``llm=`` with the edge's own rule,
which refused a served spec or a name."""

from __future__ import annotations

from langchain_core.documents import Document as LCDocument
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from retrievekit.core.fakes import OnesEmbedder
from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
from retrievekit.llama_index import RetrieveKitRetriever as LIRetriever

SERVED = "openai:scripted@http://127.0.0.1:9/v1"  # built, never sent to: nothing listens there
TEXTS = ["red apples grow on trees", "green pears are sweet", "tea is brewed from leaves"]


class _Ones(OnesEmbedder):
    """The store's embedder, as LangChain's ``Embeddings`` asks."""

    def embed_query(self, text):  # type: ignore[override]
        return [1.0, 1.0]

    def embed_documents(self, texts, **kw):  # type: ignore[override]
        return [[1.0, 1.0] for _ in texts]


def _endpoint(retriever) -> str:
    core = getattr(retriever, "_core", None) or retriever.retriever
    return core.scorer.llm.endpoint


def test_llama_index_from_documents_and_from_vector_store_take_the_same_llm():
    nodes = [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(TEXTS)]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=2))
    options = {"method": "llm-rerank", "llm": SERVED, "first_stage": "dense", "candidates": 3, "calls": 1}
    from_docs = LIRetriever.from_documents(nodes, embedder=OnesEmbedder(), **options)
    from_store = LIRetriever.from_vector_store(index, embedder=OnesEmbedder(), **options)
    assert _endpoint(from_docs) == _endpoint(from_store) == "http://127.0.0.1:9/v1 (model scripted)"


def test_langchain_from_documents_and_from_vector_store_take_the_same_llm():
    docs = [LCDocument(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    store = InMemoryVectorStore(_Ones())
    store.add_documents(docs)
    options = {"method": "llm-rerank", "llm": SERVED, "first_stage": "dense", "candidates": 3, "calls": 1}
    from_docs = LCRetriever.from_documents(docs, embedder=OnesEmbedder(), **options)
    from_store = LCRetriever.from_vector_store(store, embedder=OnesEmbedder(), documents=docs, **options)
    assert _endpoint(from_docs) == _endpoint(from_store) == "http://127.0.0.1:9/v1 (model scripted)"
