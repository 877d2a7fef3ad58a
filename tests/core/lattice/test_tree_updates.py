"""A LATTICE tree follows a living corpus (issue #61 item 2): insert routes down and splits, delete prunes and
merges, the touched summaries are refreshed within ``height x changed documents`` calls (none with extractive
summaries), the tree reports its drift from a fresh build, and the changed tree saves and loads with its corpus record.

Real components: the all-MiniLM-L6-v2 embedder, the bottom-up builder, the LATTICE search with the exact oracle
judge, the tree folder. The scripted summariser (``KeywordLLM``) is the point of the call-count test.
"""

from __future__ import annotations

import copy
import importlib
import json

import pytest
from _lattice import TREE_TOPICS as TOPICS
from _lattice import KeywordLLM

from retrievekit.core.errors import CorpusMismatchError, InvalidInputError, LLMUnavailableError
from retrievekit.core.index.corpus_record import RECORD_KEY, check_same_corpus, corpus_record
from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.lattice import (
    Lattice,
    LatticeConfig,
    SemanticTree,
    TreeBuildConfig,
    build_bottom_up,
    delete_documents,
    drift,
    insert_documents,
)
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

M = 5


def _doc(i: int) -> Passage:
    word, sentence = TOPICS[i % len(TOPICS)]
    return Passage(id=f"d{i:03d}", text=f"{sentence}; note {i} on {word} number {i * 7 % 13}.", title=f"{word} {i}")


DOCS = [_doc(i) for i in range(80)]
BUILT, NEW = DOCS[:60], DOCS[60:]


def _build(docs, minilm, summaries="extractive", llm=None):
    return build_bottom_up(docs, llm, minilm, TreeBuildConfig(max_children=M, summaries=summaries))


@pytest.fixture(scope="module")
def built(minilm):
    return _build(BUILT, minilm)


def _doomed(tree: SemanticTree) -> list[str]:
    """Ten built documents: all but one leaf of the fullest leaf group (so a node falls under its fill), then more."""
    groups = [n for n in tree.nodes.values() if n.children and all(tree.is_leaf(c) for c in n.children)]
    fullest = max(groups, key=lambda n: (len(n.children), n.id))
    out = sorted(c for c in fullest.children if c in {d.id for d in BUILT})[1:]
    rest = [d.id for d in BUILT if d.id not in out and d.id not in fullest.children]
    return out + rest[: 10 - len(out)]


def _check(tree: SemanticTree, live: set[str], gone: set[str]) -> None:
    listed = [c for n in tree.nodes.values() for c in n.children if tree.is_leaf(c)]
    assert sorted(listed) == sorted(live)  # every live document a leaf exactly once
    assert not gone & (set(tree.nodes) | set(tree.objects) | set(tree.embeddings))
    for nid, node in tree.nodes.items():
        if not node.is_leaf:
            assert 1 <= len(node.children) <= M, (nid, node.children)
            assert nid == ROOT or node.text  # every summary written
            assert nid in tree.embeddings


def _updated(built, minilm, llm=None, trace=None):
    tree = copy.deepcopy(built)
    ins = insert_documents(tree, NEW, llm, minilm, trace=trace)
    doomed = _doomed(tree)
    dele = delete_documents(tree, doomed, llm, minilm, trace=trace)
    return tree, doomed, ins, dele


def test_insert_and_delete_keep_every_live_document_once_without_an_llm_call(built, minilm):
    llm, trace = KeywordLLM(), Trace()
    tree, doomed, ins, dele = _updated(built, minilm, llm, trace)
    live = {d.id for d in DOCS} - set(doomed)
    _check(tree, live, set(doomed))
    assert ins["inserted"] == 20 and ins["split_nodes"] >= 1 and dele["deleted"] == 10 and dele["removed_nodes"] >= 1
    assert ins["refreshed_summaries"] > 0 and dele["refreshed_summaries"] > 0
    assert llm.calls == trace.llm_calls == ins["summary_calls"] == dele["summary_calls"] == 0  # extractive: no call
    assert trace.counters["lattice.update.summary_calls"] == 0


def test_llm_summaries_are_refreshed_within_height_calls_per_changed_document(minilm):
    llm = KeywordLLM()
    tree = _build(BUILT, minilm, summaries="llm", llm=llm)
    built_calls, trace = llm.calls, Trace()
    ins = insert_documents(tree, NEW, llm, minilm, trace=trace)
    assert 0 < ins["summary_calls"] <= ins["summary_bound"] == tree.height * 20  # the height after the inserts
    height, doomed = tree.height, _doomed(tree)
    dele = delete_documents(tree, doomed, llm, minilm, trace=trace)
    assert 0 < dele["summary_calls"] <= dele["summary_bound"] == height * 10  # the height before the deletes
    _check(tree, {d.id for d in DOCS} - set(doomed), set(doomed))
    calls = trace.counters["lattice.update.summary_calls"]
    assert calls == llm.calls - built_calls == trace.llm_calls == ins["summary_calls"] + dele["summary_calls"]
    assert trace.counters["lattice.update.summary_bound"] == ins["summary_bound"] + dele["summary_bound"]
    assert "extractive_summaries" not in ins and "extractive_summaries" not in dele  # the model's titles


