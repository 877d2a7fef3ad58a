"""LATTICE settings: tree construction (:class:`TreeBuildConfig`) and search (:class:`LatticeConfig`).

Every default cites its source: the reference code (``nilesh2797/llm-guided-retrieval``: ``src/hyperparams.py``
for the defaults, ``src/tree_objects.py`` and ``src/calib_utils.py`` for the search and calibration), the paper
(arXiv 2510.13217: §3.1 tree construction, §B.1 defaults) or, where neither says, this package's own choice for
small local models (marked *ours*). docs/methods/lattice.md lists where code and paper differ.

Examples:
    >>> LatticeConfig().beam_size, LatticeConfig().num_iters, LatticeConfig().num_leaf_anchors
    (2, 20, 10)
    >>> TreeBuildConfig().max_children
    10
    >>> LatticeConfig.from_options({"beam_size": "1", "num_iters": 40}).num_iters
    40
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.options import check_at_least, config_from_options

__all__ = ["LatticeConfig", "TreeBuildConfig", "split_options"]


@dataclass(frozen=True)
class TreeBuildConfig:
    """How the semantic tree is built (bottom-up or top-down).

    Attributes:
        max_children: M, the maximum branching factor (paper §3.1: "10-20"; 10 keeps slates short for small models).
        first_layer: bottom-up first layer: ``"cluster"`` (embedding clustering, paper default) or ``"metadata"``
            (group leaves by ``metadata[group_key]``, groups larger than M split by corpus order; paper: used for the
            StackExchange subsets).
        group_key: metadata key for ``first_layer="metadata"`` (*ours*: ``"document_id"``).
        seed: seed of clustering and of anything random in the build (*ours*).
        summary_max_tokens: token cap of one node summary (*ours*: 40, short enough for CPU builds).
        summaries: how a bottom-up build writes its internal nodes' texts: ``"llm"`` (one LLM call per node, the
            paper's §3.1) or ``"extractive"`` (no LLM: the children's short texts nearest the group's centroid
            first, cut to 4 characters per token of ``summary_max_tokens``, :func:`~retrievekit.core.lattice.
            summarize.centroid_summary`; *ours*, for corpora too large to summarise with an LLM). Recorded in the
            tree's manifest (``meta.config``); the top-down builder needs the LLM and refuses ``"extractive"``.
        child_chars: characters of each child's text shown to the summariser (*ours*: its title or first sentence,
            cut to 100 characters).
        append_child_titles: append the children's short texts (``"[A; B; C]"``, cut to 160 characters) to each
            bottom-up summary, so a small search LLM sees concrete evidence (*ours*; False = the paper's pure
            summaries).
        max_concurrency: LLM calls in flight at once (reference code: ``llm_max_concurrent_calls`` 20; *ours* 4,
            since a local model gains nothing from more; a ``LocalLM`` always runs serially).
        summary_levels: top-down multi-level summaries per document, coarse to fine, as word limits (paper §3.1:
            five levels from "1-2 words" upward; *ours*: three levels, 2 / 4 / 12 words).
        partition_max_chars: top-down: the largest prompt (in characters of item text) one partition call may get;
            ``SelectSummaryLevel`` picks the coarsest level whose unique summaries exceed M within it (paper §3.1).
        partition_max_tokens: token cap of a partition reply (*ours*).
        retries: JSON repair/retry attempts per LLM call (reference code: 4 retries; *ours* 2).
        progress: show a progress bar (tqdm) over LLM calls.

    Examples:
        >>> TreeBuildConfig(max_children=1)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: max_children must be >= 2, got 1
    """

    max_children: int = 10
    first_layer: Literal["cluster", "metadata"] = "cluster"
    group_key: str = "document_id"
    seed: int = 0
    summary_max_tokens: int = 40
    summaries: Literal["llm", "extractive"] = "llm"
    child_chars: int = 100
    append_child_titles: bool = False
    max_concurrency: int = 4
    summary_levels: tuple[int, ...] = (2, 4, 12)
    partition_max_chars: int = 6000
    partition_max_tokens: int = 512
    retries: int = 2
    progress: bool = False

    def __post_init__(self) -> None:
        if int(self.max_children) < 2:
            raise InvalidInputError(f"max_children must be >= 2, got {self.max_children}")
        if self.first_layer not in ("cluster", "metadata"):
            raise InvalidInputError(f"first_layer must be 'cluster' or 'metadata', got {self.first_layer!r}")
        if self.summaries not in ("llm", "extractive"):
            raise InvalidInputError(f"summaries must be 'llm' or 'extractive', got {self.summaries!r}")
        check_at_least(self, ("summary_max_tokens", "child_chars", "max_concurrency", "partition_max_chars"), 1)
        if not self.summary_levels or any(int(w) < 1 for w in self.summary_levels):
            raise InvalidInputError(f"summary_levels must be positive word limits, got {self.summary_levels!r}")
        if int(self.retries) < 0:
            raise InvalidInputError(f"retries must be >= 0, got {self.retries}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> TreeBuildConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> TreeBuildConfig.from_options({"max_children": "12", "summary_levels": "2,6"}).summary_levels
            (2, 6)
        """
        return config_from_options(cls, options, label="tree")


