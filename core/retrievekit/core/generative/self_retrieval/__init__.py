"""Self-Retrieval (arXiv 2403.00801): a local LM internalises a corpus, then retrieves by constrained generation.

* :func:`train_self_retrieval` -- passages, training data (indexing, query, rejection instances), fine-tuning,
  a trained-model folder with a manifest (CLI: ``retrievekit train-self-retrieval``).
* :class:`SelfRetrieval` -- title trie -> passage trie decoding, self-assessment scoring (bench:
  ``retrievekit bench --method self-retrieval --model-dir DIR``).

Examples:
    >>> from retrievekit.core.generative.self_retrieval import SelfRetrievalConfig
    >>> SelfRetrievalConfig().rejection_response
    ' cannot extract answer'
"""

from retrievekit.core.generative.self_retrieval.config import SelfRetrievalConfig
from retrievekit.core.generative.self_retrieval.data import (
    QueryPair,
    build_training_examples,
    indexing_examples,
    query_examples,
)
from retrievekit.core.generative.self_retrieval.method import (
    Candidate,
    SelfRetrieval,
    build_self_retrieval,
    create_self_retrieval,
)
from retrievekit.core.generative.self_retrieval.passages import PassageSet, split_passages
from retrievekit.core.generative.self_retrieval.scoring import combine_scores
from retrievekit.core.generative.self_retrieval.train import train_self_retrieval

__all__ = [
    "Candidate",
    "PassageSet",
    "QueryPair",
    "SelfRetrieval",
    "SelfRetrievalConfig",
    "build_self_retrieval",
    "build_training_examples",
    "combine_scores",
    "create_self_retrieval",
    "indexing_examples",
    "query_examples",
    "split_passages",
    "train_self_retrieval",
]
