"""Evaluation harness: dataset loaders, retrieval metrics, the benchmark runner and reports.

Examples:
    >>> from retrievekit.core.eval import evaluate
    >>> evaluate({"q": ["a"]}, {"q": {"a": 1}}, ks=(1,))["ndcg@1"]
    1.0
"""

from retrievekit.core.eval import metrics
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
from retrievekit.core.eval.metrics import *  # noqa: F403 - the metrics: metrics.__all__
from retrievekit.core.eval.report import compare, load_results, plot
from retrievekit.core.eval.runner import COST_KEYS, run_benchmark

__all__ = [
    "COST_KEYS",
    "DATASETS",
    "LAYOUTS",
    "Dataset",
    "DatasetError",
    "DatasetFormatError",
    "DatasetNotFoundError",
    "Query",
    "compare",
    "load_dataset",
    "load_results",
    "plot",
    "rebuild_documents",
    "run_benchmark",
    "stable_id",
    "supported_splits",
]
__all__ += metrics.__all__
