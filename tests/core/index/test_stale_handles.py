"""A rebuild while a handle is open on a dense folder (issue #52 item 2): in the same process the rebuild is refused
while the handle is open (it searched the old corpus: 10 of 10 hits old), and works once it is closed; a folder
replaced under an open handle (another process's rebuild, done here with the same two renames) is never sealed
again, nor changed, by that handle."""

from __future__ import annotations

import os
import warnings

import pytest

from retrievekit.core.errors import InvalidInputError, UnverifiedIndexWarning
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.types import Passage

OLD = [Passage(id=f"old{i}", text=f"Old passage number {i} about rivers.") for i in range(6)]
NEW = [Passage(id=f"new{i}", text=f"New passage number {i} about mountains.") for i in range(8)]


def test_a_rebuild_under_an_open_handle_is_refused_then_works_once_closed(tmp_path, minilm):
    folder = tmp_path / "dense"
    DenseIndex.build(OLD, path=folder, embedder=minilm).close()
    handle = DenseIndex.open(folder, embedder=minilm)
    link = tmp_path / "link"
    link.symlink_to(folder)
    for where in (folder, link):
        with pytest.raises(InvalidInputError, match="a DenseIndex is open on .* close\\(\\) it"):
            DenseIndex.build(NEW, path=where, embedder=minilm, overwrite=True)
    assert all(h.id.startswith("old") for h in handle.search("passage", k=6))  # untouched
    handle.close()
    with DenseIndex.build(NEW, path=folder, embedder=minilm, overwrite=True) as idx:
        assert sorted(h.id for h in idx.search("passage", k=10)) == sorted(p.id for p in NEW)


def test_close_never_seals_a_folder_it_did_not_build(tmp_path, minilm):
    folder, other = tmp_path / "dense", tmp_path / "other"
    DenseIndex.build(OLD, path=folder, embedder=minilm).close()
    handle = DenseIndex.open(folder, embedder=minilm)
    handle.add([Passage(id="extra", text="One more passage.")])  # unsealed until close()
    DenseIndex.build(NEW, path=other, embedder=minilm).close()
    os.replace(folder, tmp_path / ".dense.old-1")  # another process's rebuild: the same two renames
    os.replace(other, folder)
    sealed = (folder / "manifest.json").read_bytes()
    with pytest.raises(InvalidInputError, match="was replaced"):
        handle.add([Passage(id="late", text="Too late.")])
    with pytest.warns(UnverifiedIndexWarning, match="replaced while this DenseIndex was open"):
        handle.close()
    assert (folder / "manifest.json").read_bytes() == sealed
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedIndexWarning)
        with DenseIndex.open(folder, embedder=minilm) as idx:  # the new folder, verified, with its own count
            assert len(idx) == len(NEW)
