"""The one benchmark harness: per-query records, resume after a stop, shards that aggregate, ready retrievers."""

from __future__ import annotations

import json

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.records import QueryRecord, RecordFile, parse_shard, shard
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

DOCS = [
    Passage(id="apple", text="Apples are red fruits that grow on trees."),
    Passage(id="banana", text="Bananas are long yellow fruits."),
    Passage(id="python", text="Python is a programming language."),
    Passage(id="rust", text="Rust is a systems programming language."),
    Passage(id="nile", text="The Nile is a river in Africa."),
]
QUERIES = [
    Query("q1", "red fruit on trees"),
    Query("q2", "yellow fruit"),
    Query("q3", "systems programming language"),
    Query("q4", "river in Africa"),
    Query("q5", "programming language for scripts"),
]
QRELS = {"q1": {"apple": 1}, "q2": {"banana": 1}, "q3": {"rust": 1}, "q4": {"nile": 1}, "q5": {"python": 1}}
DS = Dataset("toy", "dev", DOCS, QUERIES, QRELS)


class Counting:
    """BM25 that counts its searches (and can be told to die after some)."""

    def __init__(self, die_after: int | None = None) -> None:
        self.index = BM25Index.build(DOCS)
        self.searched: list[str] = []
        self.die_after = die_after

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None):
        if self.die_after is not None and len(self.searched) >= self.die_after:
            raise KeyboardInterrupt  # a stop in the middle of a run
        self.searched.append(query)
        trace = trace if trace is not None else Trace()
        trace.count("toy.searches")
        return self.index.search(query, k, trace=trace)


def test_records_round_trip_and_a_new_file_has_nothing_done(tmp_path):
    path = tmp_path / "r.jsonl"
    assert RecordFile(path, {"k": 10}).done() == {}
    f = RecordFile(path, {"k": 10})
    f.append(QueryRecord(qid="q1", ids=["a"], seconds=1.5, extra={"note": "x"}))
    f.append(QueryRecord(qid="q2", ids=["b"]))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"retrievekit_records": 2, "settings": {"k": 10}} and len(lines) == 3
    again = RecordFile(path, {"k": 10}).done()
    assert again["q1"].ids == ["a"] and again["q1"].extra == {"note": "x"} and again["q1"].seconds == 1.5


def test_other_settings_newer_formats_and_foreign_files_are_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    RecordFile(path, {"k": 10, "method": "bm25"}).append(QueryRecord(qid="q1"))
    with pytest.raises(InvalidInputError, match="k: 10 != 20"):
        RecordFile(path, {"k": 20, "method": "bm25"})
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"retrievekit_records": 99, "settings": {}}) + "\n")
    with pytest.raises(InvalidInputError, match="newer"):
        RecordFile(newer, {})
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"a": 1}\n')
    with pytest.raises(InvalidInputError, match="not a retrievekit record file"):
        RecordFile(foreign, {})


def test_a_half_written_last_line_is_dropped_and_redone(tmp_path):
    path = tmp_path / "r.jsonl"
    f = RecordFile(path, {})
    f.append(QueryRecord(qid="q1"))
    with open(path, "a") as fh:
        fh.write('{"qid": "q2", "ids": ["a"')  # the process died while writing
    g = RecordFile(path, {})
    assert sorted(g.done()) == ["q1"]
    g.append(QueryRecord(qid="q2"))
    assert sorted(RecordFile(path, {}).done()) == ["q1", "q2"]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_shards():
    assert parse_shard("1/3") == (1, 3) and parse_shard(None) is None
    assert shard(list("abcdefg"), "1/3") == ["b", "e"]
    for bad in ("3/3", "-1/2", "x", "1/0"):
        with pytest.raises(InvalidInputError, match="K/N"):
            parse_shard(bad)


def test_a_stopped_run_resumes_without_repeating_a_query(tmp_path):
    path = tmp_path / "run.jsonl"
    dying = Counting(die_after=2)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(DS, dying, label="bm25-toy", records=path, progress=False)
    assert len(dying.searched) == 2
    rest = Counting()
    resumed = run_benchmark(DS, rest, label="bm25-toy", records=path, progress=False)
    assert len(rest.searched) == 3 and resumed["n_resumed"] == 2 and resumed["n_queries"] == 5
    fresh = run_benchmark(DS, Counting(), label="bm25-toy", progress=False)
    assert resumed["metrics"] == fresh["metrics"]
    assert resumed["counters_per_query"] == fresh["counters_per_query"] == {"toy.searches": 1.0}
    idle = Counting()
    again = run_benchmark(DS, idle, label="bm25-toy", records=path, progress=False)
    assert idle.searched == [] and again["metrics"] == fresh["metrics"]


def test_shards_share_one_file_and_a_last_run_aggregates(tmp_path):
    path = tmp_path / "run.jsonl"
    seen = []
    for part in ("0/2", "1/2"):
        r = Counting()
        out = run_benchmark(DS, r, label="toy", records=path, shard=part, progress=False)
        assert out["shard"] == part and out["n_queries"] == len(r.searched)
        seen += r.searched
    assert sorted(seen) == sorted(q.text for q in QUERIES)  # every query once, across the shards
    last = Counting()
    total = run_benchmark(DS, last, label="toy", records=path, progress=False)
    assert last.searched == [] and total["n_queries"] == 5 and "shard" not in total
    assert total["metrics"] == run_benchmark(DS, Counting(), label="toy", progress=False)["metrics"]


