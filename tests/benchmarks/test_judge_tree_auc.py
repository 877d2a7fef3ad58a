"""``benchmarks/judge_tree_auc.py``: which tree nodes are relevant to a query, the slates on the gold paths, and the
pooled AUC per group, over the planted three-level tree with a word-overlap judge (scripted: its scores are the
point, so the expected AUCs follow from the tree's texts); ``main`` over a real mini SciFact folder and a saved tree,
split over shards, resumed from its records, and refusing records of other settings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _judges import OverlapJudge
from _lattice import planted_tree
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact
from _paths import REPO

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.lattice import SemanticTree, TreeNode
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.types import Passage

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import judge_tree_auc as jta  # noqa: E402

GOLD = {"t1s2l0"}


def test_groups_split_summaries_by_depth_and_leave_out_the_root():
    by = jta.groups(planted_tree())
    assert sorted(by) == ["leaf", "summary@1", "summary@2"]
    assert by["summary@1"] == ["t0", "t1", "t2"] and len(by["summary@2"]) == 9 and len(by["leaf"]) == 27


def test_relevant_nodes_are_the_gold_leaves_ancestors_and_negatives_are_drawn_once():
    tree = planted_tree()
    pairs = jta.query_pairs(tree, jta.groups(tree), "q1", GOLD, negatives=4)
    ids, labels = pairs["summary@2"]
    assert ids[0] == "t1s2" and labels == [1, 0, 0, 0, 0] and "t1s2" not in ids[1:]
    assert jta.query_pairs(tree, jta.groups(tree), "q1", GOLD, negatives=4) == pairs  # seeded per query and group
    assert pairs["leaf"][0][0] == "t1s2l0" and sum(pairs["leaf"][1]) == 1
    assert pairs["siblings@1"] == (["t0", "t1", "t2"], [0, 1, 0])
    assert pairs["siblings@3"] == (["t1s2l0", "t1s2l1", "t1s2l2"], [1, 0, 0])
    assert jta.query_pairs(tree, jta.groups(tree), "q1", set(), negatives=4) == {}  # no gold: nothing to order
    assert jta.query_pairs(tree, jta.groups(tree), "q1", GOLD, 4, kinds=("leaf",)) == {"leaf": pairs["leaf"]}


def test_a_judge_that_reads_the_summaries_orders_every_slate_and_the_table_pools_queries():
    tree = planted_tree()
    pairs = jta.query_pairs(tree, jta.groups(tree), "q1", GOLD, negatives=8)
    judge = OverlapJudge()
    rows = [jta.score_pairs(judge, tree, "volcano magma lava", pairs, clip=200)]
    table = {a.group: a[1:5] for a in jta.summarize(rows)}
    assert table["siblings (all depths)"][:2] == (9, 3)
    assert [table[f"siblings@{d}"][2] for d in (1, 2, 3)] == [1.0, 1.0, 1.0] and table["summary@2"][2] == 1.0
    # pooled over depths, a relevant topic ("geology volcano eruption") ties an irrelevant subtopic ("volcano");
    # pairwise accuracy compares nodes of one slate only
    assert table["siblings (all depths)"][2:] == (17 / 18, 1.0)
    assert len(judge.judge_calls) == len(pairs)  # one call per group
    inverted = [{g: ([1 - s for s in sc], lab) for g, (sc, lab) in rows[0].items()}]
    assert {a.group: a.auc for a in jta.summarize(inverted)}["siblings@1"] == 0.0
    leaf = {a.group: a for a in jta.summarize(rows)}["leaf"]
    assert leaf.mean_relevant == 1.0 and leaf.mean_other < 0.5  # "volcano eruption magma lava" against fillers


def _fever_tree(tmp_path: Path) -> Path:
    """Two summaries over the three fever abstracts (ids 100-102 of the mini SciFact folder), saved."""
    objects = {str(100 + i): Passage(id=str(100 + i), title=t, text=x) for i, (t, x) in enumerate(FEVER_DOCS)}
    nodes = {i: TreeNode(i, f"{o.title}\n{o.text}", is_leaf=True) for i, o in objects.items()}
    nodes["n1"] = TreeNode("n1", "aspirin and statins", children=["100", "101"])
    nodes["n2"] = TreeNode("n2", "sunlight", children=["102"])
    nodes[ROOT] = TreeNode(ROOT, "root", children=["n1", "n2"])
    SemanticTree(nodes, objects).save(tmp_path / "tree")
    return tmp_path / "tree"


def test_main_records_every_claim_across_shards_resumes_and_refuses_other_settings(tmp_path, fake_judge_module, capsys):
    judge, loaded = fake_judge_module
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    args = [f"--data-dir={data}", f"--tree-dir={_fever_tree(tmp_path)}", "--judge=judges/x", "--negatives=1"]
    args.append(f"--records={tmp_path / 'r.jsonl'}")
    assert jta.main([*args, "--shard=0/2"]) == 0 and jta.main([*args, "--shard=1/2"]) == 0
    calls = len(judge.judge_calls)
    assert calls > 0 and loaded == ["judges/x", "judges/x"]
    capsys.readouterr()
    assert jta.main(args) == 0  # all three claims recorded: the table, no judge call, no judge load
    out = capsys.readouterr().out
    assert out.startswith("3 queries") and "| siblings@1 | 6 | 3 |" in out and "| summary@1 |" in out
    assert len(judge.judge_calls) == calls and len(loaded) == 2
    with pytest.raises(InvalidInputError, match="max_chars"):
        jta.main([*args, "--max-chars=50"])  # another clip is another run: never mixed into these records
