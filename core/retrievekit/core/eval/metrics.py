"""Retrieval metrics over ranked id lists and graded qrels (BEIR / ``pytrec_eval`` conventions).

All functions are pure: they take the ranked ids a method returned (best
first) and the graded relevance of one query (``{object_id: grade}``), and
return a float in ``[0, 1]``.

Conventions (the ones BEIR reports through ``pytrec_eval``):

* A document is *relevant* when its grade is ``> 0``; grades ``<= 0`` count as
  non-relevant (they are neither gains nor part of the ideal ranking).
* nDCG@k uses linear gain (the grade itself) and a ``log2(rank + 1)`` discount
  (rank is 1-based), like ``trec_eval``'s ``ndcg_cut``; the ideal DCG ranks all
  judged-relevant documents by grade and is cut at ``k`` too.
* recall@k divides by *all* relevant documents of the query (not ``min(k, R)``).
* Duplicated ids in a ranking count once (the first occurrence), as a run
  dictionary in ``pytrec_eval`` cannot hold an id twice.
* :func:`evaluate` averages over the queries that have at least one relevant
  document in the qrels (BEIR skips the others). A query that *has* relevant
  documents but no (or an empty) ranking counts as 0 — stricter than
  ``pytrec_eval``, which silently drops it.

Examples:
    >>> qrels = {"q1": {"a": 1, "b": 1}}
    >>> run = {"q1": ["a", "x", "b"]}
    >>> round(evaluate(run, qrels, ks=(1, 3))["recall@1"], 3)
    0.5
    >>> evaluate(run, qrels, ks=(3,))["perfect_recall@3"]
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from retrievekit.core.errors import InvalidInputError

__all__ = [
    "DEFAULT_KS",
    "dcg_at_k",
    "evaluate",
    "evaluate_sets",
    "evaluate_table_recall",
    "hit_at_k",
    "mrr_at_k",
    "ndcg_at_k",
    "perfect_recall_at_k",
    "precision_at_k",
    "recall_at_k",
    "set_f1",
    "set_precision",
    "set_precision_recall_f1",
    "set_recall",
]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20, 100)
"""Cut-offs :func:`evaluate` reports by default."""


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"metric cut-off k must be a positive integer, got {k!r}")
    return k


def _dedup(ranked: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def _relevant(qrels: Mapping[str, int]) -> dict[str, int]:
    return {d: int(g) for d, g in qrels.items() if g > 0}


def dcg_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Discounted cumulative gain of the top ``k``: ``sum(grade / log2(rank + 1))``.

    Examples:
        >>> round(dcg_at_k(["a", "b"], {"a": 3, "b": 2}, 2), 4)  # 3/1 + 2/log2(3)
        4.2619
    """
    _check_k(k)
    rel = _relevant(qrels)
    return sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(_dedup(ranked)[:k]))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Normalised DCG@k (linear gain, log2 discount); 0 when the query has no relevant document.

    Examples:
        >>> ndcg_at_k(["a", "b"], {"a": 1}, 10)
        1.0
        >>> round(ndcg_at_k(["x", "a"], {"a": 1}, 10), 4)  # 1/log2(3)
        0.6309
    """
    _check_k(k)
    rel = _relevant(qrels)
    if not rel:
        return 0.0
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg_at_k(ranked, rel, k) / idcg


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Fraction of the query's relevant documents found in the top ``k``.

    Examples:
        >>> recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, 2)
        0.3333333333333333
    """
    _check_k(k)
    rel = _relevant(qrels)
    if not rel:
        return 0.0
    return sum(1 for d in _dedup(ranked)[:k] if d in rel) / len(rel)


def precision_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top ``k`` divided by ``k`` (``trec_eval`` ``P_k``).

    Examples:
        >>> precision_at_k(["a", "x"], {"a": 1}, 4)
        0.25
    """
    _check_k(k)
    rel = _relevant(qrels)
    return sum(1 for d in _dedup(ranked)[:k] if d in rel) / k


def mrr_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the top ``k`` (0 if none).

    Examples:
        >>> mrr_at_k(["x", "y", "a"], {"a": 1}, 5)
        0.3333333333333333
        >>> mrr_at_k(["x", "y", "a"], {"a": 1}, 2)
        0.0
    """
    _check_k(k)
    rel = _relevant(qrels)
    for i, d in enumerate(_dedup(ranked)[:k]):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


def hit_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """1.0 when at least one relevant document is in the top ``k`` (a.k.a. success@k).

    Examples:
        >>> hit_at_k(["x", "a"], {"a": 1}, 2), hit_at_k(["x", "a"], {"a": 1}, 1)
        (1.0, 0.0)
    """
    _check_k(k)
    rel = _relevant(qrels)
    return 1.0 if any(d in rel for d in _dedup(ranked)[:k]) else 0.0


def perfect_recall_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """1.0 when *all* relevant documents are in the top ``k`` (0 if the query has none).

    Examples:
        >>> perfect_recall_at_k(["a", "b"], {"a": 1, "b": 2}, 2)
        1.0
        >>> perfect_recall_at_k(["a", "x", "b"], {"a": 1, "b": 2}, 2)
        0.0
    """
    _check_k(k)
    rel = _relevant(qrels)
    if not rel:
        return 0.0
    top = set(_dedup(ranked)[:k])
    return 1.0 if all(d in top for d in rel) else 0.0