def _recall_at_10(tree: SemanticTree, gold: dict[str, list[str]]) -> float:
    lat = Lattice(tree, OracleJudge(gold), LatticeConfig(beam_size=2, num_iters=20))
    found = [len(set(gold[q]) & {h.id for h in lat.search(q, k=10)}) / len(gold[q]) for q in sorted(gold)]
    return sum(found) / len(found)


def test_the_oracle_finds_every_relevant_document_as_in_a_fresh_build(built, minilm):
    tree, doomed, _, _ = _updated(built, minilm)
    live = [d for d in DOCS if d.id not in doomed]
    ids = [d.id for d in live]
    gold = {f"query {j}": [ids[(j * 11) % len(ids)], ids[(j * 11 + 37) % len(ids)]] for j in range(8)}
    gold["inserted ones"] = [d.id for d in NEW[:3]]
    fresh = _build(live, minilm)
    assert _recall_at_10(tree, gold) == _recall_at_10(fresh, gold) == 1.0


def test_drift_reports_fill_coherence_and_changes_and_advises_a_rebuild(built, minilm):
    start = drift(built)
    assert (start.changed_share, start.rebuild_advised, start.built_leaves) == (0.0, False, 60)
    assert start.coherence is not None and 0.0 < start.coherence <= 1.0
    tree, _, _, _ = _updated(built, minilm)
    d = drift(tree)
    assert (d.leaves, d.built_leaves, d.inserted, d.deleted, d.changed_share) == (70, 60, 20, 10, 0.5)
    assert d.built_coherence == start.coherence and d.built_height == built.height
    assert d.over_full == 0 and 1 <= d.fill_min <= d.fill_mean <= d.fill_max <= d.max_children == M
    assert 0.0 < d.coherence <= 1.0 and d.min_fill == 2
    assert not d.rebuild_advised and d.reasons == ()
    more = [i for i in tree.leaf_ids() if i in {x.id for x in BUILT}][:25]
    delete_documents(tree, more, None, minilm)
    after = drift(tree)
    assert after.rebuild_advised and after.deleted == 35 and "changed" in after.reasons[0]


def test_the_changed_tree_saves_and_loads_with_its_corpus_record(built, minilm, tmp_path):
    tree, doomed, _, _ = _updated(built, minilm)
    live = [d for d in DOCS if d.id not in doomed]
    folder = tree.save(tmp_path / "tree")
    back = SemanticTree.load(folder)
    assert {n: x.children for n, x in back.nodes.items()} == {n: x.children for n, x in tree.nodes.items()}
    assert drift(back) == drift(tree) and back.meta["baseline"] == tree.meta["baseline"]
    recorded = json.loads((folder / "manifest.json").read_text())[RECORD_KEY]
    assert recorded == corpus_record(live) != corpus_record(BUILT)
    check_same_corpus(back.objects.values(), live, where=str(folder), recorded=recorded)
    with pytest.raises(CorpusMismatchError):
        check_same_corpus(back.objects.values(), BUILT, where=str(folder), recorded=recorded)
    insert_documents(back, [Passage(id="late", text="Comets leave dust in icy tails.")], None, minilm)
    assert "late" in back.leaf_ids() and back.meta["inserted"] == 21  # the loaded tree keeps changing


def test_bad_deletions_are_typed_errors_that_change_nothing(built, minilm):
    tree = copy.deepcopy(built)
    before = {n: list(x.children) for n, x in tree.nodes.items()}
    with pytest.raises(InvalidInputError, match=r"ids: 2 not a document of the tree, e.g. \['nope', 'root'\]"):
        delete_documents(tree, ["d001", "nope", ROOT], None, minilm)
    with pytest.raises(InvalidInputError, match="every document"):
        delete_documents(tree, tree.leaf_ids(), None, minilm)
    with pytest.raises(InvalidInputError, match="not one string"):
        delete_documents(tree, "d001", None, minilm)
    with pytest.raises(InvalidInputError, match="embedder: a tree change needs the embedder"):
        delete_documents(tree, ["d001"], None, None)
    with pytest.raises(InvalidInputError, match="embedder: a tree change needs the embedder"):
        insert_documents(tree, NEW[:1], None, "all-MiniLM-L6-v2")
    assert {n: list(x.children) for n, x in tree.nodes.items()} == before and "baseline" not in tree.meta


