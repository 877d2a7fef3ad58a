"""LATTICE with the gold-label oracle (issue #17.1): an internal node stands for its subtree's leaves, so the exact
oracle walks straight to the gold leaf, wherever the text would lead; the harness reports its AUC and the warning.

Real components: the planted tree (tests/_lattice.py), the LATTICE search, the oracle, the harness.
"""

from __future__ import annotations

from _lattice import planted_tree

from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.lattice import Lattice, LatticeConfig
from retrievekit.core.trace import Trace

QUERY = "volcano eruption magma lava"
GOLD = "t2s0l1"  # a "sports"/"weather" leaf: the text points to t1s2l0, the gold labels do not


def test_the_exact_oracle_reaches_the_gold_leaf_the_text_does_not_point_to():
    tree = planted_tree()
    lat = Lattice(tree, OracleJudge({QUERY: [GOLD]}), LatticeConfig(beam_size=1, num_iters=3))
    trace = Trace()
    hits = lat.search(QUERY, k=3, trace=trace)
    assert lat.last_state.expanded == ["root", "t2", "t2s0"]
    assert hits[0].id == GOLD
    first = trace.judged[0]  # the root slate: each topic stands for its nine leaves
    assert first.refs == tuple(tree.leaf_set(t) for t in ("t0", "t1", "t2")) and first.scores == (0.0, 0.0, 1.0)
    assert len(first.refs[2]) == 9 and GOLD in first.refs[2]
    assert len(trace.judged) == trace.counters["lattice.slates"] == 3


def test_lattice_with_oracle_through_the_harness(tmp_path, minilm):
    tree = planted_tree()
    tree.save(tmp_path / "tree")
    corpus = [tree.objects[i] for i in tree.leaf_ids()]
    ds = Dataset("planted", "dev", corpus, [Query("q1", QUERY)], {"q1": {GOLD: 1}})
    options = {"judge_dir": "oracle", "tree_dir": str(tmp_path / "tree"), "beam_size": 1, "num_iters": 3}
    result = run_benchmark(ds, "lattice", k=3, options=options, progress=False, keep_run=True)
    assert result["run"]["q1"][0] == GOLD and result["metrics"]["hit@1"] == 1.0
    judge = result["judge"]
    assert judge["auc"] == 1.0 and judge["uses_gold_labels"] and judge["warning"].startswith("diagnostic run")
    # every judged item is a pair (anchors included), and each slate on the path holds a node over the gold leaf
    assert judge["scored_pairs"] == result["counters_per_query"]["judge.candidates"] == judge["pairs_per_query"]
    assert judge["positives"] >= 3
