"""LATTICE core: calibration, slate scoring, beam search, anchors, builders, persistence and bad input.

The scripted LLM (``KeywordLLM`` in tests/_lattice.py) answers from the prompt text (keyword overlap with the query):
the scripted reply is the point of these tests. Embeddings are the real all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _corpora import FRUIT
from _lattice import Crash, KeywordLLM, crashing_keyword_llm, planted_tree

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.checksums import manifest_check
from retrievekit.core.lattice import (
    FlatLLMReranker,
    Lattice,
    LatticeConfig,
    SemanticTree,
    SlateScorer,
    TreeBuildConfig,
    build_bottom_up,
    build_top_down,
    create_lattice,
    draw_search,
    fit_latent_scores,
    insert_documents,
)
from retrievekit.core.lattice.clustering import balanced_groups
from retrievekit.core.lattice.search import sample_anchors
from retrievekit.core.lattice.top_down import repair_partition
from retrievekit.core.lattice.tree import FORMAT_VERSION, ROOT
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage


# ---------------------------------------------------------------------- calibration
def test_calibration_recovers_planted_latent_scores_from_biased_slates():
    rng = np.random.default_rng(0)
    theta = rng.uniform(0, 1, 40)
    slates, naive = [], {i: [] for i in range(40)}
    for _ in range(60):
        ids = rng.choice(40, size=8, replace=False)
        bias = rng.uniform(-0.3, 0.3)
        obs = 0.7 * theta[ids] + bias + rng.normal(0, 0.01, 8)
        slates.append(([f"n{i}" for i in ids], obs.tolist()))
        for i, o in zip(ids, obs, strict=True):
            naive[int(i)].append(float(o))
    cal = fit_latent_scores(slates)
    seen = [i for i in range(40) if naive[i]]
    est = np.array([cal.scores[f"n{i}"] for i in seen])
    raw_mean = np.array([np.mean(naive[i]) for i in seen])
    corr = np.corrcoef(est, theta[seen])[0, 1]
    assert corr > 0.99
    assert corr > np.corrcoef(raw_mean, theta[seen])[0, 1]  # calibration beats averaging raw scores
    assert max(cal.scores.values()) == pytest.approx(1.0)
    assert len(cal.biases) == 60


def test_calibration_is_the_weighted_least_squares_solution():
    """The sparse elimination must give what a dense least-squares solve of the same rows gives: one row per
    observation (the node's score times tau plus the slate's bias), a ridge row per bias, weights as documented."""
    rng = np.random.default_rng(1)
    tau, floor, ridge = 5.0, 0.1, 0.01
    for _ in range(30):
        n_nodes, n_slates = int(rng.integers(2, 60)), int(rng.integers(1, 25))
        slates = [
            (
                [f"n{i}" for i in rng.choice(n_nodes, size=min(n_nodes, int(rng.integers(1, 12))), replace=False)],
                rng.random(12).tolist(),
            )
            for _ in range(n_slates)
        ]
        slates = [(ids, scores[: len(ids)]) for ids, scores in slates]
        ids = sorted({n for s, _ in slates for n in s})
        col = {n: i for i, n in enumerate(ids)}
        a = np.zeros((sum(len(s) for s, _ in slates) + n_slates, len(ids) + n_slates))
        y = np.zeros(a.shape[0])
        row = 0
        for si, (names, scores) in enumerate(slates):
            for n, sc in zip(names, scores, strict=True):
                w = np.sqrt(max(1 / (1 + np.exp(-(sc - 0.5))), floor))
                a[row, col[n]], a[row, len(ids) + si], y[row] = tau * w, w, tau * sc * w
                row += 1
        for si in range(n_slates):
            a[row + si, len(ids) + si] = np.sqrt(ridge)
        want = np.linalg.lstsq(a, y, rcond=None)[0]
        cal = fit_latent_scores(slates, tau=tau, weight_floor=floor, bias_ridge=ridge)
        assert np.allclose([cal.raw[n] for n in ids], want[: len(ids)], atol=1e-9)
        assert np.allclose(np.asarray(cal.biases) * tau, want[len(ids) :], atol=1e-9)


# ---------------------------------------------------------------------- scoring
def test_invalid_json_reply_is_retried_and_traced():
    llm = KeywordLLM(replies=["this is not json", "{'scores': [80, 20,],}"])
    trace = Trace()
    res = SlateScorer(llm, LatticeConfig(shuffle_slates=False)).score("apples", ["apples", "pears"], trace=trace)
    assert res.scores == [0.8, 0.2] and res.source == "llm" and res.attempts == 2
    kinds = [e.kind for e in trace.events]
    assert "json_retry" in kinds and "json_repair" in kinds and trace.llm_calls == 2


def test_total_failure_falls_back_to_embedding_scores(minilm):
    from retrievekit.core.lattice.scoring import cosine_fallback

    llm = KeywordLLM(replies=["nope"] * 3)
    trace = Trace()
    scorer = SlateScorer(llm, fallback=cosine_fallback(minilm.embed_query, minilm.embed_documents))
    res = scorer.score("bananas potassium", ["Bananas are rich in potassium.", "Rust is a language."], trace=trace)
    assert res.source == "fallback" and res.scores[0] > res.scores[1]
    assert trace.counters["lattice.fallback_slates"] == 1 and any(e.kind == "fallback" for e in trace.events)


def test_no_scores_and_out_of_range_ids_are_handled():
    cfg = LatticeConfig(reply_format="pairs", shuffle_slates=False)  # the reply's ids are the input order
    trace = Trace()
    empty = SlateScorer(KeywordLLM(replies=['{"scores": []}']), cfg).score("q", ["a", "b"], trace=trace)
    assert empty.source == "fallback" and empty.scores == [0.0, 0.0]  # no fallback scorer: omitted score
    trace = Trace()
    reply = '{"scores": [[1, 90], [7, 50], [0, 10], [1, 20], [2, 300]]}'
    res = SlateScorer(KeywordLLM(replies=[reply]), cfg).score("q", ["a", "b", "c"], trace=trace)
    assert res.scores == [0.9, 1.0, 0.0]
    assert (res.invalid_ids, res.duplicate_ids, res.clipped, res.omitted) == (2, 1, 1, 1)
    assert trace.counters["lattice.invalid_ids"] == 2 and trace.counters["lattice.omitted"] == 1


# ---------------------------------------------------------------------- search on a planted tree
def test_beam_search_visits_the_planted_best_path():
    tree = planted_tree()
    lat = Lattice(tree, KeywordLLM(), LatticeConfig(beam_size=1, num_iters=3))
    trace = Trace()
    hits = lat.search("volcano eruption magma lava", k=3, trace=trace)
    assert lat.last_state.expanded == ["root", "t1", "t1s2"]
    assert hits[0].id == "t1s2l0"
    explored = [e for e in trace.events if e.kind == "lattice.explored"][0]
    assert explored.data["expanded"] == ["root", "t1", "t1s2"]
    assert trace.llm_calls == 3 and trace.counters["lattice.slates"] == 3


def test_anchors_are_added_as_specified():
    tree = planted_tree()
    llm = KeywordLLM()
    lat = Lattice(tree, llm, LatticeConfig(beam_size=2, num_iters=4, num_leaf_anchors=2, anchor_sampling="top"))
    lat.search("volcano eruption magma lava", k=5)
    st = lat.last_state
    assert st.anchors["root"] == []  # the root has no same-depth node
    for node, anchors in st.anchors.items():
        if node == ROOT:
            continue
        children = tree.children(node)
        if tree.is_leaf(children[0]):
            # leaf slate: min(l, leaves predicted before it) anchors, none of them its own children
            assert len(anchors) <= 2 and not set(anchors) & set(children)
            assert all(tree.is_leaf(a) for a in anchors)
        else:
            assert len(anchors) == 1 and tree.depth(anchors[0]) == tree.depth(node)
    leaf_slates = [a for n, a in st.anchors.items() if n != ROOT and tree.is_leaf(tree.children(n)[0])]
    assert leaf_slates[0] == [] and any(len(a) == 2 for a in leaf_slates[1:])
    assert llm.slate_sizes == [len(ids) for _, ids, _, _ in st.slates]


def test_anchor_sampling_modes_and_calibrated_paths():
    scores = {f"l{i}": i / 10 for i in range(10)}
    rng = np.random.default_rng(0)
    for mode in ("gmm", "softmax", "top"):
        got = sample_anchors(scores, 3, mode=mode, rng=rng)
        assert len(got) == 3 and len(set(got)) == 3
    lat = Lattice(planted_tree(), KeywordLLM(), LatticeConfig(path_scores="calibrated", num_iters=5))
    assert lat.search("volcano eruption magma lava", k=1)[0].id == "t1s2l0"


def test_excluded_ids_are_masked():
    for mode in ("hide", "reference"):
        lat = Lattice(planted_tree(), KeywordLLM(), LatticeConfig(num_iters=6, mask_mode=mode))
        hits = lat.search("volcano eruption magma lava", k=20, excluded_ids={"t1s2l0"})
        assert "t1s2l0" not in {h.id for h in hits} and hits


# ---------------------------------------------------------------------- builders
def test_bottom_up_build_persist_reload_and_stable_ids(tmp_path, minilm):
    docs = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} variant {i}", title=FRUIT[i % 6].title) for i in range(14)]
    cfg = TreeBuildConfig(max_children=3)
    tree = build_bottom_up(docs, KeywordLLM(), minilm, cfg)
    assert sorted(tree.leaf_ids()) == sorted(d.id for d in docs) and tree.max_branching <= 3 and tree.height >= 3
    again = build_bottom_up(docs, KeywordLLM(), minilm, cfg)
    assert sorted(again.nodes) == sorted(tree.nodes)  # stable ids
    tree.save(tmp_path / "t")
    loaded = SemanticTree.load(tmp_path / "t")
    assert loaded.stats() == tree.stats() and loaded.text(loaded.children(ROOT)[0]) == tree.text(tree.children(ROOT)[0])
    g = loaded.to_networkx()
    assert g.number_of_nodes() == len(tree.nodes) and g.number_of_edges() == len(tree.nodes) - 1
    titled = build_bottom_up(docs, KeywordLLM(), minilm, TreeBuildConfig(max_children=3, append_child_titles=True))
    inner = [n for n in titled.nodes.values() if not n.is_leaf and n.id != ROOT]
    assert all(n.text.endswith("]") and "[" in n.text for n in inner)
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["format"] == "retrievekit.lattice_tree" and manifest["meta"]["builder"] == "bottom_up"


def test_tree_from_another_version_or_corrupt_is_refused(tmp_path):
    tree = SemanticTree.flat(FRUIT)
    tree.save(tmp_path / "t")
    mpath = tmp_path / "t" / "manifest.json"
    data = json.loads(mpath.read_text())
    data["format_version"] = FORMAT_VERSION + 1
    data["manifest_check"] = manifest_check(data)  # as a newer retrievekit would seal it
    mpath.write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match=f"version {FORMAT_VERSION + 1}"):
        SemanticTree.load(tmp_path / "t")
    data["format_version"] = 1
    data["format"] = "retrievekit.bm25"
    mpath.write_text(json.dumps(data))
    with pytest.raises(IndexFormatError):
        SemanticTree.load(tmp_path / "t")
    data["format"] = "retrievekit.lattice_tree"
    mpath.write_text(json.dumps(data))
    (tmp_path / "t" / "nodes.jsonl").write_text(
        '{"id": "root", "text": "r", "children": ["zz"], "depth": 0, "leaf": false}\n'
    )
    with pytest.raises(IndexFormatError):
        SemanticTree.load(tmp_path / "t")


def test_resumable_build_loses_no_finished_summary(tmp_path, minilm):
    docs = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} number {i}") for i in range(12)]
    cfg = TreeBuildConfig(max_children=3, max_concurrency=1)
    full = KeywordLLM()
    build_bottom_up(docs, full, minilm, cfg)
    with pytest.raises(Crash):
        build_bottom_up(docs, crashing_keyword_llm(3), minilm, cfg, build_dir=tmp_path / "b")
    assert len((tmp_path / "b" / "journal.jsonl").read_text().splitlines()) == 3
    resumed = KeywordLLM()
    tree = build_bottom_up(docs, resumed, minilm, cfg, build_dir=tmp_path / "b")
    assert resumed.calls == full.calls - 3 and tree.meta["journal_reused"] == 3


def test_top_down_every_leaf_exactly_once_and_repairs(minilm):
    docs = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} item {i}") for i in range(11)]
    trace = Trace()
    tree = build_top_down(docs, KeywordLLM(), minilm, TreeBuildConfig(max_children=3), trace=trace)
    leaves = [lid for n in tree.nodes.values() for lid in n.children if tree.is_leaf(lid)]
    assert sorted(leaves) == sorted(d.id for d in docs) and tree.max_branching <= 3
    fixed, counts = repair_partition([("A", [1, 1, 5]), ("B", [])], 3)
    assert sorted(i for _, its in fixed for i in its) == [1, 2, 3]
    assert counts == {"out_of_range": 1, "duplicates": 1, "missing": 2, "empty_topics": 1}
    bad = KeywordLLM(
        replies=[json.dumps({"summaries": ["x", "y", "z"]})] * 11 + ['{"topics": [{"title": "all", "items": [1]}]}']
    )
    tree2 = build_top_down(docs, bad, minilm, TreeBuildConfig(max_children=3, max_concurrency=1))
    assert tree2.num_leaves == 11 and tree2.max_branching <= 3 and tree2.meta.get("embedding_partitions", 0) >= 1


def test_insert_documents_routes_and_refreshes(minilm):
    docs = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} v{i}") for i in range(9)]
    llm = KeywordLLM()
    tree = build_bottom_up(docs, llm, minilm, TreeBuildConfig(max_children=3))
    before = set(tree.nodes)
    new = [Passage(id=f"new{i}", text=f"Bananas are yellow fruits, batch {i}.") for i in range(4)]
    report = insert_documents(tree, new, llm, minilm, TreeBuildConfig(max_children=3))
    assert report["inserted"] == 4 and report["refreshed_summaries"] >= 1
    assert set(tree.leaf_ids()) == {d.id for d in docs + new} and tree.max_branching <= 3
    assert before <= set(tree.nodes)  # existing ids are stable
    with pytest.raises(InvalidInputError, match="already in the tree"):
        insert_documents(tree, [new[0]], llm, minilm)


def test_single_document_duplicates_and_reserved_ids(minilm):
    one = create_lattice([Passage(id="only", text="Volcano magma.")], llm=KeywordLLM(), embedder=minilm)
    assert [h.id for h in one.search("volcano magma", k=5)] == ["only"]
    dups = [Passage(id=f"d{i}", text="The same text about volcanoes.") for i in range(9)]
    tree = build_bottom_up(dups, KeywordLLM(), minilm, TreeBuildConfig(max_children=3))
    assert tree.num_leaves == 9 and tree.max_branching <= 3
    hits = Lattice(tree, KeywordLLM(), LatticeConfig(num_iters=10)).search("volcanoes", k=9)
    assert len(hits) == 9
    with pytest.raises(InvalidInputError, match="duplicate"):
        build_bottom_up([Passage(id="a", text="x"), Passage(id="a", text="y")], KeywordLLM(), minilm)
    with pytest.raises(InvalidInputError, match="reserved"):
        build_bottom_up([Passage(id="root", text="x")], KeywordLLM(), minilm)


def test_create_lattice_tree_dir_reuse_and_mismatch(tmp_path, minilm):
    docs = list(FRUIT) + [Passage(id=f"x{i}", text=f"Rivers and mountains {i}.") for i in range(6)]
    llm = KeywordLLM()
    lat = create_lattice(docs, llm=llm, embedder=minilm, tree_dir=tmp_path / "tree", max_children=4, num_iters=4)
    calls = llm.calls
    assert (tmp_path / "tree" / "manifest.json").is_file() and calls > 0
    again = create_lattice(docs, llm=llm, embedder=minilm, tree_dir=tmp_path / "tree")
    assert llm.calls == calls and again.tree.stats() == lat.tree.stats()
    with pytest.raises(IndexFormatError, match="not this corpus"):
        create_lattice(docs[:3], llm=llm, embedder=minilm, tree_dir=tmp_path / "tree")
    with pytest.raises(InvalidInputError, match="unknown LATTICE option"):
        create_lattice(docs, llm=llm, embedder=minilm, nonsense=1)


def test_draw_and_flat_rerank_budget(tmp_path):
    lat = Lattice(planted_tree(), KeywordLLM(), LatticeConfig(num_iters=3))
    hits = lat.search("volcano eruption magma lava", k=3)
    png = draw_search(lat.tree, lat.last_state, tmp_path / "s.png", top=[h.id for h in hits], gold={"t1s2l0"})
    assert png.read_bytes()[:4] == b"\x89PNG"
    from retrievekit.core.types import ScoredHit

    class InOrder:  # a first stage that returns the corpus in order
        def search(self, query, k=10, *, trace=None):
            return [ScoredHit(obj=o, score=-i, rank=i) for i, o in enumerate(FRUIT[:k])]

    llm = KeywordLLM()
    rr = FlatLLMReranker(InOrder(), llm, candidates=6, calls=2)
    trace = Trace()
    out = rr.search("programming language", k=6, trace=trace)
    assert trace.llm_calls == 2 and llm.slate_sizes == [3, 3] and {out[0].id, out[1].id} == {"python", "rust"}


def test_balanced_groups_never_exceed_m():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 1, (50, 4)), np.zeros((20, 4))])
    groups = balanced_groups(x, 7, seed=3)
    assert sorted(i for g in groups for i in g) == list(range(70)) and max(len(g) for g in groups) <= 7
    assert balanced_groups(x, 7, seed=3) == groups


def test_cli_tree_dir_option_and_registry():
    from retrievekit.core.cli import build_parser
    from retrievekit.core.registry import available_methods

    assert {"lattice", "llm-rerank"} <= set(available_methods())
    args = build_parser().parse_args(
        [
            "bench",
            "--dataset",
            "scifact",
            "--data-dir",
            ".",
            "--method",
            "lattice",
            "--out",
            "o.json",
            "--tree-dir",
            "t",
        ]
    )
    assert args.tree_dir == "t"
    assert Path(args.tree_dir).name == "t"


def test_metadata_first_layer_groups_by_source_document(minilm):
    docs = [
        Passage(id=f"p{i}", text=f"{FRUIT[i // 4].text} part {i}", metadata={"document_id": f"doc{i // 4}"})
        for i in range(12)
    ]
    tree = build_bottom_up(docs, KeywordLLM(), minilm, TreeBuildConfig(max_children=3, first_layer="metadata"))
    first = [n for n in tree.nodes.values() if not n.is_leaf and all(tree.is_leaf(c) for c in n.children)]
    for node in first:  # each first-layer group holds passages of one source document only
        assert len({tree.objects[c].metadata["document_id"] for c in node.children}) == 1
    assert sorted(tree.leaf_ids()) == sorted(d.id for d in docs) and tree.max_branching <= 3


def test_top_down_build_resumes_from_its_journal(tmp_path, minilm):
    docs = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} item {i}") for i in range(8)]
    cfg = TreeBuildConfig(max_children=3)
    first = KeywordLLM()
    tree = build_top_down(docs, first, minilm, cfg, build_dir=tmp_path / "b")
    again = KeywordLLM()
    tree2 = build_top_down(docs, again, minilm, cfg, build_dir=tmp_path / "b")
    assert first.calls > 0 and again.calls == 0 and sorted(tree2.nodes) == sorted(tree.nodes)
