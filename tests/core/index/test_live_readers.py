"""In one process, a search of a living index reads one state of its parts (issue #61 item 3: "readers during an
update see one consistent snapshot"): it waits for a change or a reload of the folder under way, and a change waits
for the searches under way, each wait bounded (``IndexLockedError``), an awaited search without blocking its loop.

Real parts: bm25s, Chroma (the dense part of ``hybrid`` and ARM) and real threads; the search is started inside the
reload or the change (at its slowest point) from another thread, as a web server's other request would.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from _living_corpus import passages, rounds

import retrievekit.core.arm.index  # noqa: F401  (registers LiveIndex.create("arm"))
from retrievekit.core.errors import IndexLockedError
from retrievekit.core.fakes import OnesEmbedder, WordCountEmbedder
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.live_readers import Readers
from retrievekit.core.types import Passage

SETUP = {
    "bm25": (None, None, None),
    "hybrid": (WordCountEmbedder(), None, None),
    "arm": (OnesEmbedder(), "none", {"base_k": 3}),
}
QUERY = "cat notes about insulin"
FROM_A = Passage(id="from-a", text="cat notes from a about insulin")
FROM_B = Passage(id="from-b", text="dog notes from b")


def _answer(index) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 5)) for h in index.search(QUERY, k=5)]


def _fresh(method, objects) -> list[tuple[str, float]]:
    emb, llm, options = SETUP[method]
    fresh = LiveIndex.create(method, embedder=emb, llm=llm, options=options)
    fresh.upsert(objects)
    return _answer(fresh)


def _search_meanwhile(index, answers: list, waiting: list) -> None:
    """Start a search of ``index`` on another thread, give it 0.3 s, and note the thread and whether it is still
    waiting then (it must be: the change or reload under way holds it back)."""

    def search() -> None:
        try:
            answers.append(_answer(index))
        except Exception as e:  # a search that read half a state fails: recorded, the test says so
            answers.append(e)

    t = threading.Thread(target=search)
    t.start()
    time.sleep(0.3)
    waiting.append((t, t.is_alive()))


@pytest.mark.parametrize("method", ["bm25", "hybrid", "arm"])
def test_a_search_during_a_reload_answers_from_the_reopened_parts(tmp_path, method, monkeypatch):
    """The second handle reloads the folder (the first one changed it) before its own change; a search made on it
    meanwhile waited and answered one state, a fresh build's (before: ``[]`` for bm25, a missing dense part for
    hybrid and ARM)."""
    emb, llm, options = SETUP[method]
    start = passages(rounds()[0])[:6]
    a = LiveIndex.create(method, path=tmp_path / "idx", embedder=emb, llm=llm, options=options)
    a.upsert(start)
    b = LiveIndex.open(tmp_path / "idx", embedder=emb, llm=llm)
    a.upsert([FROM_A])
    answers: list = []
    waiting: list[tuple[threading.Thread, bool]] = []
    real = LiveIndex._open_parts

    def open_parts(self):  # the reload under way: the old parts are gone, the new ones not yet open
        if self is b and not waiting:
            _search_meanwhile(b, answers, waiting)
        return real(self)

    monkeypatch.setattr(LiveIndex, "_open_parts", open_parts)
    b.upsert([FROM_B])
    thread, held_back = waiting[0]
    thread.join(30)
    assert held_back and len(answers) == 1  # it waited for the reload, then answered once
    assert answers[0] in (_fresh(method, [*start, FROM_A]), _fresh(method, [*start, FROM_A, FROM_B])), answers
    a.close(), b.close()


def test_a_search_during_a_change_waits_for_it_and_never_reads_half_of_it(tmp_path, monkeypatch):
    """Hybrid: the dense part and the held objects changed, the BM25 part not yet: a search of another thread then
    waits and answers the changed state (before: the new object from the dense part only, a score no build gives)."""
    emb, llm, options = SETUP["hybrid"]
    start = passages(rounds()[0])[:6]
    idx = LiveIndex.create("hybrid", path=tmp_path / "idx", embedder=emb)
    idx.upsert(start)
    answers: list = []
    waiting: list[tuple[threading.Thread, bool]] = []
    real = LiveIndex._change_parts

    def change_parts(self, removed, added, trace):
        if not waiting:
            _search_meanwhile(idx, answers, waiting)
        return real(self, removed, added, trace)

    monkeypatch.setattr(LiveIndex, "_change_parts", change_parts)
    idx.upsert([FROM_A])
    thread, held_back = waiting[0]
    thread.join(30)
    assert held_back and answers == [_fresh("hybrid", [*start, FROM_A])]
    idx.close()


def test_waits_are_bounded_and_typed():
    readers = Readers(0.1)
    with readers.changing():
        got: list = []
        t = threading.Thread(target=lambda: got.append(_raised(readers.wait_to_read)))
        t.start()
        t.join(5)
        assert isinstance(got[0], IndexLockedError) and "writer_wait" in str(got[0])
    readers.wait_to_read()  # a search under way
    got = []
    t = threading.Thread(target=lambda: got.append(_raised(lambda: readers.changing().__enter__())))
    t.start()
    t.join(5)
    assert isinstance(got[0], IndexLockedError) and "nothing was changed" in str(got[0])
    assert readers.busy == 1  # the change that gave up let searches in again
    readers.done_reading()
    with readers.changing():
        assert readers.busy == -1


def test_an_awaited_search_waits_for_a_change_without_blocking_its_loop():
    readers = Readers(5)
    entered = threading.Event()
    release = threading.Event()

    def change():
        with readers.changing():
            entered.set()
            release.wait(5)

    t = threading.Thread(target=change)
    t.start()
    entered.wait(5)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, release.set)
        async with readers.areading():
            seen = readers.busy
        tick.cancel()
        return seen, ticks

    seen, ticks = asyncio.run(main())
    t.join(5)
    assert seen == 1 and ticks >= 10  # the loop ran the ticker while the search waited 0.3 s


def _raised(fn):
    try:
        fn()
    except Exception as e:
        return e
    return None


def test_close_waits_for_a_search_under_way_and_a_later_search_is_refused_typed(tmp_path, monkeypatch):
    """The dense part's Chroma client is released only once the searches reading it are done (before: a search
    under way read a closed part)."""
    from retrievekit.core.errors import InvalidInputError
    from retrievekit.core.index.dense import DenseIndex

    idx = LiveIndex.create("hybrid", path=tmp_path / "idx", embedder=WordCountEmbedder())
    idx.upsert(passages(rounds()[0]))
    real = DenseIndex.search

    def slow(self, *args, **kwargs):  # a search still reading the dense part when close() is called
        time.sleep(0.3)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DenseIndex, "search", slow)
    answers: list = []
    t = threading.Thread(target=lambda: answers.append(_raised(lambda: answers.append(_answer(idx)))))
    t.start()
    time.sleep(0.1)
    idx.close()
    t.join(30)
    assert len(answers) == 2 and answers[1] is None and answers[0]  # answered in full, no error
    with pytest.raises(InvalidInputError, match="closed"):
        idx.search(QUERY)
