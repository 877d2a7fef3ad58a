"""BM25's default engine is tantivy (issues #61 and #63): one default for every method, the environment variable
that names another for a process, the settings only bm25s takes, and folders that keep the engine they were built on
(a version-1 folder written before its manifest named an engine, a living index built on bm25s)."""

from __future__ import annotations

import json

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.baselines import build_bm25, build_hybrid
from retrievekit.core.index.bm25 import ENGINE_ENV, BM25Config, BM25Index
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.store import write_manifest
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage

TEXTS = ["green tea leaves", "black coffee beans", "tea with milk and honey", "herbal tea", "coffee with milk"]
DOCS = [Passage(id=f"d{i}", text=t) for i, t in enumerate(TEXTS)]
QUERIES = ["tea", "coffee beans", "milk tea", "honey"]


def _answers(index):
    return {q: [(h.id, round(h.score, 5)) for h in index.search(q, k=5)] for q in QUERIES}


def test_the_default_is_tantivy_for_every_method_and_the_environment_names_another(monkeypatch, minilm):
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    assert BM25Config().engine == "tantivy" and BM25Index.build(DOCS).config.engine == "tantivy"
    assert build_bm25(MethodContext(corpus=DOCS)).config.engine == "tantivy"
    with build_hybrid(MethodContext(corpus=DOCS, embedder=minilm)) as hybrid:
        assert hybrid.retrievers[1].config.engine == "tantivy"
    monkeypatch.setenv(ENGINE_ENV, "bm25s")
    assert BM25Index.build(DOCS).config.engine == "bm25s"
    assert build_bm25(MethodContext(corpus=DOCS)).config.engine == "bm25s"
    assert BM25Index.build(DOCS, BM25Config(engine="tantivy")).config.engine == "tantivy"  # named: kept
    monkeypatch.setenv(ENGINE_ENV, " ")
    assert BM25Config().engine == "tantivy"
    monkeypatch.setenv(ENGINE_ENV, "lucene")
    for way_in in (BM25Index.build, lambda docs: build_bm25(MethodContext(corpus=docs))):
        with pytest.raises(InvalidInputError, match=f"{ENGINE_ENV} must name one of .*, not 'lucene'"):
            way_in(DOCS)
    for engine in ("tantivy", "bm25s"):  # a config that names its engine does not read the variable
        assert BM25Index.build(DOCS, BM25Config(engine=engine)).search("tea", k=1)
        assert build_bm25(MethodContext(corpus=DOCS, options={"bm25_engine": engine})).config.engine == engine


def test_both_engines_answer_alike_and_a_setting_only_bm25s_takes_names_it():
    assert _answers(BM25Index.build(DOCS)) == _answers(BM25Index.build(DOCS, BM25Config(engine="bm25s")))
    with pytest.raises(InvalidInputError, match="BM25Config.k1=1.5 is not available with engine='tantivy'.*'bm25s'"):
        BM25Index.build(DOCS, BM25Config(k1=1.5))
    assert BM25Index.build(DOCS, BM25Config(k1=1.5, engine="bm25s")).search("tea", k=1)


def test_a_folder_written_before_its_manifest_named_an_engine_opens_on_bm25s(tmp_path):
    folder = tmp_path / "old"
    BM25Index.build(DOCS, BM25Config(engine="bm25s")).save(folder)
    fields = json.loads((folder / "manifest.json").read_text())
    del fields["config"]["engine"]  # as every bm25s folder was written before the engine was a setting
    write_manifest(folder, "bm25", 1, {k: fields[k] for k in ("n_objects", "config", "corpus")})
    old = BM25Index.load(folder)
    assert old.config.engine == "bm25s" and old.folder is None  # not taken for a tantivy index
    assert _answers(old) == _answers(BM25Index.build(DOCS, BM25Config(engine="bm25s")))


def test_a_living_index_keeps_the_engine_its_folder_was_built_on(tmp_path, monkeypatch):
    monkeypatch.setenv(ENGINE_ENV, "bm25s")  # a folder made while bm25s was the default
    with LiveIndex.create("bm25", path=tmp_path / "live") as idx:
        idx.upsert(DOCS[:3])
    monkeypatch.delenv(ENGINE_ENV)
    with LiveIndex.open(tmp_path / "live") as idx:
        idx.upsert(DOCS[3:])
        assert "bm25_rebuilt" in [e.kind for e in idx.last_change.events]  # bm25s: built again, as before
        idx.delete(["d0"])
        want = _answers(BM25Index.build(DOCS[1:], BM25Config(engine="bm25s")))
        assert _answers(idx) == want
    with LiveIndex.open(tmp_path / "live") as again:
        assert _answers(again) == want
    with LiveIndex.create("bm25", path=tmp_path / "new") as fresh:  # a new folder takes today's default
        fresh.upsert(DOCS)
        fresh.delete(["d0"])
        assert "bm25_rebuilt" not in [e.kind for e in fresh.last_change.events]  # tantivy: changed in place
        assert json.loads((tmp_path / "new" / "bm25" / "manifest.json").read_text())["engine"] == "tantivy"