@dataclass(frozen=True)
class LatticeConfig:
    """How the tree is searched; each paper-vs-code choice is a field.

    Attributes:
        beam_size: B, nodes expanded per iteration (reference ``max_beam_size`` 2; paper §B.1).
        num_iters: N, iterations (reference ``num_iters`` 20; 30 for dynamic corpora).
        relevance_chain_factor: weight of the **current** score in the path relevance,
            ``p = f * s + (1 - f) * p(parent)`` (reference ``relevance_chain_factor`` 0.5; the paper's alpha is the
            parent's weight, identical at 0.5).
        path_reset: a node whose score is ``<= path_reset`` gets ``p = s`` (no parent momentum), pruning branches
            the LLM zeroed (reference code: 0.09; not in the paper). ``-1`` disables it.
        path_scores: scores entering the path relevance: ``"local"`` (the slate score, reference code) or
            ``"calibrated"`` (the latent score, paper Algorithm 1).
        leaf_score_weight: final leaf score ``w * calibrated + (1 - w) * p(parent)`` (reference code: 0.5).
        num_leaf_anchors: l, anchor leaves added to a leaf slate (reference ``num_leaf_calib`` 10).
        anchor_sampling: how leaf anchors are drawn from the leaves predicted so far: ``"gmm"`` (reference code:
            weight 4^(2s) above a 2-component GMM threshold, else 1e-4), ``"softmax"`` (paper: proportional to
            e^p) or ``"top"`` (the best l, deterministic; *ours*).
        internal_anchor: add the best same-depth node to internal slates (reference code and paper: True).
        tau: score scale inside the calibration model (reference ``pl_tau`` 5.0).
        calib_weight_floor: per-score weight ``max(sigmoid(s - 0.5), floor)`` in the weighted MSE (reference: 0.1).
        calib_bias_ridge: ridge on the per-slate biases that fixes the model's offset freedom (*ours*; the
            reference fixes it implicitly by starting the biases at 0 under AdamW).
        score_max: the LLM scores on ``0..score_max`` (reference: 100; divided by it).
        reply_format: ``"list"`` (``{"scores": [s1, s2, ...]}`` aligned to the numbered items, exactly one per
            item; compact for small models; *ours*) or ``"pairs"`` (``{"scores": [[id, s], ...]}``, the reference
            code's ``relevance_scores``).
        omitted_score: score (on ``0..1``) of a candidate the reply leaves out (*ours*: 0.0, noted in the trace).
        max_candidate_chars: characters of a candidate's text in the prompt (*ours*: 200).
        score_max_tokens: token cap of a scoring reply (*ours*; grows with the slate size when too small).
        retries: JSON repair/retry attempts per slate before the embedding fallback (*ours*: 2).
        mask_mode: excluded ids (dynamic corpus): ``"hide"`` (dropped from slates and results; *ours*) or
            ``"reference"`` (kept in slates as "No Description." with score forced to 0, as the reference's
            ``MaskedSemanticNode``; never returned).
        max_concurrency: slates of one iteration scored in parallel (reference: async batch; *ours*: B; a
            ``LocalLM`` always runs serially).
        relevance_definition: optional sentence on what "relevant" means, put in every prompt (reference: per
            dataset).
        seed: seed of the anchor sampling (*ours*).
        shuffle_slates: show each slate in an order drawn from its query and texts
            (:func:`~retrievekit.core.llm.untrusted.unpredictable_order`), so a document cannot aim a reply at its
            own slot; scores come back aligned to the items (*ours*: True; the reference shows slates as given).

    Examples:
        >>> LatticeConfig(path_scores="calibrated").path_scores
        'calibrated'
        >>> LatticeConfig(beam_size=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: LatticeConfig.beam_size must be >= 1, got 0
    """

    beam_size: int = 2
    num_iters: int = 20
    relevance_chain_factor: float = 0.5
    path_reset: float = 0.09
    path_scores: Literal["local", "calibrated"] = "local"
    leaf_score_weight: float = 0.5
    num_leaf_anchors: int = 10
    anchor_sampling: Literal["gmm", "softmax", "top"] = "gmm"
    internal_anchor: bool = True
    tau: float = 5.0
    calib_weight_floor: float = 0.1
    calib_bias_ridge: float = 0.01
    score_max: int = 100
    reply_format: Literal["list", "pairs"] = "list"
    omitted_score: float = 0.0
    max_candidate_chars: int = 200
    score_max_tokens: int = 256
    retries: int = 2
    mask_mode: Literal["hide", "reference"] = "hide"
    max_concurrency: int = 2
    relevance_definition: str = ""
    seed: int = 0
    shuffle_slates: bool = True

    def __post_init__(self) -> None:
        check_at_least(self, ("beam_size", "num_iters", "score_max", "max_candidate_chars", "score_max_tokens"), 1)
        if int(self.num_leaf_anchors) < 0 or int(self.retries) < 0 or int(self.max_concurrency) < 1:
            raise InvalidInputError("num_leaf_anchors and retries must be >= 0, max_concurrency >= 1")
        for name in ("relevance_chain_factor", "leaf_score_weight", "omitted_score"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise InvalidInputError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.tau <= 0:
            raise InvalidInputError(f"tau must be > 0, got {self.tau}")
        choices = {
            "path_scores": ("local", "calibrated"),
            "anchor_sampling": ("gmm", "softmax", "top"),
            "reply_format": ("list", "pairs"),
            "mask_mode": ("hide", "reference"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise InvalidInputError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> LatticeConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> LatticeConfig.from_options({"path_scores": "calibrated", "internal_anchor": "false"}).internal_anchor
            False
        """
        return config_from_options(cls, options, label="LATTICE")


_BUILD_ONLY = {f.name for f in fields(TreeBuildConfig)} - {f.name for f in fields(LatticeConfig)}
_SHARED = {f.name for f in fields(TreeBuildConfig)} & {f.name for f in fields(LatticeConfig)}


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split flat options into (tree-build options, search options, other options).

    A key both configs know (``seed``, ``retries``, ``max_concurrency``) goes to both; ``build_<name>`` forces
    the build side.

    Examples:
        >>> split_options({"max_children": 8, "beam_size": 1, "tree_dir": "t", "seed": 3})
        ({'max_children': 8, 'seed': 3}, {'beam_size': 1, 'seed': 3}, {'tree_dir': 't'})
    """
    search_keys = {f.name for f in fields(LatticeConfig)}
    build: dict[str, Any] = {}
    search: dict[str, Any] = {}
    other: dict[str, Any] = {}
    for key, value in options.items():
        if key.startswith("build_") and key[6:] in {f.name for f in fields(TreeBuildConfig)}:
            build[key[6:]] = value
        elif key in _SHARED:
            build[key] = value
            search[key] = value
        elif key in _BUILD_ONLY:
            build[key] = value
        elif key in search_keys:
            search[key] = value
        else:
            other[key] = value
    return build, search, other
