"""A dense build of more objects than SQLite allows variables in one query (32,766): the id clash check of
``DenseIndex.add`` runs in chunks, so 40,000 objects build, and a clash far past the first chunk is still found."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage


class _Angle:
    """A cheap real embedder: the unit vector at an angle (0 to 90 degrees) read from the text's number (0 for a text
    without one, such as the index's fingerprint probes)."""

    name, dim = "angle-2d", 2

    def embed_documents(self, texts, **_):
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text):
        last = text.split()[-1]
        a = (float(last) if last.isdigit() else 0.0) * np.pi / 2 / 40_000
        return np.array([np.cos(a), np.sin(a)], dtype=np.float32)


def test_forty_thousand_objects_build_and_a_late_clash_is_found():
    corpus = [Passage(id=f"d{i}", text=f"number {i}") for i in range(40_000)]
    with DenseIndex.build(corpus, embedder=_Angle(), batch_size=5_000) as idx:
        assert len(idx) == 40_000
        assert abs(int(idx.search("number 37123", k=1)[0].id[1:]) - 37123) <= 50  # a late batch is searchable
        with pytest.raises(InvalidInputError, match="1 object ids already in the index, e.g. 'd39999'"):
            idx.add([Passage(id="new", text="number 1"), Passage(id="d39999", text="number 2")])
        assert len(idx) == 40_000
