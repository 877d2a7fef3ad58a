"""Adapter: any LangChain ``Embeddings`` as a retrievekit :class:`~retrievekit.core.index.embeddings.Embedder`
(``HuggingFaceEmbeddings``, ``OpenAIEmbeddings``, ``OllamaEmbeddings``...).

Pass the model wherever retrievekit takes ``embedder=``; :func:`~retrievekit.core.index.as_embedder.as_embedder`
finds this adapter through the ``retrievekit.embedders`` entry point (or the registration below, made when this
module is imported). Documents go through ``embed_documents``, queries through ``embed_query``.

Examples:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> e = as_embedder(DeterministicFakeEmbedding(size=8))
    >>> e.name, e.dim, e.embed_documents(["a", "b"]).shape
    ('DeterministicFakeEmbedding', 8, (2, 8))
"""

from __future__ import annotations

from typing import Any

from retrievekit.core.index.as_embedder import register_embedder_adapter
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder, loaded_class

__all__ = ["as_embedder", "embedder_from"]


def embedder_from(embeddings: Any) -> WrappedEmbedder | None:
    """``embeddings`` wrapped as an ``Embedder`` when it is a LangChain ``Embeddings``, else None.

    Examples:
        >>> embedder_from("not a model") is None
        True
    """
    base = loaded_class("langchain_core.embeddings.embeddings", "Embeddings")
    if base is None or not isinstance(embeddings, base):
        return None
    model = getattr(embeddings, "model_name", None) or getattr(embeddings, "model", None)
    name = str(model) if isinstance(model, str) and model else type(embeddings).__name__
    return WrappedEmbedder(
        name,
        embeddings.embed_documents,
        embeddings.embed_query,
        source=f"LangChain {type(embeddings).__name__} (model {name})",
        wrapped=embeddings,
    )


def as_embedder(embeddings: Any) -> Any:
    """Any ``embedder=`` value as an ``Embedder`` (an ``Embeddings`` wrapped; see
    :func:`retrievekit.core.index.as_embedder.as_embedder` for the rest).

    Examples:
        >>> as_embedder(None) is None
        True
    """
    from retrievekit.core.index.as_embedder import as_embedder as core_as_embedder

    return core_as_embedder(embeddings)


register_embedder_adapter("langchain", embedder_from)
