"""ARM's vector caches under searches running at once: a cache emptied by another search between this search's
reads and its use costs a vector again, never a missing one (the race, made deterministic: the embedder empties the
cache while it embeds what the cache lacked)."""

from __future__ import annotations

import numpy as np

from retrievekit.core.arm.compatibility import _cell_vectors
from retrievekit.core.arm.vectors import ArmVectors
from retrievekit.core.types import Passage


class Emptying:
    """An embedder that empties ``caches`` each time it embeds (another search crossing the cache limit)."""

    name = "emptying"

    def __init__(self) -> None:
        self.caches: list[dict] = []
        self.embedded: list[str] = []

    def embed_documents(self, texts):
        for cache in self.caches:
            cache.clear()
        self.embedded += texts
        return [[float(len(t)), 1.0] for t in texts]

    def embed_query(self, text):
        return [1.0, 1.0]


def test_objects_vectors_survive_a_cache_emptied_while_the_missing_ones_are_embedded():
    emb = Emptying()
    vecs = ArmVectors(emb, dense=None)
    objects = {i: Passage(id=i, text=i * 3) for i in ("a", "bb")}
    first = vecs.of_objects(["a"], objects)
    emb.caches.append(vecs._objects)
    got = vecs.of_objects(["a", "bb", "a"], objects)  # "a" cached, "bb" embedded: the embedding empties the cache
    assert np.allclose(got[0], first[0]) and np.allclose(got[2], first[0]) and emb.embedded == ["aaa", "bbbbbb"]


def test_cell_vectors_survive_a_cache_emptied_while_the_missing_ones_are_embedded():
    emb = Emptying()
    cache: dict = {}
    embed = emb.embed_documents
    first = _cell_vectors(["x"], embed, cache)
    emb.caches.append(cache)
    got = _cell_vectors(["x", "yy", "yy"], embed, cache)
    assert np.allclose(got[0], first[0]) and got.shape == (3, 2) and emb.embedded == ["x", "yy"]
