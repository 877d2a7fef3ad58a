"""A tantivy BM25 folder (the default engine) whose segment files changed after tantivy wrote them is refused with an
``IndexFormatError`` naming the file, before tantivy reads it: on open, and at a reader's next search after another
writer's change. Before, a flipped byte gave other answers without a word (6 of 78 flips over every kind of segment
file on a 300-document index) or a Rust panic that ``except Exception`` does not catch."""

from __future__ import annotations

import pytest

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index import tantivy_footers
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.tantivy_footers import segment_files
from retrievekit.core.types import Passage

WORDS = [f"w{i}" for i in range(60)]
DOCS = [Passage(id=f"d{i}", text=" ".join(WORDS[(i * 7 + j * 13) % 60] for j in range(20))) for i in range(300)]


def _flip(path, at):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x55
    path.write_bytes(bytes(data))


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "bm25"
    BM25Index.build(DOCS, folder=path).delete(["d3"], compact=False)  # a deletes file too
    return path


def test_every_segment_file_is_named_and_checked(folder):
    names = [p.name for p in segment_files(folder / "gen-000001")]
    assert {n.split(".", 1)[1] for n in names} >= {"idx", "term", "store", "fieldnorm", "fast", "pos"}
    assert any(n.endswith(".del") for n in names)  # the deletes of the last commit


@pytest.mark.parametrize("where", ["start", "middle", "footer"])
def test_a_flipped_byte_in_any_segment_file_is_refused_naming_it(folder, where):
    gen = folder / "gen-000001"
    for path in segment_files(gen):
        size = path.stat().st_size
        at = {"start": 0, "middle": size // 2, "footer": size - 20}[where]
        original = path.read_bytes()
        _flip(path, at)
        with pytest.raises(IndexFormatError, match=path.name):
            BM25Index.load(folder).search("w1 w2", k=5)
        path.write_bytes(original)  # mended: the next file is checked alone
    assert BM25Index.load(folder).search("w1 w2", k=5)


def test_a_cut_or_missing_segment_file_is_refused(folder):
    path = next(p for p in segment_files(folder / "gen-000001") if p.suffix == ".store")
    original = path.read_bytes()
    path.write_bytes(original[: len(original) // 2])
    with pytest.raises(IndexFormatError, match=f"{path.name}: this file of the tantivy index has no footer"):
        BM25Index.load(folder)
    path.unlink()
    with pytest.raises(IndexFormatError, match=path.name):  # tantivy names it as it opens the segment
        BM25Index.load(folder)
    dels = next(p for p in segment_files(folder / "gen-000001") if p.suffix == ".del")
    dels.unlink()  # the one file meta.json names by itself
    with pytest.raises(IndexFormatError, match=f"{dels.name}: this file of the tantivy index is missing"):
        BM25Index.load(folder)


def test_a_reader_checks_the_segments_another_writer_added_before_reading_them(folder):
    reader = BM25Index.load(folder)
    assert reader.search("w5", k=3)
    before = set(segment_files(folder / "gen-000001"))
    BM25Index.load(folder).add([Passage(id="new", text="w5 w5 w5 fresh")])  # another handle: a new segment
    added = [p for p in segment_files(folder / "gen-000001") if p not in before and p.suffix == ".term"]
    assert added
    _flip(added[0], 0)
    with pytest.raises(IndexFormatError, match=added[0].name):
        reader.search("w5", k=3)


def test_files_no_commit_names_are_left_alone_and_a_file_is_read_once(folder, monkeypatch):
    gen = folder / "gen-000001"
    (gen / ("ab" * 16 + ".idx")).write_bytes(b"what a killed writer left")  # no segment of meta.json
    assert BM25Index.load(folder).search("w1", k=1)
    read = []
    real = tantivy_footers.check_file
    monkeypatch.setattr(tantivy_footers, "check_file", lambda p: read.append(p) or real(p))
    BM25Index.load(folder).search("w1", k=1)
    assert read == []  # checked whole by the open above, unchanged since
    path = segment_files(gen)[0]
    path.write_bytes(path.read_bytes())  # rewritten (a new modification time): read again
    BM25Index.load(folder)
    assert read == [path]
