"""The judge's accuracy in a benchmark result (issue #17.1-2): ROC AUC and pairwise accuracy from the pairs it
scored, the same for a resumed or sharded run as for a single one, recorded for real judges too.

Real components: BM25, the MiniLM embedder (the embedding-cosine judge), the harness with its record files.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.judge_accuracy import judge_block, pairwise_accuracy, query_pairs, roc_auc
from retrievekit.core.eval.records import QueryRecord
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.judge.cosine import CosineJudge
from retrievekit.core.trace import JudgedBatch
from retrievekit.core.types import Passage


def _brute(pos, neg):
    pairs = [(p, n) for p in pos for n in neg]
    return sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)


def test_auc_and_pairwise_accuracy_match_counting_every_pair():
    rng = np.random.default_rng(0)
    groups = []
    for _ in range(6):
        scores = rng.integers(0, 5, size=12) / 4.0  # many ties
        labels = (rng.random(12) < 0.4).astype(int)
        groups.append((scores.tolist(), labels.tolist()))
    flat_s = [s for g in groups for s in g[0]]
    flat_y = [y for g in groups for y in g[1]]
    pos = [s for s, y in zip(flat_s, flat_y, strict=True) if y]
    neg = [s for s, y in zip(flat_s, flat_y, strict=True) if not y]
    assert roc_auc(flat_s, flat_y) == pytest.approx(_brute(pos, neg))
    within = [
        (p, n)
        for s, y in groups
        for p, n in itertools.product(
            [a for a, b in zip(s, y, strict=True) if b], [a for a, b in zip(s, y, strict=True) if not b]
        )
    ]
    acc, n_pairs = pairwise_accuracy(groups)
    assert n_pairs == len(within)
    assert acc == pytest.approx(sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in within) / len(within))
    assert roc_auc([0.3, 0.4], [1, 1]) is None and pairwise_accuracy([([0.3], [0])]) == (None, 0)


def test_query_pairs_label_a_pair_by_any_gold_ref():
    b = JudgedBatch(
        {"name": "j", "noise": None, "uses_gold_labels": False}, ({"x", "g"}, {"y"}, set()), (0.5, 0.25, 0.0)
    )
    got = query_pairs([b, b], {"g": 2, "y": 0})
    assert got["labels"] == [1, 0, 0, 1, 0, 0] and got["scores"] == [0.5, 0.25, 0.0] * 2 and len(got["judges"]) == 1
    assert query_pairs([], {"g": 1}) == {}
    block = judge_block([got], 2)
    assert block["auc"] == 1.0 and block["pairs_per_query"] == 3.0 and "warning" not in block


_TOPICS = [
    ("volcano", "lava magma eruption crater ash"),
    ("ocean", "waves tide salt current reef"),
    ("forest", "trees moss fern canopy bark"),
    ("desert", "sand dune cactus heat mirage"),
    ("glacier", "ice snow crevasse moraine cold"),
]
_DOCS = [
    Passage(id=f"{t}{i}", text=f"{t} field note {i}: {' '.join(w.split()[i % 5 :] + w.split()[: i % 5])}")
    for t, w in _TOPICS
    for i in range(6)
]
_QUERIES = [Query(f"q{t}{j}", f"{t} {w.split()[j]} note") for t, w in _TOPICS for j in range(3)]
_QRELS = {q.id: {f"{q.id[1:-1]}{i}": 1 for i in (0, 2, 5)} for q in _QUERIES}
_DS = Dataset("toy", "dev", _DOCS, _QUERIES, _QRELS)
_OPTS = {"judge_dir": "oracle:0.6", "rerank_k": 8, "first_stage": "bm25"}


def test_resumed_and_sharded_runs_measure_the_same_judge_block_as_one_run(tmp_path):
    single = run_benchmark(_DS, "judge-rerank", k=8, options=_OPTS, progress=False)
    block = single["judge"]
    assert block["scored_pairs"] == 15 * 8 and 0.5 < block["auc"] < 1.0 and block["noise"] == 0.6
    shards = tmp_path / "shards.jsonl"
    for part in ("0/3", "1/3", "2/3"):
        run_benchmark(_DS, "judge-rerank", k=8, options=_OPTS, progress=False, records=shards, shard=part)
    aggregated = run_benchmark(_DS, "judge-rerank", k=8, options=_OPTS, progress=False, records=shards)
    assert aggregated["n_resumed"] == 15 and aggregated["judge"] == block
    resumed = tmp_path / "resumed.jsonl"
    run_benchmark(_DS, "judge-rerank", k=8, options=_OPTS, progress=False, records=resumed, shard="1/2")
    rest = run_benchmark(_DS, "judge-rerank", k=8, options=_OPTS, progress=False, records=resumed)
    assert rest["n_resumed"] == 7 and rest["judge"] == block
    line = json.loads(resumed.read_text().splitlines()[1])
    assert set(line["judged"]) == {"judges", "scores", "labels", "gold_seen", "gold_seen_returned"}
    assert len(line["judged"]["scores"]) == 8


def test_gold_seen_counts_distinct_gold_refs_and_what_the_method_returned():
    b = JudgedBatch(
        {"name": "j", "noise": None, "uses_gold_labels": False}, ({"x", "g"}, {"h"}, {"g"}), (0.9, 0.1, 0.8)
    )
    got = query_pairs(iter([b, b]), {"g": 1, "h": 2, "y": 0}, returned=["g", "y"])  # a one-shot iterator is fine
    assert (got["gold_seen"], got["gold_seen_returned"]) == (2, 1) and got["labels"] == [1, 1, 1] * 2
    assert "gold_seen" not in query_pairs([b], {"g": 1})  # only when the returned ids are given
    old = {"judges": got["judges"], "scores": [0.5], "labels": [1]}  # a record written before the count existed
    block = judge_block([got, old, {**got, "gold_seen": 0, "gold_seen_returned": 0}], 3)
    assert (block["gold_seen"], block["gold_seen_returned"], block["gold_seen_returned_share"]) == (2, 1, 0.5)
    assert "gold_seen" not in judge_block([old], 1)


def test_the_exact_oracle_flat_rerank_returns_every_gold_it_saw_unless_k_cuts_it():
    full = run_benchmark(_DS, "judge-rerank", k=8, options={**_OPTS, "judge_dir": "oracle:0"}, progress=False)
    assert full["judge"]["gold_seen"] > len(_QUERIES) and full["judge"]["gold_seen_returned_share"] == 1.0
    top1 = run_benchmark(_DS, "judge-rerank", k=1, options={**_OPTS, "judge_dir": "oracle:0"}, progress=False)
    # the same candidates are judged; a cut to one hit returns one gold object per query that saw any
    assert top1["judge"]["gold_seen"] == full["judge"]["gold_seen"]
    assert top1["judge"]["gold_seen_returned"] == len(_QUERIES) == top1["metrics"]["hit@1"] * len(_QUERIES)


def test_a_real_judge_records_its_auc(minilm):
    cosine = run_benchmark(
        _DS, "judge-rerank", k=8, options={**_OPTS, "judge_dir": "cosine"}, progress=False, keep_run=True
    )
    block = cosine["judge"]
    assert block["name"] == "cosine" and not block["uses_gold_labels"] and "warning" not in block
    assert block["scored_pairs"] == 15 * 8 and 0.5 < block["auc"] <= 1.0 and 0.0 <= block["pairwise_accuracy"] <= 1.0
    assert all(rec["judged"]["judges"][0]["name"] == "cosine" for rec in cosine["per_query"])
    # any RelevanceJudge given as llm= (here to the flat llm-rerank, 8 candidates in 2 slates)
    as_llm = run_benchmark(
        _DS,
        "llm-rerank",
        k=8,
        llm=CosineJudge(minilm),
        options={"candidates": 8, "calls": 2, "first_stage": "bm25"},
        progress=False,
    )
    assert as_llm["judge"]["name"] == "cosine" and as_llm["judge"]["scored_pairs"] == 15 * 8
    assert as_llm["judge"]["auc"] == pytest.approx(block["auc"], abs=0.05)  # the same judge on the same BM25 top 8


def test_a_run_without_a_judge_has_no_judge_block_and_old_records_load():
    assert "judge" not in run_benchmark(_DS, "bm25", k=8, progress=False)
    old = {"qid": "q", "ids": ["a"], "scores": [1.0], "seconds": 0.1}  # a record written before `judged` existed
    assert QueryRecord.from_dict(old).judged == {}
