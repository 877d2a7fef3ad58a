"""LATTICE's LLM-free summaries (``summaries="extractive"``): built with no LLM, recorded, searched with one."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _corpora import FRUIT
from _lattice import KeywordLLM, crashing_keyword_llm

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.lattice import TreeBuildConfig
from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.build import embed_texts
from retrievekit.core.lattice.method import build_tree, create_lattice
from retrievekit.core.lattice.summarize import centroid_summary, object_short_text
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.types import Passage

DOCS = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} Variant {i}.", title=FRUIT[i % 6].title) for i in range(14)]


def test_extractive_build_calls_no_llm_and_is_recorded_in_the_manifest(tmp_path, minilm):
    cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    tree = build_bottom_up(DOCS, crashing_keyword_llm(0), minilm, cfg)  # any LLM call would crash the build
    assert sorted(tree.leaf_ids()) == sorted(d.id for d in DOCS) and tree.max_branching <= 3 and tree.height >= 3
    assert tree.meta["llm_calls"] == 0 and tree.meta["summaries"] == len(tree.nodes) - len(DOCS) - 1
    assert "extractive_summaries" not in tree.meta and "degraded" not in tree.meta  # a choice, not a fallback
    tree.save(tmp_path / "t")
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["meta"]["config"]["summaries"] == "extractive"
    assert build_bottom_up(DOCS, None, minilm, cfg).stats() == tree.stats()  # no LLM needed at all


def test_each_summary_leads_with_the_child_nearest_the_centroid(minilm):
    tree = build_bottom_up(DOCS, None, minilm, TreeBuildConfig(max_children=3, summaries="extractive"))
    short = {d.id: object_short_text(d, 100) for d in DOCS}
    level_one = [n for n in tree.nodes.values() if n.children and all(c in short for c in n.children)]
    assert level_one
    for node in level_one:
        x = embed_texts(minilm, [tree.objects[c].index_text() for c in node.children])
        centre = x.mean(0) / np.linalg.norm(x.mean(0))
        nearest = node.children[int(np.argmax(np.round(x @ centre, 9)))]
        assert node.text.startswith(short[nearest][:40]) and len(node.text) <= 160
    assert all(0 < len(n.text) <= 160 for n in tree.nodes.values() if not n.is_leaf and n.id != ROOT)


def test_an_extractive_tree_is_searched_with_an_llm(minilm):
    llm = KeywordLLM()
    lat = create_lattice(list(FRUIT), llm=llm, embedder=minilm, max_children=2, summaries="extractive", beam_size=1)
    assert lat.tree.meta["llm_calls"] == 0 and llm.calls == 0
    hits = lat.search("programming language for data science", k=2)
    assert llm.calls > 0 and hits[0].id == "python"


def test_the_option_is_checked_and_the_top_down_build_refuses_it(minilm):
    assert TreeBuildConfig.from_options({"summaries": "extractive"}).summaries == "extractive"
    with pytest.raises(InvalidInputError, match="summaries must be llm\\|extractive"):
        TreeBuildConfig.from_options({"summaries": "tfidf"})
    with pytest.raises(InvalidInputError, match="bottom-up only"):
        build_tree(DOCS, KeywordLLM(), minilm, TreeBuildConfig(summaries="extractive"), builder="top_down")


def test_centroid_summary_is_cut_at_a_word_and_never_empty():
    vecs = np.eye(3)
    assert centroid_summary(["alpha beta gamma", "delta", "epsilon"], vecs, 12) == "alpha beta"
    assert centroid_summary(["", " "], np.ones((2, 2)), 50) == "misc"


def test_the_exact_oracle_finds_every_gold_leaf_of_a_tree_built_without_an_llm(tmp_path, minilm):
    from retrievekit.core.eval.datasets import Dataset, Query
    from retrievekit.core.eval.runner import run_benchmark

    queries = [Query(f"q{i}", f"which passage is variant {i}?") for i in range(0, 14, 3)]
    qrels = {q.id: {f"d{q.id[1:]}": 1} for q in queries}
    ds = Dataset("fruit", "dev", DOCS, queries, qrels)
    options = {"judge_dir": "oracle", "tree_dir": str(tmp_path / "t"), "summaries": "extractive", "max_children": 3}
    result = run_benchmark(ds, "lattice", k=10, options=options, progress=False)
    assert result["metrics"]["recall@10"] == 1.0 and result["judge"]["auc"] == 1.0
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["meta"]["config"]["summaries"] == "extractive" and manifest["meta"]["llm_calls"] == 0
