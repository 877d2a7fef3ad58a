"""Every index knows its corpus: a folder reopened for another corpus (other ids, or the same ids with other texts)
is refused with CorpusMismatchError naming both sizes and an example id, never served; the same corpus reuses it."""

from __future__ import annotations

import json

import pytest
from _lattice import KeywordLLM

from retrievekit.core.errors import CorpusMismatchError, IndexFormatError
from retrievekit.core.index.baselines import build_bm25, build_dense, corpus_fingerprint
from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.index.corpus_record import corpus_record
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.lattice.method import create_lattice
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage

A = [Passage(id=f"a{i}", text=f"apples and pears, basket {i}") for i in range(3)]
B = [Passage(id=f"b{i}", text=f"apples of another corpus, crate {i}") for i in range(5)]
A_EDITED = [Passage(id=p.id, text=p.text.replace("pears", "plums")) for p in A]


def _refused(got: pytest.ExceptionInfo[CorpusMismatchError], indexed: int, given: int, example: str) -> str:
    msg = str(got.value)
    assert (got.value.indexed, got.value.given, got.value.example) == (indexed, given, example)
    assert f"{indexed} objects, not this corpus of {given}" in msg and repr(example) in msg
    return msg


ENTRY = {"tantivy": "bm25-tantivy", "bm25s": "bm25"}
"""The cache entry's name before the corpus fingerprint, by engine (tantivy: the default)."""


@pytest.mark.parametrize("engine", list(ENTRY))
@pytest.mark.parametrize(
    ("held", "example", "how"),
    [(B, "a0", "3 of the corpus's objects are not in the index"), (A_EDITED, "a0", "3 objects have another text")],
)
def test_a_bm25_cache_entry_holding_another_corpus_is_refused(tmp_path, held, example, how, engine):
    entry = tmp_path / f"{ENTRY[engine]}-{corpus_fingerprint(A)}"
    BM25Index.build(held, BM25Config(engine=engine)).save(entry)  # valid manifest, another corpus
    options = {} if engine == "tantivy" else {"bm25_engine": engine}
    with pytest.raises(CorpusMismatchError) as got:
        build_bm25(MethodContext(corpus=A, work_dir=tmp_path, options=options))
    msg = _refused(got, len(held), len(A), example)
    assert how in msg and "remove" in msg and isinstance(got.value, IndexFormatError)


@pytest.mark.parametrize("engine", list(ENTRY))
def test_an_unchanged_corpus_reuses_the_bm25_cache_and_a_damaged_one_is_rebuilt(tmp_path, monkeypatch, engine):
    ctx = MethodContext(corpus=A, work_dir=tmp_path, options={} if engine == "tantivy" else {"bm25_engine": engine})
    first = build_bm25(ctx)
    assert first.config.engine == engine
    manifest = tmp_path / f"{ENTRY[engine]}-{corpus_fingerprint(A)}" / "manifest.json"
    assert json.loads(manifest.read_text())["corpus"] == corpus_record(A)
    built, stamp = [], manifest.stat().st_mtime_ns
    real = BM25Index.build
    monkeypatch.setattr(BM25Index, "build", classmethod(lambda cls, *a, **k: built.append(1) or real(*a, **k)))
    again = build_bm25(ctx)
    assert built == [] and manifest.stat().st_mtime_ns == stamp
    assert [h.id for h in again.search("pears", 3)] == [h.id for h in first.search("pears", 3)]
    manifest.write_text("{not json")  # damaged, not another corpus: rebuilt as before
    assert len(build_bm25(ctx)) == 3 and built == [1]


