"""``retrievekit train-judge``: registration, arguments, and pair collection from the real SciFact train qrels."""

from __future__ import annotations

import argparse

from retrievekit.core.cli import build_parser, main
from retrievekit.core.cli.train_judge import add_arguments, collect_pairs
from retrievekit.core.registry import available_methods


def test_train_judge_is_registered(capsys):
    assert main(["train-judge", "--help"]) == 0
    assert "--synthesize" in capsys.readouterr().out
    assert "judge-rerank" in available_methods()
    args = build_parser().parse_args(
        ["train-judge", "--dataset", "scifact", "--data-dir", "d", "--output-dir", "o", "--max-pairs", "5"]
    )
    assert (args.split, args.negatives, args.miner, args.max_pairs, args.base_model) == (
        "train",
        3,
        "bm25",
        5,
        "smollm2",
    )


def test_collect_pairs_from_scifact_train_qrels(data_dir):
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(
        [
            "--dataset",
            "scifact",
            "--data-dir",
            str(data_dir),
            "--output-dir",
            "o",
            "--max-pairs",
            "6",
            "--negatives",
            "2",
        ]
    )
    pairs, corpus, info = collect_pairs(args)
    pos = [x for x in pairs if x.label == 1]
    neg = [x for x in pairs if x.label == 0]
    assert len(pos) == 6 and info["positives"] == 6 and len(corpus) > 5000
    assert len(neg) == 2 * len({x.query_id for x in pos})
    from retrievekit.core.eval.datasets import load_dataset

    qrels = load_dataset("scifact", data_dir, split="train").qrels
    assert all(x.passage_id not in qrels[x.query_id] for x in neg)  # no labelled positive becomes a negative
    assert pairs == collect_pairs(args)[0]  # deterministic
