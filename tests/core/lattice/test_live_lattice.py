"""LATTICE as a living index (issue #61 items 1-3): :class:`LiveLattice` (``LiveIndex.create("lattice")``) made
empty builds its tree from its first documents, then follows adds, edits and deletions in place. The tree stays
valid with every live document a leaf exactly once and no deleted one anywhere; the exact oracle finds every relevant
document as in a fresh tree; the summary calls per changed document stay within the tree's height (none with
extractive summaries); a failing change leaves the index as it was; the folder reopens to the same tree; and a real
SIGKILL during an add or a delete (before the commit, mid-way through its log line, between the two renames of a
change written whole, after it) leaves the old state or the new one. A change in a folder is one line of the change
log (what it did to the tree), the tree's files untouched, and the reopened tree is the changed one.

Real components: all-MiniLM-L6-v2, the bottom-up builder, the LATTICE search with the exact oracle judge, the index
folder. The scripted summariser (``KeywordLLM``) is the point of the call-count test, the failing model the point
of the all-or-nothing test.
"""

from __future__ import annotations

import asyncio

import pytest
from _lattice import TREE_TOPICS, KeywordLLM
from _live_kill import WHENS, run_killed

from retrievekit.core.errors import IndexFormatError, InvalidInputError, LLMUnavailableError
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.lattice import LatticeConfig, TreeBuildConfig, build_bottom_up
from retrievekit.core.lattice.index import LiveLattice
from retrievekit.core.lattice.search import Lattice
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

M = 4
EXTRACTIVE = {"summaries": "extractive", "max_children": M}
TOPICS = TREE_TOPICS[:6]


def _doc(i: int, edit: str = "") -> Passage:
    word, sentence = TOPICS[i % len(TOPICS)]
    return Passage(id=f"d{i:03d}", text=f"{sentence}{edit}; note {i} on {word} number {i * 7 % 13}.")


DOCS = [_doc(i) for i in range(48)]
EDITS = [_doc(i, " (revised)") for i in (1, 9, 30, 41)]
GONE = {f"d{i:03d}" for i in range(0, 48, 4)}
LIVE = [d for i, d in sorted(({d.id: d for d in DOCS} | {d.id: d for d in EDITS}).items()) if i not in GONE]
"""What :func:`_change` leaves: the live documents (edited ones in their new text) and the deleted ids."""


def _change(idx: LiveIndex, trace: Trace | None = None) -> None:
    """Build from 24 documents, add 24 in 6 batches, edit 4, delete 12 (:data:`LIVE`, :data:`GONE`)."""
    idx.upsert(DOCS[:24], trace=trace)
    for b in range(6):
        idx.upsert(DOCS[24 + 4 * b : 28 + 4 * b], trace=trace)
    idx.upsert(EDITS, trace=trace)
    assert sorted(idx.delete(sorted(GONE), trace=trace)) == sorted(GONE)


def _check_tree(tree: SemanticTree, live: list[Passage], gone: set[str]) -> None:
    listed = [c for n in tree.nodes.values() for c in n.children if tree.is_leaf(c)]
    assert sorted(listed) == sorted(d.id for d in live)  # every live document a leaf exactly once
    assert {i: tree.objects[i].text for i in listed} == {d.id: d.text for d in live}  # the current texts
    assert not gone & (set(tree.nodes) | set(tree.objects) | set(tree.embeddings))
    for nid, node in tree.nodes.items():
        if not node.is_leaf:
            assert 1 <= len(node.children) <= M, (nid, node.children)
            assert all(tree.nodes[c].parent == nid for c in node.children)
            assert nid == ROOT or (node.text and nid in tree.embeddings)


def _gold() -> dict[str, list[str]]:
    ids = [d.id for d in LIVE]
    gold = {f"query {j}": [ids[(j * 7) % len(ids)], ids[(j * 7 + 17) % len(ids)]] for j in range(6)}
    gold["the revised ones"] = ["d001", "d009", "d030"]
    return gold


def _recall(lat_search, gold: dict[str, list[str]]) -> float:
    found = [len(set(gold[q]) & {h.id for h in lat_search(q)}) / len(gold[q]) for q in sorted(gold)]
    return sum(found) / len(found)


