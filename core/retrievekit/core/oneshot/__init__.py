"""One-SHOT: token-budgeted chunk selection (0/1 knapsack), rule-based metadata filter and LLM chunk cropping.

Mechanisms 1-2 of "Fishing for Answers" (arXiv 2509.04820). Framework-free; the LlamaIndex postprocessor and the
LangChain compressor in ``retrievekit.llama_index`` / ``retrievekit.langchain`` wrap :class:`OneShotSelector`.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.oneshot import OneShotConfig, OneShotSelector
    >>> pool = [(Passage(id="a", text="short relevant"), 0.9), (Passage(id="b", text="long " * 50), 0.8)]
    >>> OneShotSelector(OneShotConfig(budget=10)).select("q", pool).ids
    ['a']
"""

from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.cropping import CropResult, SentenceCropper, split_sentences
from retrievekit.core.oneshot.filters import (
    AddAdjacent,
    AddRule,
    AddSameDocument,
    AddSameEntities,
    DocumentCatalog,
    DocumentInfo,
    DropMismatchedEntities,
    DropOtherDates,
    DropOtherDocuments,
    DropRule,
    FilterContext,
    MetadataKeys,
    Proposal,
    QueryInfo,
    analyze_query,
    default_rules,
)
from retrievekit.core.oneshot.knapsack import (
    KnapsackItem,
    KnapsackResult,
    knapsack_dp,
    knapsack_greedy,
    solve_knapsack,
)
from retrievekit.core.oneshot.selector import Candidate, OneShotResult, OneShotSelector, SelectedChunk
from retrievekit.core.oneshot.tokens import (
    HFTokenCounter,
    RegexTokenCounter,
    TiktokenCounter,
    TokenCounter,
    make_token_counter,
)

__all__ = [
    "AddAdjacent",
    "AddRule",
    "AddSameDocument",
    "AddSameEntities",
    "Candidate",
    "CropResult",
    "DocumentCatalog",
    "DocumentInfo",
    "DropMismatchedEntities",
    "DropOtherDates",
    "DropOtherDocuments",
    "DropRule",
    "FilterContext",
    "HFTokenCounter",
    "KnapsackItem",
    "KnapsackResult",
    "MetadataKeys",
    "OneShotConfig",
    "OneShotResult",
    "OneShotSelector",
    "Proposal",
    "QueryInfo",
    "RegexTokenCounter",
    "SelectedChunk",
    "SentenceCropper",
    "TiktokenCounter",
    "TokenCounter",
    "analyze_query",
    "default_rules",
    "knapsack_dp",
    "knapsack_greedy",
    "make_token_counter",
    "solve_knapsack",
    "split_sentences",
]
