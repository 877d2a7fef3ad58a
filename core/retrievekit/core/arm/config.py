"""ARM settings: one frozen dataclass with the reference defaults (``peterbaile/arm``; docs/methods/arm.md).

"Reference" is the authors' code: ``align_info.py`` / ``constraint_decoder.py`` (keywords),
``align_structure_expand.py`` (base objects, compatibility, drafts), ``align_structure_filter.py`` (MIP),
``verify.py`` and ``aggregate.py``; "the independent reproduction" is ``apostolhskouk/ARM``.

Examples:
    >>> cfg = ArmConfig()
    >>> cfg.base_k, cfg.expand_ks, cfg.ilp_k, cfg.dense_weight
    (5, (3, 4, 5), 10, 0.9)
    >>> ArmConfig.from_options({"mip": "false", "expand_ks": "2,3"}).expand_ks
    (2, 3)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.options import check_at_least, config_from_options

__all__ = ["ArmConfig"]


@dataclass(frozen=True)
class ArmConfig:
    """ARM settings; every default cites where it comes from.

    Attributes:
        vocab_objects: dense top-N objects whose N-grams form the per-query decoding vocabulary
            (reference ``align_info.py``: top-50 dense-retrieved objects).
        ngram_max: longest N-gram in the vocabulary (paper §3: n = 1-3).
        max_keywords: keywords kept from the LLM's decomposition (ours: the reference has no cap; a cap keeps the
            local model cheap).
        keyword_beams: beam size of the constrained rephrasing (reference ``constraint_decoder.py``: ``beam_size = 5``).
        words_per_keyword: corpus N-grams kept per keyword (reference ``constraint_decoder.py``: up to 5).
        keyword_max_tokens: token cap of one rephrased N-gram (ours: 3 words rarely need more than 8 tokens).
        decompose_max_tokens: token cap of one keyword of the decomposition (ours; x4 for the chat path's JSON).
        keywords: run the LLM keyword stage at all (``False``: base objects from the question alone; ablation).
        constrained: use constrained decoding when the LLM is a scoring LM (``False``: free generation then snap,
            the chat-LLM path).
        dense_weight: weight of the max-normalised dense score in the base score (reference base-object stage: 0.9).
        bm25_weight: weight of the max-normalised BM25 score (reference base-object stage: 0.1).
        base_k: base objects kept (reference base-object stage: k = 5).
        pool_size: candidate pool for expansion, dense + BM25 top-N (ours, instead of all-pairs over the corpus,
            which the independent reproduction found infeasible; 50 matches the vocabulary pool).
        linked_passages: add passages linked from base tables' cells to the pool (OTT-QA ``cell_links``; ours).
        view_rows: rows of a table kept by the row-level view used for compatibility (reference
            ``align_structure_expand.py``: 10).
        prompt_rows: rows of a table shown in the verification prompt (reference ``verify.py``: 5).
        prompt_chars: characters of a passage shown in the verification prompt (ours: 200; the reference shows the
            top-5 sentences). Table cells are cut to 40 characters in prompts.
        prompt_max_chars: cap on the candidate text of one verification prompt (ours: about 1,000 tokens; wide
            tables are cut to an even share per object, since prefill dominates a local model's cost).
        expand_ks: expansion sizes, one draft each (reference ``align_structure_expand.py``: OTT-QA ``[3, 4, 5]``).
        mip: select each draft with the MIP (``False``: relevance top-``ilp_k``; the ``arm-no-mip`` ablation).
        ilp_k: at most this many objects per MIP draft (reference ``align_structure_filter.py``: ``ilp_k = 10``).
        relevance_weight: MIP objective weight of relevance (reference ``align_structure_filter.py``: 3).
        compatibility_weight: MIP objective weight of compatibility (reference ``align_structure_filter.py``:
            1 x 0.5).
        mip_time_limit: solver time limit in seconds (reference ``align_structure_filter.py``: ``max_seconds = 60``).
        min_compatibility: pairs with C_ij at or below this get no c_ij variable (the independent reproduction:
            1e-6).
        verify: run LLM self-verification (``False``: the ``arm-no-verify`` ablation, vote-only aggregation).
        verify_beams: beams of the constrained verification decoding (ours: 1, i.e. greedy under the name grammar;
            every beam multiplies the prompt's prefill, which dominates on CPU).
        verify_max_objects: names the verifier may list (ours: small, the paper asks for the minimum set).
        judge_threshold: with a relevance judge as the LLM, verification keeps a draft's objects whose
            ``P(relevant)`` is at least this (the best one when none is); ours: 0.5, the decision threshold of a
            calibrated binary judge (the paper verifies with a prompt, not a judge).
        threshold: aggregated score an object needs to be kept (reference ``aggregate.py`` tunes it per dataset, e.g.
            OTT-QA -0.019 for Llama-8B; the default keeps every object a draft voted for, the reference's value
            for Qwen, since small local models are not calibrated; not tuned on OTT-QA).
        logprob_weight: weight of the mean log-prob in the aggregation (reference ``aggregate.py``: 0.5).
        min_votes: with ``verify=False``, drafts an object must appear in (ours: a majority of the drafts).
        fill_to_k: pad the selected set with the next-best candidates up to ``k`` (marked
            ``arm_selected=False``); for frameworks that expect exactly ``k`` results (ours; off by default so the
            output is ARM's set).
        max_concurrency: drafts verified at once (ours: 4, the drafts are independent; capped by the LLM adapter's
            own ``max_concurrency``, and one at a time on a local in-process model).

    Examples:
        >>> ArmConfig(base_k=3).base_k
        3
        >>> ArmConfig(expand_ks=())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: ArmConfig.expand_ks needs at least one expansion size
    """

    vocab_objects: int = 50
    ngram_max: int = 3
    max_keywords: int = 4
    keyword_beams: int = 5
    words_per_keyword: int = 5
    keyword_max_tokens: int = 8
    decompose_max_tokens: int = 16
    keywords: bool = True
    constrained: bool = True
    dense_weight: float = 0.9
    bm25_weight: float = 0.1
    base_k: int = 5
    pool_size: int = 50
    linked_passages: bool = True
    view_rows: int = 10
    prompt_rows: int = 5
    prompt_chars: int = 200
    prompt_max_chars: int = 4000
    expand_ks: tuple[int, ...] = (3, 4, 5)
    mip: bool = True
    ilp_k: int = 10
    relevance_weight: float = 3.0
    compatibility_weight: float = 0.5
    mip_time_limit: float = 60.0
    min_compatibility: float = 1e-6
    verify: bool = True
    verify_beams: int = 1
    verify_max_objects: int = 4
    judge_threshold: float = 0.5
    threshold: float = -100.0
    logprob_weight: float = 0.5
    min_votes: int = 0
    fill_to_k: bool = False
    max_concurrency: int = 4

    def __post_init__(self) -> None:
        object.__setattr__(self, "expand_ks", tuple(int(x) for x in self.expand_ks))
        if not self.expand_ks:
            raise InvalidInputError("ArmConfig.expand_ks needs at least one expansion size")
        positive = (
            "vocab_objects",
            "ngram_max",
            "keyword_beams",
            "words_per_keyword",
            "keyword_max_tokens",
            "decompose_max_tokens",
            "base_k",
            "pool_size",
            "view_rows",
            "prompt_rows",
            "prompt_chars",
            "max_concurrency",
            "prompt_max_chars",
            "ilp_k",
            "verify_beams",
            "verify_max_objects",
        )
        check_at_least(self, positive, 1)
        if self.max_keywords < 0 or self.min_votes < 0 or min(self.expand_ks) < 0:
            raise InvalidInputError("ArmConfig.max_keywords, min_votes and expand_ks must be >= 0")
        if self.words_per_keyword > self.keyword_beams:
            raise InvalidInputError(
                f"words_per_keyword ({self.words_per_keyword}) must be <= keyword_beams ({self.keyword_beams})"
            )
        if self.mip_time_limit <= 0:
            raise InvalidInputError(f"mip_time_limit must be > 0, got {self.mip_time_limit}")
        weights = ("dense_weight", "bm25_weight", "relevance_weight", "compatibility_weight", "logprob_weight")
        check_at_least(self, weights, 0)
        if self.dense_weight + self.bm25_weight <= 0:
            raise InvalidInputError("dense_weight + bm25_weight must be > 0")
        if self.logprob_weight > 1:
            raise InvalidInputError(f"logprob_weight must be in [0, 1], got {self.logprob_weight}")
        if not 0.0 <= self.judge_threshold <= 1.0:
            raise InvalidInputError(f"judge_threshold must be in [0, 1], got {self.judge_threshold}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ArmConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`: unknown
        keys raise; values are coerced to the field's type).

        ``expand_ks`` takes ``"3,4,5"``; booleans take true/false/yes/no/1/0.

        Examples:
            >>> ArmConfig.from_options({"base_k": "3", "verify": "no"}).verify
            False
            >>> ArmConfig.from_options({"nope": 1})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: unknown ARM option(s): nope; known: ...
        """
        return config_from_options(cls, options, label="ARM")
