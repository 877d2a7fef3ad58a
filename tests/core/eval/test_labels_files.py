"""Issue #62 item 5: a bad qrels (or questions) file is a typed error naming the file and line, exit 2 from the CLI
(before: a raw ValueError, UnicodeDecodeError or FileNotFoundError); issue #64 item 1: ``advise --questions``."""

from __future__ import annotations

import pytest
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core import cli
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.labels import question_id, read_qrels, read_questions, write_qrels

BAD_QRELS = {
    "not UTF-8": (b"query-id\tcorpus-id\tscore\n1\t100\t1\n\xff\t101\t1\n", r"line 3: not UTF-8 text \(byte 0xff\)"),
    "two columns": (b"1\t100\t1\n2\t101\n", "line 2: 2 tab-separated column"),
    "space separated": (b"1 0 100 1\n", "line 1: 1 tab-separated column"),
    "a word past the header": (b"query-id\tcorpus-id\tscore\n1\t100\tyes\n", "line 2: score 'yes' is not a number"),
    "NaN score": (b"1\t100\tnan\n", "line 1: score 'nan' is not a whole number"),
    "infinite score": (b"1\t100\tinf\n", "line 1: score 'inf' is not a whole number"),
    "two grades": (b"1\t100\t1\n1\t100\t0\n", r"line 2: \(1, 100\) labelled 1 and 0"),
    "empty id": (b"1\t\t1\n", "line 1: an empty query id or corpus id"),
    "only a header": (b"query-id\tcorpus-id\tscore\n", "holds no labels"),
    "empty": (b"", "holds no labels"),
}


@pytest.mark.parametrize("case", sorted(BAD_QRELS))
def test_a_bad_qrels_file_is_a_typed_error_naming_the_line(tmp_path, case):
    content, message = BAD_QRELS[case]
    path = tmp_path / "labels.tsv"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=message):
        read_qrels(path)


def test_another_header_is_read_and_missing_files_are_named(tmp_path):
    path = tmp_path / "labels.tsv"
    path.write_text("qid\tdocid\trelevance\r\n1\t100\t1\r\n1\t101\t0\r\n")
    assert read_qrels(path) == {"1": {"100": 1, "101": 0}}
    with pytest.raises(InvalidInputError, match="qrels file .*none.tsv does not exist"):
        read_qrels(tmp_path / "none.tsv")
    with pytest.raises(InvalidInputError, match="is a folder"):
        read_qrels(tmp_path)


def test_labels_written_are_read_back_and_a_crash_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "labels.tsv"
    write_qrels(path, {"q2": {"d1": 0, "d0": 1}, "q1": {"d9": 1}})
    assert path.read_text().splitlines() == ["query-id\tcorpus-id\tscore", "q1\td9\t1", "q2\td0\t1", "q2\td1\t0"]
    assert read_qrels(path) == {"q1": {"d9": 1}, "q2": {"d0": 1, "d1": 0}}
    import os

    def crash(*a, **k):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_qrels(path, {"q3": {"d3": 1}})
    assert read_qrels(path) == {"q1": {"d9": 1}, "q2": {"d0": 1, "d1": 0}}  # whole, the old labels


def test_questions_one_a_line_or_jsonl(tmp_path):
    plain = tmp_path / "q.txt"
    plain.write_text("What cuts fever?\n\n  what cuts   fever?\nDoes rain help?\nWhat cuts fever?\n")
    got = read_questions(plain)
    assert list(got.values()) == ["What cuts fever?", "what cuts fever?", "Does rain help?"]
    assert list(got) == [
        question_id("What cuts fever?"),
        question_id("what cuts fever?"),
        question_id("Does rain help?"),
    ]
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text('{"_id": 7, "text": "a"}\n{"question": "b"}\n')
    assert read_questions(jsonl) == {"7": "a", question_id("b"): "b"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"ok?\n\xfe\n", r"line 2: not UTF-8 text \(byte 0xfe\)"),
        (b'{"text": 3}\n', "line 1: no 'text'"),
        (b'{"text": "a"\n', "line 1: invalid JSON"),
        (b'{"id": [], "text": "a"}\n', "line 1: 'id' must be"),
        (b"x" * 2001 + b"\n", "line 1: a question of 2001 characters"),
        (b"\n \n", "holds no questions"),
    ],
)
def test_a_bad_questions_file_is_a_typed_error(tmp_path, content, message):
    path = tmp_path / "q.txt"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=message):
        read_questions(path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--qrels", "{tmp}/none.tsv"], "qrels file .*none.tsv does not exist"),
        (["--qrels", "{tmp}/bad.tsv"], r"bad.tsv line 2: not UTF-8 text \(byte 0xff\)"),
        (["--questions", "{tmp}/q.txt", "--qrels"], "takes your labels as --qrels FILE"),
        (["--questions", "{tmp}/none.txt", "--qrels", "{tmp}/good.tsv"], "questions file .*none.txt does not exist"),
        (["--questions", "{tmp}/q.txt", "--qrels", "{tmp}/good.tsv"], "at least 20 labelled questions, got 0"),
    ],
)
def test_the_cli_refuses_bad_label_files_with_exit_2(tmp_path, capsys, extra, message):
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    (tmp_path / "bad.tsv").write_bytes(b"1\t100\t1\n\xff\t101\t1\n")
    (tmp_path / "good.tsv").write_text("query-id\tcorpus-id\tscore\n1\t100\t1\n")
    (tmp_path / "q.txt").write_text("fever aspirin\n")
    args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", "openai:m@http://127.0.0.1:9/v1"]
    assert cli.main([*args, *(a.format(tmp=tmp_path) for a in extra)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("retrievekit: error: ") and __import__("re").search(message, err), err
