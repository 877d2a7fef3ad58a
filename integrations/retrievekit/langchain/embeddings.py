"""Adapter: any LangChain ``Embeddings`` as a retrievekit :class:`~retrievekit.core.index.embeddings.Embedder`
(``HuggingFaceEmbeddings``, ``OpenAIEmbeddings``, ``OllamaEmbeddings``...).

Pass the model wherever retrievekit takes ``embedder=``; :func:`~retrievekit.core.index.as_embedder.as_embedder`
finds this adapter through the ``retrievekit.embedders`` entry point (or the registration below, made when this
module is imported). Documents go through ``embed_documents``, queries through ``embed_query``; awaited (the async
model driver, an index's awaited search), through the model's own ``aembed_documents`` / ``aembed_query`` on the
caller's loop when its class has them (LangChain's default for a class without runs the sync method on a thread of
its own executor: such a model runs on retrievekit's bounded pool instead). retrievekit's own
:class:`~retrievekit.langchain.embedding_model.RetrieveKitEmbeddings` is unwrapped to the model it holds.

Examples:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> e = as_embedder(DeterministicFakeEmbedding(size=8))
    >>> e.name, e.dim, e.embed_documents(["a", "b"]).shape
    ('DeterministicFakeEmbedding', 8, (2, 8))
"""

from __future__ import annotations

from typing import Any

from retrievekit.core.index.as_embedder import as_embedder, register_embedder_adapter
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder, framework_embedder

__all__ = ["as_embedder", "embedder_from"]


def embedder_from(embeddings: Any) -> Any:
    """``embeddings`` wrapped as an ``Embedder`` when it is a LangChain ``Embeddings``, else None.

    Examples:
        >>> embedder_from("not a model") is None
        True
    """
    ours = ("retrievekit.langchain.embedding_model", "RetrieveKitEmbeddings")
    theirs = ("langchain_core.embeddings.embeddings", "Embeddings")
    return framework_embedder(embeddings, ours=ours, theirs=theirs, wrap=_wrapped)


def _wrapped(embeddings: Any, base: Any) -> WrappedEmbedder:
    """An ``Embeddings`` as a ``WrappedEmbedder``: its async methods are awaited only when its class has its own."""
    cls = type(embeddings)
    many_native, one_native = (
        cls.aembed_documents is not base.aembed_documents,
        cls.aembed_query is not base.aembed_query,
    )
    model = getattr(embeddings, "model_name", None) or getattr(embeddings, "model", None)
    name = str(model) if isinstance(model, str) and model else type(embeddings).__name__
    return WrappedEmbedder(
        name,
        embeddings.embed_documents,
        embeddings.embed_query,
        source=f"LangChain {type(embeddings).__name__} (model {name})",
        wrapped=embeddings,
        aembed_many=embeddings.aembed_documents if many_native else None,
        aembed_one=embeddings.aembed_query if one_native else None,
    )


register_embedder_adapter("langchain", embedder_from)
