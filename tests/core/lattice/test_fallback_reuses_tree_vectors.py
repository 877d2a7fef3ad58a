"""A slate that falls back is scored from the vectors the tree stores: a query whose every slate falls back embeds
its query once and no text (it used to embed every slate's texts again, 154 embedding requests for one query on a
30-abstract tree through a served embedder); sync and awaited alike, with the same scores."""

from __future__ import annotations

import asyncio

import numpy as np
from _lattice import planted_tree

from retrievekit.core.fakes import FixedReplyLLM
from retrievekit.core.lattice.method import Lattice
from retrievekit.core.lattice.scoring import cosine_scores
from retrievekit.core.trace import Trace


class CountingEmbedder:
    """Hashed bag-of-words vectors, counting what it is asked to embed."""

    name, dim = "counting", 16

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[str] = []

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().split():
            v[sum(map(ord, word)) % self.dim] += 1.0
        return v

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self._vector(text)

    def embed_documents(self, texts, **kw) -> np.ndarray:
        self.documents.extend(texts)
        return np.stack([self._vector(t) for t in texts])


def _lattice() -> tuple[Lattice, CountingEmbedder]:
    tree = planted_tree()
    embedder = CountingEmbedder()
    tree.embeddings = {n.id: embedder._vector(n.text) for n in tree.iter_nodes()}
    return Lattice(tree, FixedReplyLLM("no JSON here"), embedder=embedder), embedder


def test_an_all_fallback_query_embeds_its_query_once_and_no_text():
    lattice, embedder = _lattice()
    trace = Trace()
    hits = lattice.search("volcano magma lava", k=3, trace=trace)
    assert trace.counters["lattice.fallback_slates"] == trace.counters["lattice.slates"] >= 4
    assert embedder.documents == [] and embedder.queries == ["volcano magma lava"]
    assert hits[0].id == "t1s2l0"  # the stored vectors rank the gold leaf first
    state = lattice.last_state
    root_slate = state.slates[0]
    q = embedder._vector("volcano magma lava")
    expected = cosine_scores(q, np.stack([lattice.tree.embeddings[n] for n in root_slate[1]]))
    assert root_slate[2] == expected


def test_the_awaited_search_falls_back_the_same_way():
    lattice, embedder = _lattice()
    sync_ids = [h.id for h in lattice.search("volcano magma lava", k=3)]
    awaited = asyncio.run(lattice.asearch("volcano magma lava", k=3))
    assert [h.id for h in awaited] == sync_ids
    assert embedder.documents == [] and len(embedder.queries) == 2