def test_a_registered_method_name_and_its_records(tmp_path):
    path = tmp_path / "bm25.jsonl"
    out = run_benchmark(DS, "bm25", k=3, records=path, keep_run=True, progress=False)
    assert out["method"] == "bm25" and out["metrics"]["hit@1"] == pytest.approx(1.0)
    assert [r["qid"] for r in out["per_query"]] == [q.id for q in QUERIES]
    assert out["run"]["q4"][0] == "nile"
    with pytest.raises(InvalidInputError, match="other settings"):
        run_benchmark(DS, "bm25", k=5, records=path, progress=False)


def test_the_per_query_hook_lands_in_records_and_means(tmp_path):
    def extra(query, hits, trace):
        return {"top_is_gold": float(bool(hits) and hits[0].id in QRELS[query.id]), "top": hits[0].id if hits else None}

    out = run_benchmark(DS, "bm25", k=3, extra=extra, keep_run=True, progress=False)
    assert out["extra_means"] == {"top_is_gold": pytest.approx(1.0)}
    assert out["per_query"][0]["extra"]["top"] == "apple"


def test_processes_starting_together_write_one_header(tmp_path):
    """Two processes appending to a new file at once: one header line, every record kept."""
    import subprocess
    import sys

    path = tmp_path / "shared.jsonl"
    code = (
        "import sys\n"
        "from retrievekit.core.eval.records import QueryRecord, RecordFile\n"
        "f = RecordFile(sys.argv[1], {'k': 1})\n"
        "for i in range(50):\n"
        "    f.append(QueryRecord(qid=f'{sys.argv[2]}-{i}'))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), name]) for name in ("a", "b")]
    assert [p.wait() for p in procs] == [0, 0]
    lines = path.read_text().splitlines()
    assert sum("retrievekit_records" in line for line in lines) == 1 and "retrievekit_records" in lines[0]
    assert len(RecordFile(path, {"k": 1}).done()) == 100


def test_a_line_from_another_run_or_edited_by_hand_is_not_used(tmp_path):
    import warnings

    from retrievekit.core.errors import RecordIntegrityWarning

    mine, other = tmp_path / "mine.jsonl", tmp_path / "other.jsonl"
    f = RecordFile(mine, {"k": 10})
    f.append(QueryRecord(qid="q1", ids=["a"]))
    f.append(QueryRecord(qid="q2", ids=["b"]))
    RecordFile(other, {"k": 1}).append(QueryRecord(qid="q3", ids=["z"]))  # a run with --k 1
    lines = mine.read_text().splitlines()
    edited = json.loads(lines[2])
    edited["ids"] = ["gold"]  # a hand edit that would change the metrics
    foreign = other.read_text().splitlines()[1]
    mine.write_text("\n".join([lines[0], lines[1], json.dumps(edited), foreign]) + "\n")
    with pytest.warns(RecordIntegrityWarning, match="2 record\\(s\\) not used") as caught:
        again = RecordFile(mine, {"k": 10})
    assert sorted(again.done()) == ["q1"]  # q2 (edited) and q3 (another run's) run again
    message = str(caught[0].message)
    assert "line 3 (edited" in message and "line 4 (written by another run" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(RecordFile(other, {"k": 1}).done()) == ["q3"]  # an untouched file reads without a word


def test_a_version_1_file_is_still_read_and_extended_unsigned(tmp_path):
    path = tmp_path / "v1.jsonl"
    header = {"retrievekit_records": 1, "settings": {"k": 10}}
    path.write_text(json.dumps(header) + "\n" + json.dumps({"qid": "q1", "ids": ["a"]}) + "\n")
    f = RecordFile(path, {"k": 10})
    assert sorted(f.done()) == ["q1"]
    f.append(QueryRecord(qid="q2"))
    assert "run" not in json.loads(path.read_text().splitlines()[-1])
    assert sorted(RecordFile(path, {"k": 10}).done()) == ["q1", "q2"]


def test_a_second_writer_without_a_shard_is_refused(tmp_path):
    path = tmp_path / "lock.jsonl"
    first = RecordFile(path, {"k": 10})
    with first.writing():
        with pytest.raises(InvalidInputError, match="another process is writing"):
            with RecordFile(path, {"k": 10}).writing():
                pass
        with pytest.raises(InvalidInputError):  # nor may a shard write beside an unsharded run
            with RecordFile(path, {"k": 10}).writing((0, 2)):
                pass
    with first.writing((0, 2)), RecordFile(path, {"k": 10}).writing((1, 2)):
        with pytest.raises(InvalidInputError):  # the same shard twice
            with RecordFile(path, {"k": 10}).writing((1, 2)):
                pass
    with first.writing():  # every lock given back
        pass