def test_a_living_tree_keeps_every_live_document_once_and_the_oracle_finds_them_as_in_a_fresh_tree(minilm):
    trace, gold = Trace(), _gold()
    oracle = _Counted(OracleJudge(gold))  # the search's model: the exact oracle
    options = {**EXTRACTIVE, "beam_size": 2, "num_iters": 20}
    idx = LiveIndex.create("lattice", embedder=minilm, llm=oracle, options=options)
    assert isinstance(idx, LiveLattice) and idx.tree is None
    _change(idx, trace)
    _check_tree(idx.tree, LIVE, GONE)
    assert trace.counters["lattice.update.summary_calls"] == 0 == trace.llm_calls == oracle.calls  # extractive
    assert [e.kind for e in trace.events].count("lattice_built") == 1  # the first upsert built; later ones changed it

    fresh = build_bottom_up(LIVE, None, minilm, TreeBuildConfig(**EXTRACTIVE))
    fresh_lat = Lattice(fresh, OracleJudge(gold), LatticeConfig(beam_size=2, num_iters=20))
    assert _recall(lambda q: idx.search(q, k=10), gold) == _recall(lambda q: fresh_lat.search(q, k=10), gold) == 1.0
    assert {h.id for q in gold for h in idx.search(q, k=10)}.isdisjoint(GONE)  # a deleted document never returned


def test_llm_summaries_take_at_most_the_height_in_calls_per_changed_document(minilm):
    llm = KeywordLLM()
    idx = LiveIndex.create("lattice", embedder=minilm, llm=llm, options={"max_children": M})
    idx.upsert(DOCS[:24])
    assert idx.last_report["built"] and llm.calls > 0  # the build wrote its summaries
    for batch, delete in ((DOCS[24:30], []), ([_doc(3, " (revised)")], []), ([], ["d005", "d006", "d007"])):
        before, trace = llm.calls, Trace()
        height = idx.tree.height
        if batch:
            idx.upsert(batch, trace=trace)
        else:
            idx.delete(delete, trace=trace)
        report, changed = idx.last_report, len(batch) + len(delete) + (1 if batch and batch[0].id == "d003" else 0)
        assert 0 < report["summary_calls"] == llm.calls - before == trace.counters["lattice.update.summary_calls"]
        assert report["summary_calls"] <= report["summary_bound"] <= max(height, idx.tree.height) * changed
        assert trace.counters["lattice.update.summary_bound"] == report["summary_bound"]


def test_empty_first_documents_everything_deleted_and_back(minilm):
    idx = LiveIndex.create("lattice", embedder=minilm, options=EXTRACTIVE)
    trace = Trace()
    assert idx.search("lava", trace=trace) == [] and trace.events[0].kind == "empty_index"
    idx.upsert([DOCS[0]])  # one document: a tree of one leaf
    assert idx.tree.leaf_ids() == ["d000"] and idx.last_report["built"]
    idx.upsert([_doc(0, " (revised)")])  # its only document replaced: built afresh (nothing to keep)
    assert idx.last_report["built"] and "revised" in idx.tree.objects["d000"].text
    idx.upsert(DOCS[1:6])
    assert not idx.last_report["built"] and sorted(idx.tree.leaf_ids()) == [d.id for d in DOCS[:6]]
    idx.delete([d.id for d in DOCS[:6]])
    assert idx.tree is None and idx.ids() == [] and idx.search("lava") == []
    idx.upsert(DOCS[6:9])
    assert idx.last_report["built"] and sorted(idx.tree.leaf_ids()) == ["d006", "d007", "d008"]


class _Counted(ChatLLMBase):
    """A model that counts the calls it passes on; ``down`` makes every call fail as an unreachable server's would
    (the point of the all-or-nothing test)."""

    def __init__(self, inner):
        self.inner, self.calls, self.down = inner, 0, False

    def complete(self, prompt, **limits):
        if self.down:
            raise LLMUnavailableError("the summariser is down")
        self.calls += 1
        return self.inner.complete(prompt, **limits)

    def __getattr__(self, name):
        return getattr(self.__dict__["inner"], name)


