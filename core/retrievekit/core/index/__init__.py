"""Indexes: lexical (BM25), dense (Chroma + MiniLM), hybrid fusion, and token tries.

Examples:
    >>> from retrievekit.core.index import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> idx = BM25Index.build([Passage(id="a", text="solar panels"), Passage(id="b", text="wind farms")])
    >>> idx.search("solar", k=1)[0].id
    'a'
"""

from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.hybrid import HybridRetriever

__all__ = ["BM25Config", "BM25Index", "HybridRetriever", "DenseIndex", "MiniLMEmbedder"]


def __getattr__(name: str) -> object:
    # Dense parts pull chromadb / torch: import them only when asked for.
    if name == "DenseIndex":
        from retrievekit.core.index.dense import DenseIndex

        return DenseIndex
    if name == "MiniLMEmbedder":
        from retrievekit.core.index.embeddings import MiniLMEmbedder

        return MiniLMEmbedder
    raise AttributeError(name)
