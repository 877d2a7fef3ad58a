"""MindRef over a living corpus (issue #61 item 2): :meth:`MindRef.add` / :meth:`MindRef.delete` /
:meth:`MindRef.update` change the keyed title trie in place, and :class:`LiveMindRef` (``LiveIndex.create("mindref")``)
keeps it in its folder.

After any sequence of changes, answers (ids, passages, titles, scores) and the title trie itself equal a MindRef built
fresh over the held documents in their order; a deleted document is never returned (its title path leaves the trie
when no other document holds it); an edited one answers with its new title and text. The folder reopens without
encoding a title (the trie is loaded with its keys), re-encodes the saved titles for an LM that tokenizes
differently (or when changes made with another LM were logged since), refuses a damaged part, and a real SIGKILL
during an add or a delete (before the commit, mid-way through its log line, between the two renames of a change
written whole, after it) leaves the old state or the new one. A change in a folder is one line of the change log,
the saved trie's files untouched. A failing change leaves the index as it was.

Real components: the tiny random-weight Llama and its in-process BPE tokenizer (``tests/_tiny_lm.py``), the real
constrained beam search, trie and suffix arrays, the index folder. The failing tokenizer is the point of the
all-or-nothing test.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest
from _live_kill import WHENS, run_killed
from _mindref import SMALL, corpus
from _tiny_lm import tiny_local_lm

from retrievekit.core.errors import FallbackWarning, IndexFormatError, InvalidInputError
from retrievekit.core.generative import MindRef
from retrievekit.core.generative.mindref_index import PROBE, LiveMindRef
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

OPTIONS = {f.name: getattr(SMALL, f.name) for f in dataclasses.fields(SMALL) if getattr(SMALL, f.name) != f.default}
QUERIES = ["What thins the blood?", "solar power", "history of Rome", "enzymes and protein shape", "wind"]
EDITED = Passage(id="d3", title="Protein folding", text="Enzymes fold into shapes. Rome was not built in a day.")
NOTES = [Passage(id=f"n{i:02d}", title=f"Note {i} on wind", text=f"Wind note {i} moves air.") for i in range(70)]


@pytest.fixture(scope="module")
def lm():
    return tiny_local_lm(outlines=False)


def _answers(search, queries=QUERIES, k=6):
    return {q: [(h.id, h.obj.title, h.obj.text, round(h.score, 9)) for h in search(q, k)] for q in queries}


def _same_as_fresh(mr: MindRef, held: list[Passage], lm) -> None:
    fresh = MindRef(held, lm, mr.config)
    assert mr.ids() == [d.id for d in held] and mr.titles == fresh.titles
    assert list(mr.trie) == list(fresh.trie) and mr.trie.num_nodes == fresh.trie.num_nodes
    assert _answers(mr.search) == _answers(fresh.search)


def _path(lm, title: str) -> tuple[int, ...]:
    return tuple(t for t in lm.encode(SMALL.title_prefix + title) if t != lm.eos_token_id)


def test_add_delete_update_change_the_trie_in_place_and_answer_as_a_fresh_build(lm):
    docs = corpus()  # d1 and d7 share the title "Solar panels"; d2 alone is "Wind farms"
    mr = MindRef(docs[:5], lm, SMALL)
    assert mr.add(docs[5:]) == ["d5", "d6", "d7"]
    _same_as_fresh(mr, docs, lm)
    assert mr.delete(["d2", "d1"]) == ["d2", "d1"]
    assert _path(lm, "Wind farms") not in mr.trie  # its only document deleted: the path is gone
    assert _path(lm, "Solar panels") in mr.trie  # still held by d7
    assert mr.update([EDITED]) == ["d3"]
    assert _path(lm, "History of Rome") not in mr.trie and _path(lm, "Protein folding") in mr.trie
    held = [docs[i] for i in (0, 4, 5, 6, 7)] + [EDITED]
    _same_as_fresh(mr, held, lm)
    for hits in _answers(mr.search, k=8).values():
        assert not {h[0].split("#")[0] for h in hits} & {"d1", "d2"}  # a deleted document is never returned
        for doc_id, title, text, _ in hits:
            if doc_id.startswith("d3"):
                assert title == "Protein folding" and text in EDITED.text  # the edited one answers as edited
    mr.add(NOTES)  # a batch past the trie's in-place size: its arrays are rebuilt at the next query
    mr.delete([n.id for n in NOTES[::2]])
    _same_as_fresh(mr, held + NOTES[1::2], lm)


def test_changes_refuse_bad_input_by_name_and_change_nothing(lm):
    mr = MindRef(corpus()[:3], lm, SMALL)
    paths = list(mr.trie)
    with pytest.raises(InvalidInputError, match="'d1' is already held"):
        mr.add([Passage(id="x", text="new"), Passage(id="d1", text="again")])
    with pytest.raises(InvalidInputError, match="'zz' is not held"):
        mr.delete(["d0", "zz"])
    with pytest.raises(InvalidInputError, match="'zz' is not held; add it"):
        mr.update([Passage(id="zz", text="x")])
    with pytest.raises(InvalidInputError, match=r"objects\[0\] must be a Passage"):
        mr.add(["just text"])
    assert mr.ids() == ["d0", "d1", "d2"] and list(mr.trie) == paths
    mr.delete(mr.ids())
    trace = Trace()
    assert len(mr) == 0 and list(mr.trie) == [] and mr.search("solar", trace=trace) == []
    assert [e.kind for e in trace.events] == ["empty_index"]


def _changes(idx: LiveIndex) -> list[Passage]:
    """Build from five documents, add three, edit one, delete two; returns the held documents in order."""
    docs = corpus()
    idx.upsert(docs[:5])
    idx.upsert(docs[5:])
    idx.upsert([EDITED, docs[0]])  # d0 unchanged: left as it is
    assert idx.delete(["d2", "d1", "zz"]) == ["d2", "d1"]
    return [docs[i] for i in (0, 4, 5, 6, 7)] + [EDITED]


def test_a_living_mindref_answers_as_a_fresh_build_and_reopens_without_encoding_a_title(tmp_path, lm, monkeypatch):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("mindref", path=folder, llm=lm, options=OPTIONS)
    assert isinstance(idx, LiveMindRef) and idx.mindref is None and idx.search("solar") == []
    idx.upsert(corpus()[:1])  # the MindRef made: live/ written whole, the trie inside it
    saved = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (folder / "live" / "titles").iterdir()}
    held = _changes(idx)
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (folder / "live" / "titles").iterdir()} == saved
    assert len((folder / "live" / "changes.jsonl").read_bytes().splitlines()) == 4  # each change a line
    assert idx.get(idx.ids()) == held
    fresh = MindRef(held, lm, SMALL)
    assert idx.last_report == {"built": False, "added": 0, "deleted": 2, "titles": len(fresh.trie)}
    want = _answers(fresh.search)
    assert _answers(idx.search) == want and list(idx.mindref.trie) == list(fresh.trie)
    idx.close()

    encoded: list[str] = []
    real = lm.encode
    monkeypatch.setattr(lm, "encode", lambda text, *a, **kw: encoded.append(text) or real(text, *a, **kw))
    back = LiveIndex.open(folder, llm=lm)
    assert isinstance(back, LiveMindRef) and back.options == OPTIONS and back.ids() == [d.id for d in held]
    assert back.mindref.ids() == back.ids() and encoded == [PROBE]  # the saved trie and titles: only the probe
    assert list(back.mindref.trie) == list(fresh.trie)
    monkeypatch.undo()
    assert _answers(back.search) == want
    back.upsert([Passage(id="d9", title="Wind farms", text="Turbines turn in the wind.")])  # the next writer
    assert _path(lm, "Wind farms") in LiveIndex.open(folder, llm=lm).mindref.trie
    with pytest.raises(InvalidInputError, match="holds a live mindref index"):
        LiveIndex.create("bm25", path=folder)
    with pytest.raises(InvalidInputError, match="embedder= reaches no part of a mindref"):
        LiveIndex.create("mindref", embedder="all-MiniLM-L6-v2")


def test_another_tokenizer_reencodes_the_saved_titles_and_a_damaged_trie_is_refused(tmp_path, lm):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("mindref", path=folder, llm=lm, options=OPTIONS)
    held = _changes(idx)
    idx.close()
    other = tiny_local_lm(outlines=False, texts=["Another tokenizer, trained on other words: zebra quartz."] * 3)
    with pytest.warns(FallbackWarning, match="another tokenizer"):
        back = LiveIndex.open(folder, llm=other)
        assert _answers(back.search) == _answers(MindRef(held, other, SMALL).search)
    wind = Passage(id="d9", title="Wind farms", text="Turbines turn in the wind.")
    back.upsert([wind])  # logged with the other tokenizer's title path
    back.close()
    with pytest.warns(FallbackWarning, match="another tokenizer"):  # the saved paths are of two tokenizers
        again = LiveIndex.open(folder, llm=lm)
        assert _answers(again.search) == _answers(MindRef([*held, wind], lm, SMALL).search)
    again.close()
    TokenTrie.keyed({"d0": [5, 6]}, eos_token_id=lm.eos_token_id).save(folder / "live" / "titles")
    with pytest.raises(IndexFormatError, match="damaged"):  # the live manifest's checksums cover the trie
        LiveIndex.open(folder, llm=lm)


def test_a_failing_change_leaves_the_index_and_its_folder_as_they_were(tmp_path, lm, monkeypatch):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("mindref", path=folder, llm=lm, options=OPTIONS)
    idx.upsert(corpus()[:4])
    mr, ids, paths = idx.mindref, idx.ids(), list(idx.mindref.trie)
    real = lm.encode

    def broken(text, *a, **kw):  # a tokenizer that fails on one title
        if "Broken" in text:
            raise RuntimeError("tokenizer failed")
        return real(text, *a, **kw)

    monkeypatch.setattr(lm, "encode", broken)
    with pytest.raises(RuntimeError, match="tokenizer failed"):
        idx.upsert([Passage(id="d0", title="Fine", text="x"), Passage(id="nb", title="Broken", text="y")])
    assert idx.mindref is mr and idx.ids() == ids and list(mr.trie) == paths and mr.titles[0] != "Fine"
    monkeypatch.undo()
    idx.close()
    assert LiveIndex.open(folder, llm=lm).ids() == ids


def test_everything_deleted_then_back(lm):
    idx = LiveIndex.create("mindref", llm=lm, options=OPTIONS)
    idx.upsert(corpus()[:2])
    assert idx.last_report["built"]
    idx.delete(["d0", "d1"])
    trace = Trace()
    assert idx.search("solar", trace=trace) == [] and trace.events[0].kind == "empty_index"
    idx.upsert(corpus()[2:4])
    assert not idx.last_report["built"] and idx.mindref.ids() == ["d2", "d3"]
    assert {h.id.split("#")[0] for h in idx.search("wind", k=4)} <= {"d2", "d3"}


_KILLED = """
    import sys
    from _live_kill import kill_after, kill_at
    from _mindref import corpus
    from _tiny_lm import tiny_local_lm
    from retrievekit.core.index.live import LiveIndex
    import retrievekit.core.generative.mindref_index
    from retrievekit.core.types import Passage

    folder, what, when = sys.argv[1], sys.argv[2], sys.argv[3]

    idx = LiveIndex.open(folder, llm=tiny_local_lm(outlines=False))
    kill_at(when)
    if what == "add":
        idx.upsert(corpus()[4:])
    else:
        idx.delete(["d0", "d2"])
    kill_after(when)
