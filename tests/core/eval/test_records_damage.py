"""Benchmark records against damage and misuse (issue #52 item 4): a malformed header or a byte that is not UTF-8 is
a typed error naming the line; a write cut short by a real file-size limit is an error at once, and the torn line is
dropped on resume while the file stays usable; a run through a symlink or a hardlink meets the same lock; a second line for one
query and a signed file whose header was downgraded to version 1 are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from _paths import REPO

from retrievekit.core.errors import InvalidInputError, RecordIntegrityWarning
from retrievekit.core.eval.records import QueryRecord, RecordFile, line_check

SETTINGS = {"method": "bm25", "k": 10}


def _file(tmp_path, *qids):
    path = tmp_path / "run.jsonl"
    f = RecordFile(path, SETTINGS)
    for q in qids:
        f.append(QueryRecord(qid=q, ids=["a", "b"]))
    return path


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ({"retrievekit_records": "two", "settings": SETTINGS}, "'two' is not a version"),
        ({"retrievekit_records": None, "settings": SETTINGS}, "None is not a version"),
        ({"retrievekit_records": 2, "settings": ["method", "bm25"]}, "settings are a list"),
    ],
)
def test_a_malformed_header_is_a_typed_error_naming_line_1(tmp_path, header, words):
    path = _file(tmp_path, "q1")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(InvalidInputError, match=f"line 1: .*{words}"):
        RecordFile(path, SETTINGS)


def test_a_byte_that_is_not_utf8_is_a_typed_error_naming_its_line(tmp_path):
    path = _file(tmp_path, "q1", "q2")
    raw = path.read_bytes().split(b"\n")
    raw[2] = raw[2].replace(b'"q2"', b'"q\xff"')
    path.write_bytes(b"\n".join(raw))
    with pytest.raises(InvalidInputError, match=r"line 3: not UTF-8 \(byte 0xff"):
        RecordFile(path, SETTINGS)


_CUT_SHORT = """
    import resource, sys
    from retrievekit.core.errors import StorageWriteError
    from retrievekit.core.eval.records import QueryRecord, RecordFile

    path, limit = sys.argv[1], int(sys.argv[2])
    f = RecordFile(path, {"method": "bm25", "k": 10})
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))  # python ignores SIGXFSZ
    try:
        f.append(QueryRecord(qid="q2", ids=[f"doc{i}" for i in range(40)]))
    except StorageWriteError as e:
        print("refused:", e)
    print("done:", sorted(f.done()))
"""


def test_a_write_cut_by_a_file_size_limit_fails_at_once_and_the_torn_line_is_dropped(tmp_path):
    path = _file(tmp_path, "q1")
    other_shard = RecordFile(path, SETTINGS)  # a second shard, running beside the one that is cut short
    size = path.stat().st_size
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    code = textwrap.dedent(_CUT_SHORT)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path), str(size + 60)], env=env, timeout=120, capture_output=True
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "refused: the record of query 'q2' was cut short" in out and "done: ['q1']" in out
    assert path.stat().st_size == size + 60  # the torn bytes are in the file
    other_shard.append(QueryRecord(qid="q3"))  # appended right after the torn bytes, on the same line
    with pytest.warns(RecordIntegrityWarning, match="line 3 \\(cut short"):
        f = RecordFile(path, SETTINGS)
    assert sorted(f.done()) == ["q1", "q3"]
    f.append(QueryRecord(qid="q2"))  # the resumed run redoes it; the file stays usable
    with pytest.warns(RecordIntegrityWarning):
        assert sorted(RecordFile(path, SETTINGS).done()) == ["q1", "q2", "q3"]


def test_the_same_file_through_a_symlink_is_locked_against_a_second_run(tmp_path):
    path = _file(tmp_path, "q1")
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with RecordFile(path, SETTINGS).writing():
        with pytest.raises(InvalidInputError, match="another process is writing"):
            with RecordFile(link, SETTINGS).writing():
                pass


@pytest.mark.parametrize("where", ["same folder", "other folder"])
@pytest.mark.parametrize("part", [None, (1, 2)])
def test_the_same_file_through_a_hardlink_is_locked_against_a_second_run(tmp_path, where, part):
    # issue #62 item 7: a hardlink is another name of the same file (device and inode); before, each name had its own
    # lock file beside it and two runs wrote every query twice
    path = _file(tmp_path, "q1")
    folder = tmp_path if where == "same folder" else tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True)
    link = folder / "hard.jsonl"
    os.link(path, link)
    with RecordFile(path, SETTINGS).writing(part):
        with pytest.raises(InvalidInputError, match="another process is writing"):
            with RecordFile(link, SETTINGS).writing(part):
                pass
        if part is not None:  # another shard through the other name is welcome
            with RecordFile(link, SETTINGS).writing((0, 2)):
                pass
    with RecordFile(link, SETTINGS).writing(part):  # every lock given back
        pass


_HOLD_THE_LOCK = """
    import sys
    from retrievekit.core.eval.records import RecordFile
    with RecordFile(sys.argv[1], {"method": "bm25", "k": 10}).writing((1, 2)):
        print("holding", flush=True)
        sys.stdin.readline()
"""


def test_another_process_holding_a_shard_through_a_hardlink_refuses_this_one(tmp_path):
    path = _file(tmp_path, "q1")
    (tmp_path / "other").mkdir()
    link = tmp_path / "other" / "run.jsonl"
    os.link(path, link)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    code = textwrap.dedent(_HOLD_THE_LOCK)
    with subprocess.Popen(
        [sys.executable, "-c", code, str(link)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == b"holding\n"
            with pytest.raises(InvalidInputError, match="another process is writing"):
                with RecordFile(path, SETTINGS).writing((1, 2)):
                    pass
            with pytest.raises(InvalidInputError, match="another process is writing"):
                with RecordFile(path, SETTINGS).writing():
                    pass
        finally:
            proc.communicate(b"\n", timeout=60)
    assert proc.returncode == 0
    with RecordFile(path, SETTINGS).writing((1, 2)):
        pass


def test_a_second_resigned_line_for_one_query_is_refused(tmp_path):
    path = _file(tmp_path, "q1", "q2")
    last = json.loads(path.read_text().splitlines()[-1])
    run = last.pop("run")
    last.pop("check")
    forged = {**last, "ids": ["z"]}
    forged = {**forged, "run": run, "check": line_check(run, forged)}  # re-signed with the package's own check
    with path.open("a") as f:
        f.write(json.dumps(forged) + "\n")
    with pytest.raises(InvalidInputError, match="line 4: a second record of query 'q2' \\(the first is on line 3\\)"):
        RecordFile(path, SETTINGS)


def test_a_header_downgraded_to_version_1_is_refused(tmp_path):
    path = _file(tmp_path, "q1")
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({"retrievekit_records": 1, "settings": SETTINGS})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidInputError, match="line 2: .*header was downgraded"):
        RecordFile(path, SETTINGS)
