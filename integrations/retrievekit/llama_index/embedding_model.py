"""retrievekit's embedding models as a LlamaIndex ``BaseEmbedding``: a served endpoint (``"openai:MODEL@URL"``), the
embedded all-MiniLM-L6-v2, or any ``embedder=`` value, for ``Settings.embed_model`` and LlamaIndex's indexes.

The sync methods are the core embedder's; the async ones (``aget_query_embedding``, ``aget_text_embedding_batch``)
await its async path on the caller's loop (a served endpoint's async client: no thread per request; a cancelled
caller sends nothing more); an in-process model runs on retrievekit's bounded pool. Passed back to retrievekit as
``embedder=``, it is the model it holds (the same name, fingerprint and policy).

Examples:
    >>> import asyncio
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> e = RetrieveKitEmbedding(OnesEmbedder())
    >>> e.get_query_embedding("tea"), asyncio.run(e.aget_text_embedding_batch(["a", "b"]))
    ([1.0, 1.0], [[1.0, 1.0], [1.0, 1.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from retrievekit.core.index.as_embedder import required_embedder
from retrievekit.core.index.awaited import aembed_documents, aembed_query

__all__ = ["RetrieveKitEmbedding"]


class RetrieveKitEmbedding(BaseEmbedding):
    """Any ``embedder=`` value (module docstring) as a LlamaIndex ``BaseEmbedding``; ``.embedder`` is the core model.

    Examples:
        >>> RetrieveKitEmbedding("openai:nomic-embed@http://127.0.0.1:8080/v1").model_name
        'nomic-embed'
        >>> RetrieveKitEmbedding(None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: RetrieveKitEmbedding needs an embedding model: a retrievekit Embedder, 'all-MiniLM-L6-v2' or 'openai:MODEL@URL'
    """

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Any, **kwargs: Any) -> None:
        core = required_embedder(embedder, where="RetrieveKitEmbedding")
        kwargs.setdefault("embed_batch_size", int(getattr(core, "batch_size", 64) or 64))
        super().__init__(model_name=str(getattr(core, "name", type(core).__name__)), **kwargs)
        self._embedder = core

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name of the class."""
        return "RetrieveKitEmbedding"

    @property
    def embedder(self) -> Any:
        """The core embedding model."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return np.asarray(self._embedder.embed_query(query), dtype=np.float32).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return np.asarray(self._embedder.embed_documents(list(texts)), dtype=np.float32).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await aembed_query(self._embedder, query)).tolist()

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return (await aembed_documents(self._embedder, list(texts))).tolist()
