"""ARM's unit vectors (:class:`ArmVectors`): the question's, the candidates' (the vectors a Chroma dense index stores,
else embedded from the objects' text) and the cells' and headers' texts, the last two kept between searches up to
:data:`CACHE_LIMIT` entries each.

Examples:
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> from retrievekit.core.types import Passage
    >>> vecs = ArmVectors(OnesEmbedder(), dense=None)
    >>> vecs.of_objects(["a"], {"a": Passage(id="a", text="x")}).shape, round(float(vecs.query("q") @ vecs.query("q")), 6)
    ((1, 2), 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.types import DataObject

__all__ = ["CACHE_LIMIT", "ArmVectors"]

CACHE_LIMIT = 100_000
"""Entries each cache keeps (objects' vectors, texts' vectors) before it is emptied and starts again."""


def _unit_rows(vecs: Any, n: int) -> np.ndarray:
    out = np.asarray(vecs, dtype=float)
    if out.ndim != 2:
        out = out.reshape(n, -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


class ArmVectors:
    """The vectors one :class:`~retrievekit.core.arm.retriever.Arm` compares, over its embedder and dense index.

    Searches running at once share the caches: each reads what it needs into its own result, so a cache emptied by
    another search in between costs a vector again, never a missing one.

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> ArmVectors(OnesEmbedder(), dense=None).embed(["a", "b"]).shape
        (2, 2)
    """

    def __init__(self, embedder: Any, dense: Any) -> None:
        self.embedder = embedder
        self.dense = dense
        self.texts: dict[str, np.ndarray] = {}  # cells' and headers' vectors by text (compatibility's cell cache)
        self._objects: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (the embedder's document side)."""
        return _unit_rows(self.embedder.embed_documents(list(texts)), len(texts))

    def query(self, query: str) -> np.ndarray:
        """The question's unit vector (the embedder's query side)."""
        v = np.asarray(self.embedder.embed_query(query), dtype=float).reshape(-1)
        return v / (np.linalg.norm(v) or 1.0)

    def text_cache(self) -> dict[str, np.ndarray]:
        """The texts' cache for this search (emptied first past :data:`CACHE_LIMIT`)."""
        if len(self.texts) > CACHE_LIMIT:
            self.texts.clear()
        return self.texts

    def of_objects(self, ids: Sequence[str], objects: Mapping[str, DataObject]) -> np.ndarray:
        """Unit vectors of the objects ``ids`` (rows in that order; ``objects`` holds each by id): cached, else read
        from a Chroma collection's stored vectors, else embedded from the objects' text."""
        if not ids:
            return np.zeros((0, 1))
        got = {i: v for i in ids if (v := self._objects.get(i)) is not None}
        missing = [i for i in dict.fromkeys(ids) if i not in got]
        if missing:
            if len(self._objects) > CACHE_LIMIT:
                self._objects.clear()
            got |= self._stored(missing)
            still = [i for i in missing if i not in got]
            if still:
                got |= dict(zip(still, self.embed([objects[i].index_text() for i in still]), strict=True))
            self._objects.update((i, got[i]) for i in missing)
        return np.stack([got[i] for i in ids])

    def _stored(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The vectors a Chroma dense index stores for ``ids`` (none for another index, or when it has none)."""
        col = getattr(self.dense, "collection", None)
        if col is None:
            return {}
        try:
            got = col.get(ids=ids, include=["embeddings"])
            pairs = zip(got["ids"], got["embeddings"], strict=True)
            return {
                oid: v / (np.linalg.norm(v) or 1.0) for oid, v in ((o, np.asarray(e, dtype=float)) for o, e in pairs)
            }
        except Exception:  # an index without stored vectors: embedded instead
            return {}
