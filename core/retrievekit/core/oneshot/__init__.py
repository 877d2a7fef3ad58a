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

from retrievekit.core.oneshot import filters
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.cropping import CropResult, SentenceCropper, split_sentences
from retrievekit.core.oneshot.filters import *  # noqa: F403 - the rules and their context: filters.__all__
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
    "Candidate",
    "CropResult",
    "HFTokenCounter",
    "KnapsackItem",
    "KnapsackResult",
    "OneShotConfig",
    "OneShotResult",
    "OneShotSelector",
    "RegexTokenCounter",
    "SelectedChunk",
    "SentenceCropper",
    "TiktokenCounter",
    "TokenCounter",
    "knapsack_dp",
    "knapsack_greedy",
    "make_token_counter",
    "solve_knapsack",
    "split_sentences",
]
__all__ += filters.__all__
