"""Issue #63 item 1: the tantivy BM25 engine builds from a stream of documents straight into its folder, never
holding the corpus in memory; a bad document, an empty stream or a kill mid-build leaves the folder as it was."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
import weakref

import pytest
from _paths import REPO

from retrievekit.core.errors import EmptyCorpusError, InvalidInputError
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.types import Passage

TANTIVY = BM25Config(engine="tantivy")


def _text(i: int) -> str:
    return f"document {i} about topic{i % 17} and theme{i % 5} " + "filler words " * (i % 7)


class _Stream:
    """Passages made one at a time, each watched: how many are alive at the most while the build reads them."""

    def __init__(self, n: int, *, bad_at: int | None = None) -> None:
        self.n, self.bad_at, self.alive, self.peak, self.made = n, bad_at, 0, 0, 0

    def _gone(self) -> None:
        self.alive -= 1

    def __iter__(self):
        for i in range(self.n):
            if i == self.bad_at:
                yield Passage(id="p00000", text="a second document with the first one's id")
                continue
            p = Passage(id=f"p{i:05d}", text=_text(i))
            weakref.finalize(p, self._gone)
            self.alive += 1
            self.made += 1
            self.peak = max(self.peak, self.alive)
            yield p
            del p
            if i % 100 == 0:
                gc.collect()


def test_a_streamed_build_holds_few_documents_at_once_and_equals_the_listed_build(tmp_path):
    stream = _Stream(3000)
    folder = tmp_path / "bm25"
    streamed = BM25Index.build(iter(stream), TANTIVY, folder=folder)
    assert stream.made == 3000 and stream.peak <= 3, stream.peak  # the corpus was never held (a list: 3000)
    assert streamed.folder == folder and len(BM25Index.load(folder)) == 3000
    listed = BM25Index.build([Passage(id=f"p{i:05d}", text=_text(i)) for i in range(3000)], TANTIVY)
    for q in ["topic3 theme4", "document 17", "filler words topic16"]:
        assert [(h.id, round(h.score, 9)) for h in BM25Index.load(folder).search(q, 10)] == [
            (h.id, round(h.score, 9)) for h in listed.search(q, 10)
        ]
    BM25Index.load(folder, corpus=listed.objects)  # the corpus record names these objects


def test_the_bm25s_engine_builds_into_a_folder_too(tmp_path):
    docs = [Passage(id=f"p{i}", text=_text(i)) for i in range(50)]
    BM25Index.build(iter(docs), folder=tmp_path / "b")
    assert BM25Index.load(tmp_path / "b").search("topic3", 3)[0].id == BM25Index.build(docs).search("topic3", 3)[0].id


@pytest.mark.parametrize(
    ("stream", "error", "message"),
    [
        (lambda: iter(_Stream(200, bad_at=150)), InvalidInputError, "duplicate object id 'p00000'"),
        (lambda: iter([Passage(id="a", text="x"), "not a passage"]), InvalidInputError, "got str"),
        (lambda: iter(()), EmptyCorpusError, "the corpus is empty"),
        (lambda: (Passage(id=str(i), text="  ") for i in range(3)), EmptyCorpusError, "all 3 objects have empty"),
    ],
)
def test_a_bad_stream_is_refused_typed_and_leaves_the_folder_as_it_was(tmp_path, stream, error, message):
    folder = tmp_path / "bm25"
    BM25Index.build([Passage(id="old", text="the old corpus")], TANTIVY, folder=folder)
    with pytest.raises(error, match=message):
        BM25Index.build(stream(), TANTIVY, folder=folder)
    assert [o.id for o in BM25Index.load(folder).objects] == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]  # no temporary folder left beside it
    with pytest.raises(error, match=message):  # in memory too
        BM25Index.build(stream(), TANTIVY)


_KILLED = """
import sys
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.types import Passage

def stream():
    i = 0
    while True:  # endless: killed while it is written
        if i == 2000:
            print("streaming", flush=True)
        yield Passage(id=f"n{i}", text=f"new document {i} " * 5)
        i += 1

BM25Index.build(stream(), BM25Config(engine="tantivy"), folder=sys.argv[1])
"""


def test_a_sigkill_during_a_streamed_build_leaves_the_old_folder(tmp_path):
    folder = tmp_path / "bm25"
    BM25Index.build([Passage(id="old", text="the old corpus")], TANTIVY, folder=folder)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "core"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED), str(folder)], env=env, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"streaming"
    time.sleep(0.3)
    assert proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(60) == -signal.SIGKILL
    assert [o.id for o in BM25Index.load(folder).objects] == ["old"]
    BM25Index.build([Passage(id="new", text="the next build")], TANTIVY, folder=folder)  # sweeps the killed one's
    assert [o.id for o in BM25Index.load(folder).objects] == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]
