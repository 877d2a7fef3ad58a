"""Evaluation harness: dataset loaders, retrieval metrics, the benchmark runner and reports.

Examples:
    >>> from retrievekit.core.eval import evaluate
    >>> evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=(1,))["ndcg@1"]
    1.0
"""

from retrievekit.core.eval.datasets import (
    DATASETS,
    LAYOUTS,
    Dataset,
    DatasetError,
    DatasetFormatError,
    DatasetNotFoundError,
    Query,
    load_dataset,
    rebuild_documents,
    stable_id,
    supported_splits,
)
from retrievekit.core.eval.metrics import (
    DEFAULT_KS,
    evaluate,
    evaluate_sets,
    evaluate_table_recall,
    hit_at_k,
    mrr_at_k,
    ndcg_at_k,
    perfect_recall_at_k,
    precision_at_k,
    recall_at_k,
    set_f1,
    set_precision,
    set_precision_recall_f1,
    set_recall,
)
from retrievekit.core.eval.report import compare, load_results, plot
from retrievekit.core.eval.runner import COST_KEYS, run_benchmark

__all__ = [
    "COST_KEYS",
    "DATASETS",
    "DEFAULT_KS",
    "LAYOUTS",
    "Dataset",
    "DatasetError",
    "DatasetFormatError",
    "DatasetNotFoundError",
    "Query",
    "compare",
    "evaluate",
    "evaluate_sets",
    "evaluate_table_recall",
    "hit_at_k",
    "load_dataset",
    "load_results",
    "mrr_at_k",
    "ndcg_at_k",
    "perfect_recall_at_k",
    "plot",
    "precision_at_k",
    "rebuild_documents",
    "recall_at_k",
    "run_benchmark",
    "set_f1",
    "set_precision",
    "set_precision_recall_f1",
    "set_recall",
    "stable_id",
    "supported_splits",
]