def set_precision_recall_f1(retrieved: Iterable[str], qrels: Mapping[str, int]) -> tuple[float, float, float]:
    """Precision, recall and F1 of an *unranked* set of ids (for methods that return a set).

    An empty retrieved set has precision 0 (and so F1 0).

    Examples:
        >>> set_precision_recall_f1({"a", "x"}, {"a": 1, "b": 1})
        (0.5, 0.5, 0.5)
    """
    got = set(retrieved)
    rel = set(_relevant(qrels))
    tp = len(got & rel)
    p = tp / len(got) if got else 0.0
    r = tp / len(rel) if rel else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def set_precision(retrieved: Iterable[str], qrels: Mapping[str, int]) -> float:
    """Precision of an unranked set.

    Examples:
        >>> set_precision(["a", "x", "y", "z"], {"a": 1})
        0.25
    """
    return set_precision_recall_f1(retrieved, qrels)[0]


def set_recall(retrieved: Iterable[str], qrels: Mapping[str, int]) -> float:
    """Recall of an unranked set.

    Examples:
        >>> set_recall(["a"], {"a": 1, "b": 1})
        0.5
    """
    return set_precision_recall_f1(retrieved, qrels)[1]


def set_f1(retrieved: Iterable[str], qrels: Mapping[str, int]) -> float:
    """F1 of an unranked set.

    Examples:
        >>> round(set_f1(["a", "x"], {"a": 1}), 4)
        0.6667
    """
    return set_precision_recall_f1(retrieved, qrels)[2]


def _judged_queries(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    return [q for q, docs in qrels.items() if any(g > 0 for g in docs.values())]


def evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Iterable[int] = DEFAULT_KS,
) -> dict[str, float]:
    """Mean ``ndcg``, ``recall``, ``precision``, ``mrr``, ``hit`` and ``perfect_recall`` at each cut-off.

    Averages over the queries of ``qrels`` that have at least one relevant
    document (BEIR convention); a judged query missing from ``run`` counts as
    an empty ranking (score 0). Run entries for unjudged queries are ignored.
    Keys look like ``"ndcg@10"``; with no judged query every value is 0.

    Examples:
        >>> m = evaluate({"q": ["x", "a"]}, {"q": {"a": 1}, "q2": {}}, ks=(1, 2))
        >>> m["hit@1"], m["hit@2"], m["mrr@2"]
        (0.0, 1.0, 0.5)
    """
    cutoffs = sorted({_check_k(k) for k in ks})
    if not cutoffs:
        raise InvalidInputError("evaluate needs at least one cut-off k")
    queries = _judged_queries(qrels)
    fns = {
        "ndcg": ndcg_at_k,
        "recall": recall_at_k,
        "precision": precision_at_k,
        "mrr": mrr_at_k,
        "hit": hit_at_k,
        "perfect_recall": perfect_recall_at_k,
    }
    out: dict[str, float] = {}
    for name, fn in fns.items():
        for k in cutoffs:
            vals = [fn(list(run.get(q, ())), qrels[q], k) for q in queries]
            out[f"{name}@{k}"] = sum(vals) / len(vals) if vals else 0.0
    return out


def evaluate_sets(
    run_sets: Mapping[str, Iterable[str]],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, float]:
    """Mean set precision/recall/F1 over judged queries (same query convention as :func:`evaluate`), the share of
    queries whose set holds every relevant object (``set_perfect_recall``) and the mean set size.

    Examples:
        >>> evaluate_sets({"q": ["a", "x"]}, {"q": {"a": 1}})
        {'set_precision': 0.5, 'set_recall': 1.0, 'set_f1': 0.6666666666666666, 'set_perfect_recall': 1.0, 'set_size': 2.0}
    """
    queries = _judged_queries(qrels)
    keys = ("set_precision", "set_recall", "set_f1", "set_perfect_recall", "set_size")
    if not queries:
        return dict.fromkeys(keys, 0.0)
    rows = []
    for q in queries:
        got = set(run_sets.get(q, ()))
        p, r, f = set_precision_recall_f1(got, qrels[q])
        rows.append((p, r, f, 1.0 if r == 1.0 else 0.0, float(len(got))))
    n = len(rows)
    return {key: sum(row[i] for row in rows) / n for i, key in enumerate(keys)}


def evaluate_table_recall(
    run: Mapping[str, Sequence[str]], gold_tables: Mapping[str, str], ks: Iterable[int] = (1, 5, 10)
) -> dict[str, float]:
    """``table_recall@k``: the share of queries whose gold table (OTT-QA's ``table_id``) is among the first ``k``
    hits, averaged over the queries of ``gold_tables`` (a query missing from ``run`` counts as 0).

    Examples:
        >>> evaluate_table_recall({"q": ["p1", "t1"], "q2": ["t2"]}, {"q": "t1", "q2": "t2"}, ks=(1, 2))
        {'table_recall@1': 0.5, 'table_recall@2': 1.0}
    """
    cutoffs = sorted({_check_k(k) for k in ks})
    ranks = [_dedup(run.get(q, ())).index(t) if t in run.get(q, ()) else None for q, t in gold_tables.items()]
    n = max(len(ranks), 1)
    return {f"table_recall@{k}": sum(1 for r in ranks if r is not None and r < k) / n for k in cutoffs}