def test_the_bm25_engine_option_builds_and_caches_each_engine_apart(tmp_path):
    """``bm25_engine`` (``bm25`` and ``hybrid``): a tantivy folder in its own cache entry, reused for its corpus and
    refused for another, beside the bm25s entry; an unknown engine is refused by name."""
    from retrievekit.core.errors import InvalidInputError
    from retrievekit.core.index.baselines import hybrid_settings

    fast = build_bm25(MethodContext(corpus=A, work_dir=tmp_path, options={"bm25_engine": "tantivy"}))
    plain = build_bm25(MethodContext(corpus=A, work_dir=tmp_path, options={"bm25_engine": "bm25s"}))
    assert (fast.config.engine, plain.config.engine) == ("tantivy", "bm25s")
    entry = tmp_path / f"bm25-tantivy-{corpus_fingerprint(A)}"
    assert json.loads((entry / "manifest.json").read_text())["engine"] == "tantivy"
    again = build_bm25(MethodContext(corpus=A, work_dir=tmp_path, options={"bm25_engine": "tantivy"}))
    assert [h.id for h in again.search("pears", 3)] == [h.id for h in plain.search("pears", 3)] == ["a0", "a1", "a2"]
    BM25Index.build(B, fast.config).save(tmp_path / f"bm25-tantivy-{corpus_fingerprint(A_EDITED)}")
    with pytest.raises(CorpusMismatchError):
        build_bm25(MethodContext(corpus=A_EDITED, work_dir=tmp_path, options={"bm25_engine": "tantivy"}))
    with pytest.raises(InvalidInputError, match="bm25_engine must be one of"):
        build_bm25(MethodContext(corpus=A, options={"bm25_engine": "lucene"}))
    assert hybrid_settings({"bm25_engine": "tantivy"})[0].fusion == "rrf"  # hybrid takes the option too


def test_bm25_load_checks_the_corpus_it_is_given(tmp_path):
    BM25Index.build(A).save(tmp_path / "i")
    assert len(BM25Index.load(tmp_path / "i", corpus=list(reversed(A)))) == 3  # order is not the corpus
    with pytest.raises(CorpusMismatchError) as got:
        BM25Index.load(tmp_path / "i", corpus=[*A, Passage(id="a9", text="new")])
    assert "1 of the corpus's objects are not in the index (e.g. 'a9')" in _refused(got, 3, 4, "a9")


@pytest.mark.parametrize(("held", "example"), [(B, "a0"), (A_EDITED, "a0")])
def test_a_dense_cache_entry_is_reused_for_its_corpus_and_refused_for_another(
    tmp_path, minilm, monkeypatch, held, example
):
    build_dense(MethodContext(corpus=A, work_dir=tmp_path, embedder=minilm)).close()
    built, real = [], DenseIndex.build
    monkeypatch.setattr(DenseIndex, "build", classmethod(lambda cls, *a, **k: built.append(1) or real(*a, **k)))
    again = build_dense(MethodContext(corpus=A, work_dir=tmp_path, embedder=minilm))
    assert built == [] and len(again) == 3
    again.close()
    real(held, tmp_path / f"dense-{corpus_fingerprint(A)}", embedder=minilm, overwrite=True).close()  # valid, other
    with pytest.raises(CorpusMismatchError) as got:
        build_dense(MethodContext(corpus=A, work_dir=tmp_path, embedder=minilm))
    _refused(got, len(held), len(A), example)


def _tree(docs, tree_dir, embedder, **options):
    return create_lattice(
        docs, llm=KeywordLLM(), embedder=embedder, tree_dir=tree_dir, max_children=2, summaries="extractive",
        **options,
    )  # fmt: skip


def test_a_tree_dir_with_the_same_ids_and_other_texts_is_refused(tmp_path, minilm):
    _tree(A, tmp_path / "t", minilm)
    with pytest.raises(CorpusMismatchError) as got:
        _tree(A_EDITED, tmp_path / "t", minilm)
    msg = _refused(got, 3, 3, "a0")
    assert "3 objects have another text in the tree (e.g. 'a0')" in msg and "rebuild=True" in msg
    rebuilt = _tree(A_EDITED, tmp_path / "t", minilm, rebuild=True)  # asked for: rebuilt over the new texts
    assert sorted(rebuilt.tree.objects[i].text for i in rebuilt.tree.leaf_ids()) == sorted(p.text for p in A_EDITED)


def test_an_unchanged_tree_is_loaded_and_a_metadata_change_is_not_another_corpus(tmp_path, minilm):
    _tree(A, tmp_path / "t", minilm)
    manifest = tmp_path / "t" / "manifest.json"
    assert json.loads(manifest.read_text())["corpus"] == corpus_record(A)
    stamp = manifest.stat().st_mtime_ns
    tagged = [Passage(id=p.id, text=p.text, metadata={"seen": 2}) for p in A]  # same texts: the same corpus
    assert _tree(tagged, tmp_path / "t", minilm).tree.num_leaves == 3 and manifest.stat().st_mtime_ns == stamp
