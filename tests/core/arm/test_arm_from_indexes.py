"""ARM over indexes built before (``Arm.from_indexes``): no corpus listed, each search reads only the objects it needs
from the BM25 index's document store, and answers as ARM over the listed corpus does.

Real components: tantivy (a BM25 index written to a folder and opened by ``BM25Index.load``), Chroma in a folder,
MiniLM, the MIP; the chat model is scripted (its replies are not what is tested).
"""

from __future__ import annotations

import asyncio

import pytest
from _arm import QUESTION, Chat, corpus
from _corpora import FRUIT

from retrievekit.core.arm import Arm, ArmConfig
from retrievekit.core.errors import EmptyCorpusError, InvalidInputError
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

CFG = ArmConfig.from_options({"ilp_k": 4, "pool_size": 6, "vocab_objects": 6, "base_k": 3, "expand_ks": "2,3"})
QUESTIONS = [QUESTION, "Which fruits are sweet?", "How do solar panels make electricity?", "wind farm capacity"]


def objects() -> list:
    filler = [
        Passage(id=f"f{i}", title=f"Note {i}", text=f"Note {i} lists item {i * 7} of the archive.") for i in range(40)
    ]
    return [*corpus(), *FRUIT, *filler]


@pytest.fixture(scope="module")
def saved(tmp_path_factory, minilm_module):
    folder = tmp_path_factory.mktemp("arm-indexes")
    objs = objects()
    BM25Index.build(iter(objs), BM25Config(engine="tantivy"), folder=folder / "bm25")
    dense = DenseIndex.build(objs, embedder=minilm_module, collection_name="arm-from-indexes", path=folder / "dense")
    return folder, dense


@pytest.fixture(scope="module")
def minilm_module():
    from retrievekit.core.index.embeddings import MiniLMEmbedder

    return MiniLMEmbedder.default()


def opened(saved) -> tuple[BM25Index, list[list[str]]]:
    """The BM25 index opened from its folder, with every ``objects_of`` request it gets recorded."""
    bm25 = BM25Index.load(saved[0] / "bm25")
    asked: list[list[str]] = []
    read = bm25.objects_of

    def spied(ids):
        ids = list(ids)
        asked.append(ids)
        return read(ids)

    bm25.objects_of = spied  # type: ignore[method-assign]
    return bm25, asked


def _answer(hits) -> list[tuple]:
    return [(h.id, round(h.score, 9), h.obj.metadata.get("arm_links"), h.obj.text) for h in hits]


def test_over_saved_indexes_it_answers_as_over_the_listed_corpus_and_reads_only_its_candidates(saved, monkeypatch):
    bm25, asked = opened(saved)
    monkeypatch.setattr(type(bm25), "objects", property(lambda self: pytest.fail("the whole corpus was read")))
    stored = Arm.from_indexes(bm25, saved[1], Chat(), CFG)
    held = Arm(objects(), Chat(), CFG, dense=saved[1], bm25=BM25Index.build(objects(), BM25Config(engine="tantivy")))
    assert stored.corpus is None and len(stored.objects) == len(objects()) and "Arm(<" in repr(stored)
    for q in QUESTIONS:
        asked.clear()
        trace = Trace()
        got = stored.search(q, k=5, trace=trace)
        assert _answer(got) == _answer(held.search(q, k=5)), q
        assert got and "unknown_candidates" not in {n.kind for n in trace.events}
        # the dense candidates the BM25 hits did not bring, then the base tables' link targets: nothing else
        assert len(asked) <= 2 and sum(len(a) for a in asked) <= 2 * CFG.pool_size + 30
    links = stored.search(QUESTION, k=5)
    table = next(h for h in links if h.id == "Nonso_Anozie_1")
    assert any("Prime Suspect" in link for link in table.obj.metadata["arm_links"])


def test_a_passage_a_base_table_links_to_is_read_in_one_request_and_joins_the_pool(saved):
    small = ArmConfig.from_options({"ilp_k": 2, "pool_size": 2, "vocab_objects": 2, "base_k": 1, "expand_ks": "1,2"})
    bm25, asked = opened(saved)
    stored = Arm.from_indexes(bm25, saved[1], Chat(), small)
    held = Arm(objects(), Chat(), small, dense=saved[1], bm25=BM25Index.build(objects(), BM25Config(engine="tantivy")))
    trace = Trace()
    hits = stored.search(QUESTION, k=5, trace=trace)
    linked = {"/wiki/Prime_Suspect", "/wiki/Doctor_Who"}  # the links of the base table, Nonso_Anozie_1
    assert trace.counters["arm.linked_passages"] == 1 and len(asked[-1]) == 1 and asked[-1][0] in linked
    assert "Nonso_Anozie_1" in {h.id for h in hits} and _answer(hits) == _answer(held.search(QUESTION, k=5))


def test_awaited_over_saved_indexes_answers_as_the_sync_search(saved):
    bm25, _ = opened(saved)
    arm = Arm.from_indexes(bm25, saved[1], Chat(), CFG)

    async def both():
        return await asyncio.gather(*(arm.asearch(q, k=5) for q in QUESTIONS))

    assert [_answer(h) for h in asyncio.run(both())] == [_answer(arm.search(q, k=5)) for q in QUESTIONS]


def test_a_dense_hit_the_bm25_index_does_not_hold_is_left_out_and_said(saved, minilm_module):
    extra = Passage(
        id="only-dense", title="Prime Suspect cast", text="Robert in Prime Suspect was played by Nonso Anozie."
    )
    dense = DenseIndex.build([*objects(), extra], embedder=minilm_module, collection_name="arm-from-indexes-extra")
    bm25, _ = opened(saved)
    trace = Trace()
    hits = Arm.from_indexes(bm25, dense, Chat(), CFG).search(QUESTION, k=5, trace=trace)
    note = next(n for n in trace.events if n.kind == "unknown_candidates")
    assert note.data["ids"] == ["only-dense"] and hits and "only-dense" not in {h.id for h in hits}


def test_bad_indexes_are_typed_errors(saved, minilm_module):
    bm25, _ = opened(saved)
    with pytest.raises(InvalidInputError, match="BM25Index"):
        Arm.from_indexes(objects(), saved[1])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="search"):
        Arm.from_indexes(bm25, object())  # type: ignore[arg-type]
    empty = BM25Index.build([Passage(id="a", text="x")], BM25Config(engine="tantivy"))
    empty.delete(["a"])
    with pytest.raises(EmptyCorpusError):
        Arm.from_indexes(empty, saved[1])
