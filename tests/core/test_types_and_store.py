from __future__ import annotations

import json

import pytest

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import (
    EmptyCorpusError,
    EmptyQueryError,
    IndexFormatError,
    InvalidInputError,
    InvalidTextError,
)
from retrievekit.core.index.store import atomic_folder, read_manifest, read_objects, write_manifest, write_objects
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, Table, ensure_text, object_from_dict, object_to_dict


def test_non_utf8_bytes_raise_typed_error_with_offset():
    with pytest.raises(InvalidTextError, match="offset 3"):
        Passage(id="a", text=b"abc\xff\xfe")
    assert Passage(id="a", text="café".encode()).text == "café"


def test_surrogate_escaped_strings_are_rejected():
    bad = b"ok\xff".decode("utf-8", errors="surrogateescape")
    with pytest.raises(InvalidTextError, match="surrogate"):
        ensure_text(bad)
    for make in (lambda: Passage(id=bad, text="x"), lambda: Table(id=bad, header=["a"], rows=[["1"]])):
        with pytest.raises(InvalidTextError, match=r"object id 'ok\\udcff' contains an unpaired surrogate"):
            make()


def test_ragged_tables_pad_short_rows_and_reject_long_rows():
    t = Table(id="t", header=["a", "b", "c"], rows=[["1"], ["1", "2", "3"]])
    assert t.rows[0] == ("1", "", "")
    assert t.metadata["padded_rows"] == 1
    with pytest.raises(InvalidInputError, match="row 0 has 4 cells"):
        Table(id="t", header=["a"], rows=[["1", "2", "3", "4"]])
    with pytest.raises(InvalidInputError, match="empty header"):
        Table(id="t", header=[], rows=[])


def test_objects_round_trip_through_dicts():
    t = Table(id="t", header=["x", "y"], rows=[["1", None]], title="T", metadata={"src": "w"})
    objs = [Passage(id="p", text="x", title="T", metadata={"d": 1}), t, *t.row_objects()]
    for o in objs:
        assert object_from_dict(json.loads(json.dumps(object_to_dict(o)))) == o
    assert t.row_objects()[0].text == "x: 1 | y: "


def test_query_corpus_and_k_validation():
    with pytest.raises(EmptyQueryError):
        check_query("  \n")
    with pytest.raises(InvalidTextError):
        check_query(b"\xff")
    with pytest.raises(EmptyCorpusError):
        check_corpus([])
    with pytest.raises(EmptyCorpusError, match="empty text"):
        check_corpus([Passage(id="a", text="  ")])
    with pytest.raises(InvalidInputError, match="duplicate object id 'a'"):
        check_corpus([Passage(id="a", text="x"), Passage(id="a", text="y")])
    with pytest.raises(InvalidInputError):
        Passage(id="", text="x")
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(InvalidInputError):
            check_k(bad)


def test_trace_counts_stages_and_events():
    t = Trace()
    with t.stage("outer"):
        with t.stage("inner"):
            t.note("fallback", "x", why="y")
    t.record_llm_call(10, 2)
    d = t.to_dict()
    assert d["llm_calls"] == 1 and d["prompt_tokens"] == 10 and d["completion_tokens"] == 2
    assert set(d["stage_seconds"]) == {"outer", "inner"}
    assert d["events"][0] == {"kind": "fallback", "message": "x", "stage": "inner", "data": {"why": "y"}}


def test_atomic_folder_keeps_old_index_when_write_fails(tmp_path):
    target = tmp_path / "idx"
    with atomic_folder(target) as tmp:
        write_manifest(tmp, "demo", 1, {})
        write_objects(tmp, [Passage(id="a", text="old")])
    with pytest.raises(RuntimeError):
        with atomic_folder(target) as tmp:
            write_objects(tmp, [Passage(id="b", text="new")])
            raise RuntimeError("crash mid-write")
    assert [o.text for o in read_objects(target)] == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # no temp folder left behind


def test_manifest_rejects_foreign_corrupt_and_newer_formats(tmp_path):
    with pytest.raises(IndexFormatError, match="does not exist"):
        read_manifest(tmp_path / "nope", "bm25", 1)
    with pytest.raises(IndexFormatError, match="no manifest.json"):
        read_manifest(tmp_path, "bm25", 1)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(IndexFormatError, match="corrupt"):
        read_manifest(tmp_path, "bm25", 1)
    write_manifest(tmp_path, "dense", 1, {})
    with pytest.raises(IndexFormatError, match="'retrievekit.dense' index, not 'retrievekit.bm25'"):
        read_manifest(tmp_path, "bm25", 1)
    write_manifest(tmp_path, "bm25", 7, {})
    with pytest.raises(IndexFormatError, match="format version 7.*upgrade retrievekit"):
        read_manifest(tmp_path, "bm25", 1)


def test_truncated_objects_file_is_detected(tmp_path):
    write_objects(tmp_path, [Passage(id="a", text="x"), Passage(id="b", text="y")])
    with pytest.raises(IndexFormatError, match="manifest says 3"):
        read_objects(tmp_path, expected=3)
    with open(tmp_path / "objects.jsonl", "a") as f:
        f.write('{"kind": "passage", "id": "c", "te')
    with pytest.raises(IndexFormatError, match="corrupt at line 3"):
        read_objects(tmp_path)
