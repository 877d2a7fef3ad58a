"""A living index writes a change as a delta (issue #61, cost): one checksummed line appended to ``live/changes.jsonl``
instead of the whole object list, folded into a new object list once the log outgrows a quarter of it. The base is
left as it was by a small change; a reopened index equals the one in memory; a torn last line (a kill mid-append) is
the old state, never a mix; another process's appended change is seen. Real folders, real child processes killed
with SIGKILL at the append."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import pytest
from _living_corpus import QUERIES, passages, rounds
from _paths import REPO

import retrievekit.core.index.live_log as live_log
from retrievekit.core.errors import CorpusMismatchError, IndexFormatError, IndexRepairedWarning
from retrievekit.core.index.corpus_record import (
    CorpusTally,
    _sorted_digest,  # a version-1 record: a sha256 over the sorted pairs, no "version"
    check_same_corpus,
    content_digest,
    corpus_record,
)
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.live_log import LOG, saved_record
from retrievekit.core.index.store import write_manifest
from retrievekit.core.types import Passage

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
OPTIONS = {"bm25": None, "bm25-tantivy": {"bm25_engine": "tantivy"}}


def _notes(n: int, tag: str = "note") -> list[Passage]:
    topics = ["comets and lava", "insulin and sleep", "tea and rain", "stock and cats", "gene editing"]
    return [Passage(id=f"{tag}{i:03d}", text=f"{tag} {i} about {topics[i % len(topics)]} and more") for i in range(n)]


def _stat(path):
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def _state(idx):
    return idx.ids(), idx.get(idx.ids()), {q: [(h.id, round(h.score, 5)) for h in idx.search(q, 5)] for q in QUERIES}


@pytest.fixture
def small_fold(monkeypatch):
    """Fold by the quarter alone (no 1 MiB floor), so a small test index folds as a large one would."""
    monkeypatch.setattr(live_log, "FOLD_MIN_BYTES", 0)


@pytest.mark.parametrize("method", ["bm25", "bm25-tantivy"])
def test_a_small_change_appends_a_line_and_leaves_the_base_as_it_was(tmp_path, small_fold, method):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("bm25", path=folder, options=OPTIONS[method])
    idx.upsert(_notes(200))  # a bulk load: written as a base at once
    live = folder / "live"
    base, manifest = _stat(live / "objects.jsonl"), _stat(live / "manifest.json")
    assert not (live / LOG).exists()
    idx.upsert([Passage(id="note007", text="an edited note about comets"), Passage(id="new", text="a new tea note")])
    idx.delete(["note003", "zz"])
    assert _stat(live / "objects.jsonl") == base and _stat(live / "manifest.json") == manifest  # not rewritten
    lines = (live / LOG).read_bytes().splitlines()
    assert len(lines) == 2 and (live / LOG).stat().st_size < 1000  # the two changes, not the 200 objects
    held = idx.get(idx.ids())
    assert idx.corpus == corpus_record(held) == saved_record(live)
    back = LiveIndex.open(folder)
    assert _state(back) == _state(idx)
    assert back.ids()[-1] == "new" and back.ids()[-2] == "note007"  # a replaced object moves to the end, as in memory
    assert back.corpus == idx.corpus


def test_a_torn_last_line_is_the_old_state_and_is_cut_off_by_the_next_change(tmp_path):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("bm25", path=folder)
    idx.upsert(passages(rounds()[0]))
    before = _state(idx)
    log = folder / "live" / LOG
    committed = log.read_bytes()
    line = live_log.ChangeLog.line([], [Passage(id="torn", text="half written")], {"count": 9})
    with open(log, "ab") as f:
        f.write(line[: len(line) // 2])  # a kill mid-append
    back = LiveIndex.open(folder)
    assert _state(back) == before and "torn" not in back.ids()
    back.upsert([Passage(id="after", text="after the torn line: tea")])
    assert log.read_bytes().startswith(committed) and len(log.read_bytes().splitlines()) == 2  # the torn bytes gone
    again = LiveIndex.open(folder)
    assert _state(again) == _state(back) and "after" in again.ids()
    data = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(data[0].replace(b"aspirin", b"aspirim") + data[1])  # damage before the last line
    with pytest.raises(IndexFormatError, match="damaged at byte 0"):
        LiveIndex.open(folder)


def test_the_log_is_folded_past_a_quarter_of_the_base_and_by_compact(tmp_path, small_fold):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("bm25", path=folder)
    idx.upsert(_notes(40))
    live = folder / "live"
    base_size = (live / "objects.jsonl").stat().st_size
    base = _stat(live / "objects.jsonl")
    folded_at = None
    for i in range(40):
        idx.upsert(_notes(2, tag=f"more{i}-"))
        if _stat(live / "objects.jsonl") != base:
            folded_at = i
            break
        assert (live / LOG).stat().st_size <= live_log.FOLD_AT * base_size
    assert folded_at is not None and folded_at > 0  # some changes appended, then one folded
    assert not (live / LOG).exists()  # the new base has no log yet
    assert LiveIndex.open(folder).ids() == idx.ids()
    idx.upsert(_notes(1, tag="last"))
    assert (live / LOG).exists()
    assert idx.compact() == 0 and not (live / LOG).exists()  # compact() folds the log too
    assert _state(LiveIndex.open(folder)) == _state(idx)


_KILLED = """
    import sys
    from _live_kill import kill_after, kill_at
    from retrievekit.core.index.live import LiveIndex
    from retrievekit.core.types import Passage

    folder, when = sys.argv[1], sys.argv[2]
    idx = LiveIndex.open(folder)
    kill_at(when)
    idx.upsert([Passage(id="n1", text="new note on comets"), Passage(id="aspirin", text="aspirin edited: lava")])
    idx.delete(["bcg"]) if when == "after_commit" else None
    kill_after(when)