class DownAfter(KeywordLLM):
    """Writes ``n`` summaries, then the server is down."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def complete(self, prompt, **kw):
        if self.calls >= self.n:
            raise LLMUnavailableError("connection refused")
        return super().complete(prompt, **kw)


def test_a_model_down_mid_refresh_is_a_typed_error_that_leaves_a_searchable_tree(minilm):
    tree = _build(BUILT, minilm, summaries="llm", llm=KeywordLLM())
    with pytest.raises(LLMUnavailableError, match="connection refused"):
        insert_documents(tree, NEW, DownAfter(2), minilm)
    _check(tree, {d.id for d in DOCS}, set())  # every node has a text: the new ones an extractive label
    assert tree.meta["inserted"] == 20 and drift(tree).inserted == 20
    gold = {"late ones": [d.id for d in NEW[:2]]}
    assert _recall_at_10(tree, gold) == 1.0


def _index_of(tree: SemanticTree) -> tuple:
    """What indexing computes: each node's parent and depth, the sorted leaves, the height."""
    return {n: (node.parent, node.depth) for n, node in tree.nodes.items()}, tree.leaf_ids(), tree.height


def test_an_insertion_indexes_only_what_it_changed_and_agrees_with_a_whole_reindex(built, minilm):
    tree = built.copy()
    small = TreeBuildConfig(max_children=3, summaries="extractive")  # splits at every level: sibling and deeper ones
    report = insert_documents(tree, NEW, None, minilm, small)
    assert report["split_nodes"] >= 5
    sets = {n: tree.leaf_set(n) for n in tree.nodes}  # cached as an insertion leaves them
    incremental = _index_of(tree)
    tree.reindex()  # the whole walk, every check
    assert _index_of(tree) == incremental
    assert all(tree.leaf_set(n) == s for n, s in sets.items())


def test_a_copy_changed_leaves_the_tree_it_was_copied_from_as_it_was(built, minilm):
    before = (_index_of(built), {n: (x.text, list(x.children)) for n, x in built.nodes.items()})
    vectors = {n: built.embeddings[n].copy() for n in built.embeddings}
    copied = built.copy()
    insert_documents(copied, NEW, None, minilm)
    delete_documents(copied, _doomed(copied), None, minilm)
    assert (_index_of(built), {n: (x.text, list(x.children)) for n, x in built.nodes.items()}) == before
    assert set(built.objects) == {d.id for d in BUILT} and set(built.embeddings) == set(vectors)
    assert all((built.embeddings[n] == v).all() for n, v in vectors.items())
    assert set(copied.objects) != set(built.objects)


def test_a_tree_opened_from_its_folder_changes_as_the_built_one_reading_only_what_it_changes(built, minilm, tmp_path):
    """The first change of an opened tree records the build's values from the arrays and a sample of the nodes, and
    keeps the leaf ids it read from its folder: it builds a few of the nodes, not every one (as it did before)."""
    reference = copy.deepcopy(built)
    opened = SemanticTree.load(built.save(tmp_path / "tree"))
    assert drift(opened) == drift(reference)  # fill from the arrays; under COHERENCE_SAMPLE: every node
    doomed = _doomed(reference)
    for tree in (reference, opened):
        insert_documents(tree, NEW[:5], None, minilm)
        delete_documents(tree, doomed, None, minilm)
    assert opened.meta["baseline"] == reference.meta["baseline"]
    assert opened.leaf_ids() == reference.leaf_ids() and len(opened.leaf_ids()) == opened.num_leaves == 55
    assert {n: x.children for n, x in opened.nodes.items()} == {n: x.children for n, x in reference.nodes.items()}
    assert drift(opened) == drift(reference)


def test_the_first_change_of_an_opened_tree_builds_a_sample_of_its_nodes_not_all(minilm, tmp_path, monkeypatch):
    drift_module = importlib.import_module("retrievekit.core.lattice.drift")  # the package's ``drift`` is the function
    monkeypatch.setattr(drift_module, "COHERENCE_SAMPLE", 3)
    tree = _build(DOCS, minilm)
    opened = SemanticTree.load(tree.save(tmp_path / "tree"))
    total = len(opened.nodes)
    delete_documents(opened, [DOCS[0].id], None, minilm)
    built_nodes = len(opened.nodes._own)  # the nodes the change and the baseline's sample read
    bound = 3 + 1 + opened.height + 2 * M  # the sample, the root, the leaf's path, a merge's siblings and children
    assert built_nodes <= bound < total / 4, (built_nodes, bound, total)
    assert opened.meta["baseline"]["leaves"] == 80 and opened.num_leaves == 79 and DOCS[0].id not in opened.leaf_ids()