"""


@pytest.mark.parametrize("when", WHENS)
@pytest.mark.parametrize("what", ["add", "delete"])
def test_a_sigkill_during_a_change_leaves_the_old_or_the_new_state(tmp_path, lm, what, when):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("mindref", path=folder, llm=lm, options=OPTIONS)
    idx.upsert(corpus()[:4])
    old = idx.ids()
    idx.close()
    run_killed(_KILLED, folder, what, when)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)  # the other process's trie is read as saved
        back = LiveIndex.open(folder, llm=lm)
        assert back.mindref is not None
    new = old + ["d4", "d5", "d6", "d7"] if what == "add" else ["d1", "d3"]
    assert back.ids() == (new if when == "after_commit" else old)
    assert back.mindref.ids() == back.ids()  # the trie and the objects: one state
    assert _answers(back.search) == _answers(MindRef(back.get(back.ids()), lm, SMALL).search)
    back.upsert([Passage(id="z", title="Wind farms", text="after the kill")])  # the next writer carries on
    assert "z" in LiveIndex.open(folder, llm=lm).mindref


def test_a_search_during_a_reload_reads_the_old_mindref_not_an_empty_index(tmp_path, lm, monkeypatch):
    folder = tmp_path / "idx"
    first = LiveIndex.create("mindref", path=folder, llm=lm, options=OPTIONS)
    first.upsert(corpus()[:4])
    second = LiveIndex.open(folder, llm=lm)
    want = _answers(second.search)
    first.upsert(corpus()[4:6])  # the second handle reloads the folder before its next change
    during: list[Any] = []
    real = TokenTrie.load.__func__

    def load(cls, path):  # the reload under way: a search of another thread meanwhile
        during.append(_answers(second.search))
        return real(cls, path)

    monkeypatch.setattr(TokenTrie, "load", classmethod(load))
    second.upsert(corpus()[6:7])
    assert during == [want] and want  # the old MindRef's answers, not an empty index
    assert second.ids() == [d.id for d in corpus()[:7]]
