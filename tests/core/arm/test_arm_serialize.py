"""ARM serialisation: ragged, empty and huge tables; names; the N-gram index; compatibility links."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from retrievekit.core.arm.compatibility import compatibility, overlap_coefficient
from retrievekit.core.arm.ngrams import NGramIndex, ngrams_of
from retrievekit.core.arm.serialize import MAX_CELLS, object_name, row_view, serialize_object, table_cells, unique_names
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.types import Passage, Table


def test_ragged_rows_are_padded_and_serialised():
    t = Table(id="t", title="Cast", header=("Year", "Title", "Role"), rows=(("2006", "Prime Suspect"), ("2010",)))
    assert t.metadata["padded_rows"] == 2
    text = serialize_object(t, "prime suspect", rows=5)
    assert text.splitlines() == ["Cast", "Year | Title | Role", "2006 | Prime Suspect |", "2010 |  |"]
    with pytest.raises(InvalidInputError):
        Table(id="bad", header=("a",), rows=(("1", "2"),))


def test_empty_cells_and_empty_tables():
    empty = Table(id="e", title="Empty", header=("a", "b"), rows=())
    assert serialize_object(empty, "q") == "Empty\na | b"
    assert row_view(empty, "q", 5) == [] and table_cells(empty, "q", 5) == []
    blanks = Table(id="b", header=("a", "b"), rows=(("", ""), ("", "x")))
    assert table_cells(blanks, "x", 5) == [(1, 1, "x")]
    assert serialize_object(blanks, "x", rows=1) == "a | b\n | x\n(1 more rows)"
    none_cells = Table(id="n", header=("a",), rows=((None,),))
    assert serialize_object(none_cells, "") == "a\n"  # a None cell is an empty cell


def test_huge_table_is_cut_to_its_row_view():
    rows = tuple((f"row {i}", "filler text " * 5) for i in range(20000))
    t = Table(id="h", title="Huge", header=("name", "notes"), rows=rows)
    text = serialize_object(t, "row 3", rows=5)
    assert text.count("\n") == 7 and "(19995 more rows)" in text
    assert len(table_cells(t, "row 3", 10_000)) == MAX_CELLS
    assert len(ngrams_of(t.index_text())) < 5000


def test_row_view_prefers_query_rows_in_table_order():
    t = Table(id="t", header=("a",), rows=(("alpha",), ("beta gamma",), ("gamma",), ("delta",)))
    assert [i for i, _ in row_view(t, "gamma beta", 2)] == [1, 2]


def test_names_are_short_and_unique():
    t = Table(id="t1", title="Nonso Anozie", header=("x",), rows=(), metadata={"section_title": "Television"})
    assert object_name(t) == "Nonso Anozie - Television"
    objs = [Passage(id="a", text="x", title="Same"), Passage(id="b", text="y", title="same"), Passage(id="c", text="z")]
    assert unique_names(objs) == ["Same", "same #2", "c"]
    assert len(object_name(Passage(id="p", text="x", title="T" * 500))) == 60


def test_ngram_index():
    idx = NGramIndex.build([Passage(id="a", text="Lynda La Plante created Prime Suspect"), Passage(id="b", text="a")])
    assert "prime suspect" in idx and "created prime suspect" in idx and "la" in idx
    assert idx.objects_of("Prime Suspect") == ("a",)
    assert all(1 <= len(g.split()) <= 3 for g in idx.ngrams())
    trie, back = idx.token_trie(lambda s: [ord(c) for c in s], eos_token_id=0, exclude=["prime"])
    assert "prime" not in back.values() and len(trie) == len(idx) - 1


def test_compatibility_table_passage_link_and_table_join():
    def embed(texts):  # deterministic bag-of-words hashing: shared words -> high cosine
        v = np.full((len(texts), 32), 1e-3)
        for i, text in enumerate(texts):
            for w in text.lower().split():
                v[i, zlib.crc32(w.encode()) % 32] += 1.0
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    t1 = Table(
        id="t1",
        title="Cast",
        header=("Series", "Role"),
        rows=(("Prime Suspect", "Robert"), ("Doctor Who", "")),
        metadata={"cell_links": [(0, 0, "/wiki/Prime_Suspect"), (9, 9, "/wiki/X"), ("bad",)]},
    )
    t2 = Table(
        id="t2", title="Shows", header=("Series", "Network"), rows=(("Prime Suspect", "ITV"), ("Doctor Who", "BBC"))
    )
    p = Passage(id="/wiki/Prime_Suspect", title="Prime Suspect", text="Prime Suspect is a drama by Lynda La Plante.")
    q = Passage(id="q", title="Lynda La Plante", text="Lynda La Plante wrote it.")
    objs = [t1, t2, p, q]
    comp = compatibility(objs, embed([o.index_text() for o in objs]), "who created prime suspect", embed)
    assert comp.matrix.shape == (4, 4) and np.allclose(comp.matrix, comp.matrix.T)
    assert comp.matrix[0, 2] >= 0.2 and "links to passage 'Prime Suspect'" in comp.link(2, 0)
    assert comp.matrix[0, 1] > 0 and "joins column 'Series'" in comp.link(0, 1)
    assert "mentions 'Lynda La Plante'" in comp.link(2, 3) or comp.matrix[2, 3] == 0.0
    assert overlap_coefficient("Prime Suspect", "Prime") == 1.0
