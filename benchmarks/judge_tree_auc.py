"""A judge's ROC AUC on a LATTICE tree's summaries, depth by depth, and on its leaves: the texts LATTICE shows it.

For every query, at every depth of the tree: the summaries (internal nodes) whose subtree holds a gold object are
relevant, and up to ``--negatives`` other summaries of that depth, drawn with a seed fixed per query and depth, are
not; the leaves alike (the gold objects against drawn others). ``siblings@D`` are the decisions LATTICE makes on the
way to a gold object: the children of each node on a path from the root to a gold leaf, the relevant child among
its siblings. Each text is clipped as LATTICE clips a candidate (``LatticeConfig().max_candidate_chars``, or
``--max-chars``) and scored by the judge in one call per query and group (``--kinds`` picks the groups). The AUC is
pooled over all queries, as ``judged_records_auc.py`` pools a run's judged pairs; pairwise accuracy counts pairs of
the same query. Each query's scores go to ``--records`` (``retrievekit.core.eval.records``, signed with these
settings) as it finishes, so a stopped run resumes where it stopped; ``--shard K/N`` splits it over processes:

    python benchmarks/judge_tree_auc.py --dataset scifact --data-dir "$RETRIEVEKIT_DATA_DIR" \\
        --tree-dir runs/trees/scifact-bottom_up-smollm2 --judge judges/smollm2-scifact \\
        --records runs/judge-tree/smollm2-scifact.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections import defaultdict
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from retrievekit.core.eval.datasets import load_dataset
from retrievekit.core.eval.judge_accuracy import pairwise_accuracy, roc_auc
from retrievekit.core.eval.records import QueryRecord, RecordFile, parse_shard, shard
from retrievekit.core.lattice.config import LatticeConfig
from retrievekit.core.lattice.scoring import clip_candidate
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.llm.protocol import RelevanceJudge

KINDS = ("summary", "leaf", "siblings")
"""The groups' kinds: summaries by depth, leaves, and the slates on the gold paths by depth."""


def groups(tree: SemanticTree) -> dict[str, list[str]]:
    """Node ids by group: ``summary@D`` for the internal nodes at depth D (root excluded), ``leaf`` for the leaves."""
    out: dict[str, list[str]] = defaultdict(list)
    for node in tree.iter_nodes():
        if node.id == ROOT:
            continue
        out["leaf" if node.is_leaf else f"summary@{node.depth}"].append(node.id)
    return {g: sorted(ids) for g, ids in sorted(out.items())}


def query_pairs(
    tree: SemanticTree,
    by_group: dict[str, list[str]],
    qid: str,
    gold: set[str],
    negatives: int,
    kinds: Collection[str] = KINDS,
) -> dict[str, tuple[list[str], list[int]]]:
    """``{group: (node ids, labels)}`` for one query and the groups of ``kinds``: every relevant node of a group and
    ``negatives`` drawn others; ``siblings@D``: the slates on the gold paths (:func:`sibling_slates`), each node
    labelled by its subtree."""
    out: dict[str, tuple[list[str], list[int]]] = {}
    for g, ids in by_group.items():
        if g.split("@")[0] not in kinds:
            continue
        relevant = {n: bool(tree.leaf_set(n) & gold) for n in ids}
        pos = [n for n in ids if relevant[n]]
        if pos:
            others = [n for n in ids if not relevant[n]]
            neg = random.Random(f"{qid}/{g}").sample(others, min(negatives, len(others)))
            out[g] = (pos + neg, [1] * len(pos) + [0] * len(neg))
    if "siblings" in kinds:
        for depth, ids in sorted(sibling_slates(tree, gold).items()):
            out[f"siblings@{depth}"] = (ids, [int(bool(tree.leaf_set(n) & gold)) for n in ids])
    return out


def sibling_slates(tree: SemanticTree, gold: set[str]) -> dict[int, list[str]]:
    """The children of every node on a path from the root to a gold leaf, by the children's depth: the slates LATTICE
    must rank right to reach the gold objects (one relevant child, or a few, among its siblings)."""
    parents: set[str] = set()
    for leaf in gold & set(tree.nodes):
        node = tree.parent(leaf)
        while node is not None:
            parents.add(node)
            node = tree.parent(node)
    out: dict[int, list[str]] = defaultdict(list)
    for p in sorted(parents):
        out[tree.depth(p) + 1].extend(tree.children(p))
    return out


def score_pairs(
    judge: RelevanceJudge, tree: SemanticTree, query: str, pairs: dict[str, tuple[list[str], list[int]]], clip: int
) -> dict[str, tuple[list[float], list[int]]]:
    """``{group: (scores, labels)}``: one ``judge.score_relevance`` call per group, on the node texts clipped as
    LATTICE clips a candidate (``clip`` characters)."""
    out = {}
    for g, (ids, labels) in pairs.items():
        scores = judge.score_relevance(query, [clip_candidate(tree.text(n), clip) for n in ids])
        out[g] = ([round(float(s), 6) for s in scores], labels)
    return out


