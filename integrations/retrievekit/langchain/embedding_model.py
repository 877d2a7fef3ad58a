"""retrievekit's embedding models as a LangChain ``Embeddings``: a served endpoint (``"openai:MODEL@URL"``), the
embedded all-MiniLM-L6-v2, or any ``embedder=`` value, for LangChain's vector stores and chains.

``embed_documents`` / ``embed_query`` are the core embedder's; ``aembed_documents`` / ``aembed_query`` await its
async path on the caller's loop (a served endpoint's async client: no thread per request; a cancelled caller sends
nothing more), not LangChain's default of a thread per call; an in-process model runs on retrievekit's bounded pool.
Passed back to retrievekit as ``embedder=``, it is the model it holds (the same name, fingerprint and policy).

Examples:
    >>> import asyncio
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> e = RetrieveKitEmbeddings(OnesEmbedder())
    >>> e.embed_query("tea"), asyncio.run(e.aembed_documents(["a", "b"]))
    ([1.0, 1.0], [[1.0, 1.0], [1.0, 1.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from retrievekit.core.index.as_embedder import required_embedder
from retrievekit.core.index.awaited import aembed_documents, aembed_query

__all__ = ["RetrieveKitEmbeddings"]


class RetrieveKitEmbeddings(Embeddings):
    """Any ``embedder=`` value (module docstring) as a LangChain ``Embeddings``; ``.embedder`` is the core model.

    Examples:
        >>> RetrieveKitEmbeddings("openai:nomic-embed@http://127.0.0.1:8080/v1").embedder.name
        'nomic-embed'
        >>> RetrieveKitEmbeddings(None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: RetrieveKitEmbeddings needs an embedding model: a retrievekit Embedder, 'all-MiniLM-L6-v2' or 'openai:MODEL@URL'
    """

    def __init__(self, embedder: Any) -> None:
        core = required_embedder(embedder, where="RetrieveKitEmbeddings")
        self.embedder = core

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text (the core model's, L2-normalised for retrievekit's own)."""
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        """The query's vector."""
        return np.asarray(self.embedder.embed_query(text), dtype=np.float32).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """:meth:`embed_documents` awaited through the core model's async path (module docstring)."""
        return (await aembed_documents(self.embedder, list(texts))).tolist()

    async def aembed_query(self, text: str) -> list[float]:
        """:meth:`embed_query` awaited through the core model's async path."""
        return (await aembed_query(self.embedder, text)).tolist()