def test_a_failing_change_leaves_the_index_and_its_folder_as_they_were(tmp_path, minilm):
    folder = tmp_path / "idx"
    llm = _Counted(KeywordLLM())
    idx = LiveIndex.create("lattice", path=folder, embedder=minilm, llm=llm, options={"max_children": M})
    idx.upsert(DOCS[:12])
    tree, ids = idx.tree, idx.ids()
    llm.down = True  # summaries now fail
    with pytest.raises(LLMUnavailableError):
        idx.upsert(DOCS[12:16])
    with pytest.raises(LLMUnavailableError):
        idx.delete(["d000", "d001", "d002"])
    assert idx.tree is tree and idx.ids() == ids and sorted(tree.leaf_ids()) == sorted(ids)
    with pytest.raises(InvalidInputError, match="reserved"):
        idx.upsert([Passage(id="root", text="x")])
    assert idx.ids() == ids
    idx.close()
    back = LiveIndex.open(folder, embedder=minilm)
    assert back.ids() == ids and sorted(back.tree.leaf_ids()) == sorted(ids)


def test_the_folder_reopens_to_the_same_tree_and_refuses_a_tree_of_another_corpus(tmp_path, minilm):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("lattice", path=folder, embedder=minilm, options=EXTRACTIVE)
    _change(idx)
    idx.close()
    back = LiveIndex.open(folder, embedder=minilm, llm=OracleJudge(_gold()))
    assert isinstance(back, LiveLattice) and back.options == EXTRACTIVE
    _check_tree(back.tree, LIVE, GONE)
    assert _recall(lambda q: back.search(q, k=10), _gold()) == 1.0
    assert {n.id: n.children for n in back.tree.iter_nodes()} == {n.id: n.children for n in idx.tree.iter_nodes()}
    assert LiveIndex.create("lattice", path=folder, embedder=minilm).ids() == back.ids()  # create reopens it
    with pytest.raises(InvalidInputError, match="holds a live lattice index"):
        LiveIndex.create("bm25", path=folder)
    SemanticTree.flat(DOCS[:3]).save(folder / "live" / "tree")  # a tree of another corpus inside the folder
    with pytest.raises(IndexFormatError, match="damaged"):  # the live manifest's checksums cover the tree
        LiveIndex.open(folder, embedder=minilm)


