"""Every folder reader whose docstring example shows a round trip refuses what is not its folder with a typed error:
an empty folder (no manifest) and a path that does not exist, each raise ``IndexFormatError`` naming the path."""

from __future__ import annotations

import pytest

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.bm25_engine import TantivyEngine
from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.oneshot.catalog import DocumentCatalog

READERS = {
    "suffix array": LiveTokenSuffixArray.load,
    "title trie": TokenTrie.load,
    "catalog": DocumentCatalog.load,
    "tantivy engine": TantivyEngine.open,
}


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
def test_an_empty_folder_is_not_an_index(tmp_path, reader):
    with pytest.raises(IndexFormatError, match=r"is not a retrievekit index folder \(no manifest\.json\)") as got:
        reader(tmp_path)
    assert str(tmp_path) in str(got.value)


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
def test_a_missing_folder_is_not_an_index(tmp_path, reader):
    with pytest.raises(IndexFormatError, match="does not exist") as got:
        reader(tmp_path / "missing")
    assert str(tmp_path / "missing") in str(got.value)
