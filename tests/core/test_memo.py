"""The shared sweep memo (``retrievekit.core.memo``): per-process files, torn lines, versions."""

from __future__ import annotations

import json

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.memo import JsonlMemo, memo_key


def test_entries_written_by_other_processes_are_read(tmp_path):
    (tmp_path / "plans.111.jsonl").write_text(json.dumps({"v": 1, "key": "a", "x": 1}) + "\n")
    (tmp_path / "plans.222.jsonl").write_text(json.dumps({"v": 1, "key": "b", "x": 2}) + "\n")
    (tmp_path / "other.333.jsonl").write_text(json.dumps({"v": 1, "key": "c", "x": 3}) + "\n")
    memo = JsonlMemo(tmp_path, stem="plans", version=1)
    assert (memo.get("a"), memo.get("b"), memo.get("c"), len(memo)) == ({"x": 1}, {"x": 2}, None, 2)
    memo.put("d", {"x": 4})
    assert JsonlMemo(tmp_path, stem="plans", version=1).get("d") == {"x": 4}
    assert len(list(tmp_path.glob("plans.*.jsonl"))) == 3  # this process wrote its own file


def test_a_torn_last_line_and_another_version_are_ignored(tmp_path):
    good = json.dumps({"v": 2, "key": "a", "x": 1})
    old = json.dumps({"v": 1, "key": "b", "x": 2})
    (tmp_path / "m.9.jsonl").write_text(f"{good}\n{old}\n" + good[: len(good) // 2].replace('"a"', '"c"'))
    memo = JsonlMemo(tmp_path, stem="m", version=2)
    assert memo.get("a") == {"x": 1} and memo.get("b") is None and memo.get("c") is None


def test_reserved_field_names_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot be named"):
        JsonlMemo(tmp_path, stem="m", version=1).put("k", {"key": "x"})


def test_keys_are_canonical():
    assert memo_key({"b": 1, "a": [1, 2]}) == memo_key({"a": [1, 2], "b": 1})
    assert memo_key("q", 1) != memo_key("q", "1") and len(memo_key()) == 64