def _files(folder) -> dict[str, tuple[int, int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir()}


def test_a_change_is_one_log_line_and_the_reopened_tree_is_the_changed_one(tmp_path, minilm):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("lattice", path=folder, embedder=minilm, options=EXTRACTIVE)
    idx.upsert(DOCS[:24])  # the build: live/ written whole, the tree inside it
    tree_files, log = _files(folder / "live" / "tree"), folder / "live" / "changes.jsonl"
    sizes = []
    for b in range(6):
        idx.upsert(DOCS[24 + 4 * b : 28 + 4 * b])
        sizes.append(log.stat().st_size)
    idx.upsert(EDITS)
    idx.delete(sorted(GONE))
    assert _files(folder / "live" / "tree") == tree_files  # the tree's files untouched: each change a line
    assert len(log.read_bytes().splitlines()) == 8 and sizes == sorted(sizes)
    back = LiveIndex.open(folder, embedder=minilm)
    mine, theirs = idx.tree, back.tree
    assert {n.id: (mine.text(n.id), n.children, n.depth) for n in mine.iter_nodes()} == {
        n.id: (theirs.text(n.id), n.children, n.depth) for n in theirs.iter_nodes()
    }
    assert set(theirs.embeddings) == set(mine.embeddings)
    assert all((theirs.embeddings[k] == mine.embeddings[k]).all() for k in mine.embeddings)
    assert {i: theirs.objects[i] for i in theirs.leaf_ids()} == {i: mine.objects[i] for i in mine.leaf_ids()}
    assert theirs.meta == mine.meta and theirs.height == mine.height
    _check_tree(theirs, LIVE, GONE)
    back.compact()  # the log folded: the tree written whole again, the same tree
    again = LiveIndex.open(folder, embedder=minilm).tree
    assert not log.exists() and {n.id: n.children for n in again.iter_nodes()} == {
        n.id: n.children for n in mine.iter_nodes()
    }


def test_concurrent_changes_are_made_one_at_a_time_and_none_is_lost(minilm):
    idx = LiveIndex.create("lattice", embedder=minilm, options=EXTRACTIVE)
    idx.upsert(DOCS[:8])
    batches = [DOCS[8 + 4 * b : 12 + 4 * b] for b in range(8)]

    async def run() -> None:  # awaited changes run on the bridge's pool, several at once
        from retrievekit.core.llm.bridge import run_off_loop

        await asyncio.gather(*(run_off_loop(idx.upsert, b) for b in batches), run_off_loop(idx.delete, ["d000"]))

    asyncio.run(run())
    want = {d.id for d in DOCS[1:40]}
    assert set(idx.ids()) == want
    _check_tree(idx.tree, [d for d in DOCS if d.id in want], {"d000"})


_KILLED = """
    import sys
    from _live_kill import kill_after, kill_at
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.index.live import LiveIndex
    import retrievekit.core.lattice.index
    from retrievekit.core.types import Passage

    folder, what, when = sys.argv[1], sys.argv[2], sys.argv[3]

    kill_at(when)
    idx = LiveIndex.open(folder, embedder=MiniLMEmbedder.default())
    if what == "add":
        idx.upsert([Passage(id=f"n{i}", text=f"New note {i} on comets and volcano lava") for i in range(6)])
    else:
        idx.delete([f"d{i:03d}" for i in range(0, 24, 2)])  # half the tree: nodes pruned and merged
    kill_after(when)
"""


@pytest.mark.parametrize("when", WHENS)
@pytest.mark.parametrize("what", ["add", "delete"])
def test_a_sigkill_during_a_change_leaves_the_old_or_the_new_state(tmp_path, minilm, what, when):
    folder = tmp_path / "idx"
    idx = LiveIndex.create("lattice", path=folder, embedder=minilm, options=EXTRACTIVE)
    idx.upsert(DOCS[:24])
    old = set(idx.ids())
    idx.close()
    run_killed(_KILLED, folder, what, when)
    back = LiveIndex.open(folder, embedder=minilm)
    new = old | {f"n{i}" for i in range(6)} if what == "add" else old - {f"d{i:03d}" for i in range(0, 24, 2)}
    assert set(back.ids()) == (new if when == "after_commit" else old)
    assert sorted(back.tree.leaf_ids()) == sorted(back.ids())  # the tree and the objects: one state
    back.upsert([Passage(id="z", text="after the kill: comets")])  # the next writer carries on
    assert "z" in LiveIndex.open(folder, embedder=minilm).tree.leaf_ids()


def test_two_handles_on_one_folder_take_turns_and_each_sees_the_others_logged_changes(tmp_path, minilm):
    folder = tmp_path / "idx"
    first = LiveIndex.create("lattice", path=folder, embedder=minilm, options=EXTRACTIVE)
    first.upsert(DOCS[:24])
    second = LiveIndex.open(folder, embedder=minilm)
    first.upsert(DOCS[24:28])  # a log line the second handle has not read
    second.upsert(DOCS[28:32])  # caught up first: the first handle's line applied to its tree, then its own
    first.delete(["d000"])  # and back
    want = DOCS[1:32]
    for idx in (first, LiveIndex.open(folder, embedder=minilm)):
        assert sorted(idx.ids()) == sorted(d.id for d in want)
        _check_tree(idx.tree, want, {"d000"})


def test_a_search_during_a_reload_reads_the_old_tree_not_an_empty_index(tmp_path, minilm, monkeypatch):
    from retrievekit.core.fakes import WordScoreLLM

    folder = tmp_path / "idx"
    first = LiveIndex.create("lattice", path=folder, embedder=minilm, options=EXTRACTIVE)
    first.upsert(DOCS[:24])
    second = LiveIndex.open(folder, embedder=minilm, llm=WordScoreLLM("comet"))
    old = set(second.ids())
    first.upsert(DOCS[24:28])  # the second handle reloads the folder before its next change
    during: list[list[str]] = []
    real = SemanticTree.load.__func__

    def load(cls, path):  # the reload under way: a search of another thread meanwhile
        during.append([h.id for h in second.search("comets and volcano lava", k=3)])
        return real(cls, path)

    monkeypatch.setattr(SemanticTree, "load", classmethod(load))
    second.upsert(DOCS[28:30])
    assert len(during) == 1 and len(during[0]) == 3 and set(during[0]) <= old  # the old tree's answer
    assert set(second.ids()) == {d.id for d in DOCS[:30]}
