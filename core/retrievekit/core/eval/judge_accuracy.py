"""How well a run's relevance judge told relevant from irrelevant candidates: the result's ``judge`` block.

Every judged method passes :func:`~retrievekit.core.llm.judge_hooks.judge_relevance` the objects each candidate stands
for (``refs``); the hook keeps them with the scores in ``trace.judged``. The harness labels each judged pair from the
qrels (1 when a ref is graded above 0: a LATTICE node is relevant when its subtree holds a gold leaf) and keeps the
scores and labels in the query's record (:func:`query_pairs`), so a resumed or sharded run measures the same
figures. Over the whole run (:func:`judge_block`):

* ``auc``: ROC AUC of the scores over every judged pair, pooled across queries (ties count half): the chance that a
  random relevant pair outscores a random irrelevant one;
* ``pairwise_accuracy``: the same comparison restricted to pairs of one query (relevant vs irrelevant candidates
  scored for the same query, ties half), pooled over queries; it ignores calibration across queries;
* ``scored_pairs``, ``positives``, ``pairs_per_query``: what it was measured on. Every judgement counts: a candidate
  scored twice (a LATTICE anchor, an object in two ARM drafts) counts twice, as it cost two judged items;
* ``gold_seen``, ``gold_seen_returned`` and their ratio ``gold_seen_returned_share``: the distinct gold objects
  among the judged refs, summed over queries, and how many of them the run returned (records written before this
  count was kept are left out of it). With the exact oracle, a method that keeps what its judge approves (ARM's
  verification, One-SHOT's crop) should return every gold object its judge saw: the search-correctness check.

A judge that read the gold labels (the oracle of ``--judge oracle[:S]``) is flagged: ``uses_gold_labels: true`` and
a plain ``warning``.

Examples:
    >>> roc_auc([0.9, 0.8, 0.3, 0.3], [1, 0, 1, 0])
    0.625
    >>> pairwise_accuracy([([0.9, 0.1], [1, 0]), ([0.2, 0.6], [1, 0])])
    (0.5, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.trace import JudgedBatch

__all__ = ["GOLD_WARNING", "judge_block", "pairwise_accuracy", "query_pairs", "roc_auc"]

GOLD_WARNING = "diagnostic run: the judge read the gold labels"
"""What a result says when its judge was the gold-label oracle."""


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """ROC AUC (Mann-Whitney, ties counted half); None without both a positive and a negative.

    Examples:
        >>> roc_auc([0.1, 0.9], [0, 1]), roc_auc([0.5, 0.5], [0, 1]), roc_auc([0.5], [1])
        (1.0, 0.5, None)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based, ties share their mean rank
    rank_sum = float(average_rank[inverse][y].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def pairwise_accuracy(groups: Iterable[tuple[Sequence[float], Sequence[int]]]) -> tuple[float | None, int]:
    """``(accuracy, pairs)`` over the positive/negative pairs within each group (ties half); None without pairs.

    Examples:
        >>> pairwise_accuracy([([0.7, 0.7, 0.1], [1, 0, 0])])
        (0.75, 2)
    """
    correct = 0.0
    total = 0
    for scores, labels in groups:
        s = np.asarray(scores, dtype=np.float64)
        y = np.asarray(labels, dtype=bool)
        neg = np.sort(s[~y])
        pos = s[y]
        if not pos.size or not neg.size:
            continue
        below = np.searchsorted(neg, pos, side="left")
        ties = np.searchsorted(neg, pos, side="right") - below
        correct += float(below.sum()) + 0.5 * float(ties.sum())
        total += int(pos.size * neg.size)
    return (correct / total if total else None), total


def query_pairs(
    batches: Iterable[JudgedBatch], gold: Mapping[str, float], returned: Sequence[str] | None = None
) -> dict[str, Any]:
    """One query's judged pairs as its record keeps them: ``{"judges", "scores", "labels"}`` ({} when none).

    ``gold`` is the query's qrels (``{object id: grade}``); a pair is labelled 1 when a ref is graded above 0. With
    ``returned`` (the ids the method returned), ``gold_seen`` counts the distinct gold objects among the judged refs
    and ``gold_seen_returned`` how many of those the method returned: with the exact oracle a set method (ARM's
    verification, One-SHOT's crop) should return every gold object its judge saw.

    Examples:
        >>> b = JudgedBatch({"name": "j", "noise": None, "uses_gold_labels": False}, ({"d1", "d2"}, {"d3"}), (0.8, 0.4))
        >>> query_pairs([b], {"d2": 1, "d3": 0})
        {'judges': [{'name': 'j', 'noise': None, 'uses_gold_labels': False}], 'scores': [0.8, 0.4], 'labels': [1, 0]}
        >>> {k: v for k, v in query_pairs([b], {"d2": 1}, returned=["d3"]).items() if k.startswith("gold")}
        {'gold_seen': 1, 'gold_seen_returned': 0}
    """
    relevant = {str(d) for d, g in gold.items() if g > 0}
    judges: list[dict[str, Any]] = []
    scores: list[float] = []
    labels: list[int] = []
    batches = list(batches)
    for b in batches:
        judge = dict(b.judge)
        if judge not in judges:
            judges.append(judge)
        scores.extend(round(float(x), 6) for x in b.scores)
        labels.extend(int(any(g in r for g in relevant)) for r in b.refs)  # asks the refs, never lists them
    if not scores:
        return {}
    out: dict[str, Any] = {"judges": judges, "scores": scores, "labels": labels}
    if returned is not None:
        seen = {g for b in batches for r in b.refs for g in relevant if g in r}
        out["gold_seen"] = len(seen)
        out["gold_seen_returned"] = len(seen.intersection(map(str, returned)))
    return out


def _describe(judges: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One description for the run: the judge's, or the names joined when a run used several."""
    if len(judges) == 1:
        return dict(judges[0])
    noises = {j.get("noise") for j in judges}
    return {
        "name": " + ".join(sorted({str(j.get("name")) for j in judges})),
        "noise": noises.pop() if len(noises) == 1 else None,
        "uses_gold_labels": any(bool(j.get("uses_gold_labels")) for j in judges),
    }


def judge_block(
    pairs: Sequence[Mapping[str, Any]], n_queries: int, configured: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The result's ``judge`` block from the records' :func:`query_pairs` (None when no judge ran).

    ``configured`` describes a judge the run was given even if it scored nothing (the harness's oracle), so a run
    that read gold labels always says so.

    Examples:
        >>> recs = [{"judges": [{"name": "j", "noise": None, "uses_gold_labels": False}],
        ...          "scores": [0.9, 0.2, 0.4], "labels": [1, 0, 0]}]
        >>> judge_block(recs, 1)["auc"], judge_block(recs, 1)["scored_pairs"]
        (1.0, 3)
        >>> judge_block([], 1, {"name": "oracle", "noise": 0.2, "uses_gold_labels": True})["warning"]
        'diagnostic run: the judge read the gold labels'
    """
    judges: list[dict[str, Any]] = [dict(configured)] if configured else []
    for p in pairs:
        for j in p.get("judges", ()):
            if dict(j) not in judges:
                judges.append(dict(j))
    if not judges:
        return None
    scores = [s for p in pairs for s in p.get("scores", ())]
    labels = [y for p in pairs for y in p.get("labels", ())]
    accuracy, _ = pairwise_accuracy((p.get("scores", ()), p.get("labels", ())) for p in pairs)
    block = {
        **_describe(judges),
        "auc": roc_auc(scores, labels),
        "pairwise_accuracy": accuracy,
        "scored_pairs": len(scores),
        "positives": int(sum(labels)),
        "pairs_per_query": len(scores) / max(n_queries, 1),
    }
    counted = [p for p in pairs if "gold_seen" in p]
    if counted:
        seen = sum(int(p["gold_seen"]) for p in counted)
        block["gold_seen"] = seen
        block["gold_seen_returned"] = sum(int(p["gold_seen_returned"]) for p in counted)
        block["gold_seen_returned_share"] = block["gold_seen_returned"] / seen if seen else None
    if block["uses_gold_labels"]:
        block["warning"] = GOLD_WARNING
    return block
