"""Adapter: any LlamaIndex ``BaseEmbedding`` as a retrievekit
:class:`~retrievekit.core.index.embeddings.Embedder` (``HuggingFaceEmbedding``, ``OpenAIEmbedding``,
``OllamaEmbedding``...), and the ``Settings.embed_model`` the user set.

Pass the model wherever retrievekit takes ``embedder=``; :func:`~retrievekit.core.index.as_embedder.as_embedder`
finds this adapter through the ``retrievekit.embedders`` entry point (or the registration below, made when this
module is imported). Documents go through ``get_text_embedding_batch``, queries through ``get_query_embedding``;
awaited (the async model driver, an index's awaited search), through ``aget_text_embedding_batch`` and
``aget_query_embedding`` on the caller's loop. retrievekit's own
:class:`~retrievekit.llama_index.embedding_model.RetrieveKitEmbedding` is unwrapped to the model it holds.

Examples:
    >>> from llama_index.core.embeddings import MockEmbedding
    >>> e = as_embedder(MockEmbedding(embed_dim=4))
    >>> e.name, e.dim, e.embed_documents(["a", "b"]).shape
    ('MockEmbedding', 4, (2, 4))
"""

from __future__ import annotations

from typing import Any

from retrievekit.core.index.as_embedder import as_embedder, register_embedder_adapter
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder, framework_embedder

__all__ = ["as_embedder", "embedder_from", "user_embed_model"]


def embedder_from(embed_model: Any) -> Any:
    """``embed_model`` wrapped as an ``Embedder`` when it is a LlamaIndex ``BaseEmbedding``, else None.

    Examples:
        >>> embedder_from("not a model") is None
        True
    """
    ours = ("retrievekit.llama_index.embedding_model", "RetrieveKitEmbedding")
    theirs = ("llama_index.core.base.embeddings.base", "BaseEmbedding")
    return framework_embedder(embed_model, ours=ours, theirs=theirs, wrap=_wrapped)


def _wrapped(embed_model: Any, base: Any) -> WrappedEmbedder:
    """A ``BaseEmbedding`` as a ``WrappedEmbedder`` (its own async methods awaited)."""
    model = str(getattr(embed_model, "model_name", "") or "")
    name = model if model and model != "unknown" else type(embed_model).__name__
    source = f"LlamaIndex {type(embed_model).__name__} (model {name})"
    return WrappedEmbedder(
        name,
        embed_model.get_text_embedding_batch,
        embed_model.get_query_embedding,
        source=source,
        batch_size=max(64, int(getattr(embed_model, "embed_batch_size", 10) or 10)),
        wrapped=embed_model,
        aembed_many=embed_model.aget_text_embedding_batch,
        aembed_one=embed_model.aget_query_embedding,
    )


def user_embed_model(embed_model: Any) -> Any:
    """``embed_model`` when given; else ``Settings.embed_model`` when the user set it; else None (the embedded
    default). Reading an unset ``Settings.embed_model`` would try to build OpenAI's model (an ``ImportError`` or a
    printed notice), so "set by the user" is read from the private slot ``Settings`` keeps it in, never by reading
    the property; nothing touches ``Settings`` at import time.

    Examples:
        >>> user_embed_model(None) is None  # Settings.embed_model never set
        True
    """
    if embed_model is not None:
        return embed_model
    from llama_index.core import Settings

    return getattr(Settings, "_embed_model", None)


register_embedder_adapter("llama-index", embedder_from)