class GroupAccuracy(NamedTuple):
    """One group's pairs, its pooled ROC AUC and pairwise accuracy, and the judge's mean score on each label."""

    group: str
    pairs: int
    relevant: int
    auc: float | None
    pairwise: float | None
    mean_relevant: float | None
    mean_other: float | None


def summarize(per_query: list[dict]) -> list[GroupAccuracy]:
    """One :class:`GroupAccuracy` per group, and per kind over all depths, sorted by name, from each query's
    ``{group: (scores, labels)}``."""
    by: dict[str, list[tuple[list[float], list[int]]]] = defaultdict(list)
    for query in per_query:
        for g, (scores, labels) in query.items():
            by[g].append((scores, labels))
            if "@" in g:
                by[g.split("@")[0] + " (all depths)"].append((scores, labels))
    out = []
    for g, parts in sorted(by.items()):
        pairs = [(s, x) for p in parts for s, x in zip(*p, strict=True)]
        rel, other = [s for s, x in pairs if x], [s for s, x in pairs if not x]
        out.append(GroupAccuracy(g, len(pairs), len(rel), roc_auc([s for s, _ in pairs], [x for _, x in pairs]),
                                 pairwise_accuracy(parts)[0], _mean(rel), _mean(other)))  # fmt: skip
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _node_checksums(tree_dir: Path) -> dict:
    """The checksums a version-4 tree's manifest records for its node files (structure and summaries)."""
    sums = json.loads((tree_dir / "manifest.json").read_text(encoding="utf-8"))["checksums"]
    return {k: v for k, v in sorted(sums.items()) if k.startswith(("node", "child"))}


def settings(args: argparse.Namespace) -> dict:
    """What the records are signed with: a file written with other settings (another tree, judge, clip) is refused."""
    old = args.tree_dir / "nodes.jsonl"  # a tree of format version 3 or before; version 4: the manifest's checksums
    signed = old.read_bytes() if old.is_file() else json.dumps(_node_checksums(args.tree_dir)).encode("utf-8")
    nodes = hashlib.sha256(signed).hexdigest()
    return {"benchmark": "judge_tree_auc", "dataset": args.dataset, "split": args.split, "tree_nodes_sha256": nodes,
            "judge": str(args.judge), "negatives": args.negatives, "max_chars": args.max_chars,
            "kinds": sorted(args.kinds)}  # fmt: skip


def run(args: argparse.Namespace, records: RecordFile) -> None:
    """Score every query of this shard not yet recorded, one record per query."""
    from retrievekit.core.judge import load_judge  # loads torch: only when there is work

    ds = load_dataset(args.dataset, args.data_dir, split=args.split, limit=args.limit)
    done = records.done()
    todo = [q for q in shard(ds.queries, args.shard) if q.id not in done]
    if not todo:
        return
    tree = SemanticTree.load(args.tree_dir)
    by_group, judge = groups(tree), load_judge(args.judge)
    with records.writing(parse_shard(args.shard)):
        for q in todo:
            t0 = time.perf_counter()
            gold = {d for d, rel in ds.qrels.get(q.id, {}).items() if rel > 0}
            pairs = query_pairs(tree, by_group, q.id, gold, args.negatives, args.kinds)
            scored = score_pairs(judge, tree, q.text, pairs, args.max_chars)
            records.append(QueryRecord(qid=q.id, seconds=time.perf_counter() - t0, extra={"groups": scored}))


def main(argv: list[str] | None = None) -> int:
    """Score (this shard's queries not yet recorded), then print one line per group from every record."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="scifact")
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--tree-dir", type=Path, required=True)
    ap.add_argument("--judge", required=True, help="a trained judge folder (load_judge)")
    ap.add_argument("--negatives", type=int, default=10, help="drawn non-relevant nodes per query and group (10)")
    ap.add_argument("--max-chars", type=int, default=LatticeConfig().max_candidate_chars,
                    help="characters of a node's text the judge reads (LATTICE's max_candidate_chars, 200)")  # fmt: skip
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="groups to score (all three)")
    ap.add_argument("--records", type=Path, required=True, help="the per-query records (resumed when they exist)")
    ap.add_argument("--shard", default=None, help="K/N: this process scores every N-th query from the K-th")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args(argv)
    records = RecordFile(args.records, settings(args))
    run(args, records)
    done = records.done()
    if args.shard is not None:
        print(f"{len(done)} queries recorded; run without --shard for the table")
        return 0
    timed = [r.seconds for r in done.values() if r.seconds > 0]  # 0: a record whose time was not measured
    cost = f"{sum(timed) / len(timed):.1f} s a query over {len(timed)} timed" if timed else "not timed"
    print(f"{len(done)} queries ({cost}), {args.negatives} drawn negatives per query and group, texts "
          f"cut to {args.max_chars} characters, judge {args.judge}")  # fmt: skip
    print("| group | pairs | relevant | ROC AUC | pairwise acc. | mean score, relevant | mean score, other |")
    print("|---|---|---|---|---|---|---|")
    for a in summarize([r.extra["groups"] for r in done.values()]):
        print(f"| {a.group} | {a.pairs} | {a.relevant} | {_f(a.auc)} | {_f(a.pairwise)} | {_f(a.mean_relevant)} "
              f"| {_f(a.mean_other)} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