"""


@pytest.mark.parametrize("when", ["before_commit", "mid_append", "after_commit"])
@pytest.mark.parametrize("method", ["bm25", "bm25-tantivy"])
def test_a_sigkill_in_the_append_leaves_the_old_or_the_new_state(tmp_path, method, when):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("bm25", path=folder, options=OPTIONS[method])
    idx.upsert(passages(rounds()[0]))
    idx.delete(["sleep"])  # a log line already there: the kill's line comes after it
    old, log = _state(idx), folder / "live" / LOG
    idx.close()
    committed = log.stat().st_size
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED), str(folder), when], env=ENV, timeout=300, capture_output=True
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    grown = log.stat().st_size - committed
    assert grown > 0 if when != "before_commit" else grown == 0  # mid_append: a torn line left past the committed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = LiveIndex.open(folder)
    if when == "after_commit":
        assert sorted(back.ids()) == sorted({*old[0], "n1"} - {"bcg"})
        assert back.get(["aspirin"])[0].text == "aspirin edited: lava"
    else:
        assert _state(back) == old  # the old state, the BM25 part brought back to it when it moved on
        assert all(issubclass(w.category, IndexRepairedWarning) for w in caught)
    fresh = LiveIndex.create("bm25", options=OPTIONS[method])
    fresh.upsert(back.get(back.ids()))
    assert {q: sorted(a) for q, a in _state(back)[2].items()} == {q: sorted(a) for q, a in _state(fresh)[2].items()}
    assert back.corpus == corpus_record(back.get(back.ids())) == saved_record(folder / "live")
    back.upsert([Passage(id="z", text="after the kill: apples")])  # the next writer carries on
    assert _state(LiveIndex.open(folder)) == _state(back)


_OTHER = """
    import sys
    from retrievekit.core.index.live import LiveIndex
    from retrievekit.core.types import Passage

    idx = LiveIndex.open(sys.argv[1])
    idx.upsert([Passage(id="other", text="another process wrote this note on volcano lava")])
    idx.delete(["statins"])
    idx.close()
"""


def test_another_processs_appended_change_is_seen_before_the_next_change(tmp_path):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("bm25", path=folder)
    idx.upsert(passages(rounds()[0]))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_OTHER), str(folder)], env=ENV, timeout=300, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert len((folder / "live" / LOG).read_bytes().splitlines()) == 3  # its two lines after this one's
    idx.upsert([Passage(id="mine", text="this process's note on tea")])  # caught up first: nothing lost
    assert "other" in idx.ids() and "statins" not in idx.ids() and "mine" in idx.ids()
    assert idx.search("volcano lava", 1)[0].id == "other"
    assert _state(LiveIndex.open(folder)) == _state(idx)
    assert idx.corpus == corpus_record(idx.get(idx.ids())) == saved_record(folder / "live")


def test_a_folder_of_format_version_1_is_read_and_folded_by_its_next_change(tmp_path):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("bm25", path=folder)
    held = passages(rounds()[0])
    idx.upsert(held)
    idx.compact()  # one object list, no log: as version 1 wrote it
    live = folder / "live"
    fields = json.loads((live / "manifest.json").read_text())
    old_record = {"count": len(held), "digest": _sorted_digest({o.id: content_digest(o) for o in held})}
    keep = {k: fields[k] for k in ("method", "options", "n_objects")}
    write_manifest(live, "live", 1, {**keep, "corpus": old_record})
    back = LiveIndex.open(folder)
    assert sorted(back.ids()) == sorted(o.id for o in held) and back.corpus == corpus_record(held)
    check_same_corpus(held, list(reversed(held)), where="x", recorded=old_record)  # a version-1 record still checks
    with pytest.raises(CorpusMismatchError, match="1 object has another text"):
        check_same_corpus(held, [*held[:-1], Passage(id=held[-1].id, text="other")], where="x", recorded=old_record)
    back.upsert([Passage(id="new", text="a new note")])  # folded: the folder is version 2 from now on
    assert json.loads((live / "manifest.json").read_text())["format_version"] == 2 and not (live / LOG).exists()
    assert _state(LiveIndex.open(folder)) == _state(back)


def test_the_corpus_tally_follows_adds_and_removes_and_equals_the_record():
    objs = _notes(30)
    tally = CorpusTally.of(objs[:20])
    tally = tally.changed(removed=objs[:5], added=objs[20:])
    assert tally.record() == corpus_record(objs[5:]) == corpus_record(list(reversed(objs[5:])))
    edited = Passage(id=objs[5].id, text="edited")
    assert tally.changed(removed=[objs[5]], added=[edited]).record() == corpus_record([edited, *objs[6:]])
    assert CorpusTally.from_record(tally.record()).record() == tally.record()
