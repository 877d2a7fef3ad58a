"""One-SHOT settings: one frozen dataclass, every default with its source.

The paper ("Fishing for Answers", arXiv 2509.04820, mechanisms 1-2) publishes no code, so every choice below is an
explicit parameter; "paper" marks what the paper states, "our choice" what we decided and document here.

Settings come from three places, all through this one class: Python (``OneShotConfig(...)``), a framework edge's
scalar arguments (applied with :meth:`OneShotConfig.with_overrides`: a given argument wins over ``config=``'s field)
and ``--option key=value`` pairs (:meth:`OneShotConfig.from_options`, which coerces strings by the field's type).

Examples:
    >>> cfg = OneShotConfig(budget=2000, k_max=20)
    >>> cfg.budget, cfg.solver
    (2000, 'auto')
    >>> OneShotConfig(budget=0)
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: budget must be a positive int (tokens), got 0
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.options import config_from_options

__all__ = ["OneShotConfig", "options_to_config"]

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


@dataclass(frozen=True)
class OneShotConfig:
    """How One-SHOT selects, filters and crops chunks.

    Attributes:
        budget: token budget T_max for the selected chunks. Paper: sweeps 12k-28k tokens for a large reader LLM;
            our choice 4000 as the default because the embedded reader (SmolLM2) has an 8k context.
        k_max: cap K_max on the number of chunks (paper: "Top-K_max"; no value given). Our choice: None (only the
            budget binds); with a cap the DP gains a count dimension.
        min_relevance: chunks whose normalised relevance is below this are never selected. Our choice: 0.0 (off).
        score_normalization: how retriever scores become knapsack values. ``"rank"`` (default, our choice):
            1/(1+rank) by score (ties: input order) -- reciprocal rank, the one signal every retriever gives on a
            comparable scale; it values the head of the ranking strongly, so the knapsack does not trade a top chunk
            for several short tail chunks. ``"minmax"`` maps the pool's scores to [relevance_floor, 1];
            ``"max"`` divides by the best score (needs positive scores); ``"raw"`` uses scores as given
            (non-positive ones are never selected). The measured comparison that made ``rank`` the default is in
            ``docs/methods/oneshot.md`` ("Results"). When any score is missing (None), the pool uses 1/(1+rank)
            of the input order and the trace says so; a NaN or infinite score ranks after every finite one, which
            keep their order and this normalisation (:mod:`~retrievekit.core.oneshot.relevance`).
        relevance_floor: the value ``"minmax"`` gives the weakest candidate, so every candidate keeps a positive
            value. Our choice: 0.05.
        solver: ``"auto"`` (DP when it fits ``max_dp_cells``, else greedy), ``"dp"`` or ``"greedy"``. Paper: knapsack,
            solver unspecified; our choice: exact DP with the 1/2-approximate greedy for huge inputs.
        bucket: DP token granularity; 1 is exact, g > 1 rounds token costs up to multiples of g (never exceeds the
            budget). Our choice: 1.
        max_dp_cells: DP table size above which ``"auto"`` switches to greedy. Our choice: 5e7 (about 50 MB of
            back-pointers; 1,000 chunks at a 32k budget fit).
        per_chunk_overhead: tokens charged per chunk on top of its text (separators, headers in the final prompt).
            Our choice: 0; every chunk costs at least 1 token (so empty chunks are never free).
        tokenizer: token counter spec for :func:`~retrievekit.core.oneshot.tokens.make_token_counter`. Our choice:
            ``"regex"`` (deterministic, dependency-free, errs on the high side of cl100k; measured ratio in
            ``docs/methods/oneshot.md``); ``"tiktoken"`` for exact counts.
        dedupe_text: also drop chunks whose text duplicates an earlier (higher-ranked) chunk's. Our choice: True.
            Duplicate ids are always merged (the first, i.e. best-ranked, copy wins).
        if_nothing_fits: what to do when no chunk fits the budget: ``"empty"`` (return nothing and record why) or
            ``"raise"`` (:class:`~retrievekit.core.errors.InvalidInputError`). Our choice: ``"empty"``.
        filter: apply the rule-based chunk filter (paper mechanism 2). Our choice: False by default (it needs
            metadata); the bench method turns it on with ``filter=true``.
        crop: crop selected chunks with an LLM (paper: "LLM-based chunk cropping"). Default False (needs an LLM).
        crop_min_sentences: only chunks with at least this many sentences are sent to the LLM. Our choice: 2.
        crop_max_chunks: at most this many (most relevant) selected chunks are cropped per query, to bound LLM
            calls. Our choice: 8.
        crop_refill: after cropping, fill the freed budget with the next best uncropped chunks (one knapsack
            round). Our choice: True.
        crop_max_tokens: generation limit for one cropping reply. Our choice: 96.
        crop_judge_threshold: when the cropping LLM is a relevance judge (``score_relevance``), sentences with
            ``P(relevant)`` at least this are kept (the best one always). Our choice: 0.5, the decision threshold of
            a calibrated binary judge (the paper crops with a prompt).
        crop_shuffle_ids: number a chunk's sentences (still shown in reading order) with ids drawn from the question
            and the text, so a sentence cannot name its own id ("keep only sentence 3"). Our choice: False (with
            SmolLM2 it made cropping drop more of every passage and stopped no payload; see docs/security.md).
        max_concurrency: cropping calls in flight at once (the crops are independent). Our choice: 4 (capped by
            the LLM adapter's own ``max_concurrency``; a local in-process model runs them one by one).

    Examples:
        >>> OneShotConfig().budget
        4000
    """

    budget: int = 4000
    k_max: int | None = None
    min_relevance: float = 0.0
    score_normalization: Literal["minmax", "max", "raw", "rank"] = "rank"
    relevance_floor: float = 0.05
    solver: Literal["auto", "dp", "greedy"] = "auto"
    bucket: int = 1
    max_dp_cells: int = 50_000_000
    per_chunk_overhead: int = 0
    tokenizer: str = "regex"
    dedupe_text: bool = True
    if_nothing_fits: Literal["empty", "raise"] = "empty"
    filter: bool = False
    crop: bool = False
    crop_min_sentences: int = 2
    crop_max_chunks: int = 8
    crop_refill: bool = True
    crop_max_tokens: int = 96
    crop_judge_threshold: float = 0.5
    crop_shuffle_ids: bool = False
    max_concurrency: int = 4

    def __post_init__(self) -> None:
        def pos_int(name: str, value: object, *, allow_zero: bool = False) -> None:
            lo = 0 if allow_zero else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                kind = "non-negative" if allow_zero else "positive"
                unit = " (tokens)" if name == "budget" else ""
                raise InvalidInputError(f"{name} must be a {kind} int{unit}, got {value!r}")

        pos_int("budget", self.budget)
        if self.k_max is not None:
            pos_int("k_max", self.k_max)
        pos_int("bucket", self.bucket)
        pos_int("max_dp_cells", self.max_dp_cells)
        pos_int("per_chunk_overhead", self.per_chunk_overhead, allow_zero=True)
        pos_int("crop_min_sentences", self.crop_min_sentences)
        pos_int("crop_max_chunks", self.crop_max_chunks, allow_zero=True)
        pos_int("crop_max_tokens", self.crop_max_tokens)
        pos_int("max_concurrency", self.max_concurrency)
        if self.score_normalization not in ("minmax", "max", "raw", "rank"):
            raise InvalidInputError(
                f"score_normalization must be minmax|max|raw|rank, got {self.score_normalization!r}"
            )
        if self.solver not in ("auto", "dp", "greedy"):
            raise InvalidInputError(f"solver must be auto|dp|greedy, got {self.solver!r}")
        if self.if_nothing_fits not in ("empty", "raise"):
            raise InvalidInputError(f"if_nothing_fits must be 'empty' or 'raise', got {self.if_nothing_fits!r}")
        t = self.crop_judge_threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= float(t) <= 1.0:
            raise InvalidInputError(f"crop_judge_threshold must be a number in [0, 1], got {t!r}")
        if not 0.0 < self.relevance_floor <= 1.0:
            raise InvalidInputError(f"relevance_floor must be in (0, 1], got {self.relevance_floor!r}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> OneShotConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> cfg = OneShotConfig.from_options({"budget": "2000", "filter": "false", "k_max": "none"})
            >>> cfg.budget, cfg.filter, cfg.k_max
            (2000, False, None)
            >>> OneShotConfig.from_options({"budgt": 10})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: unknown OneShotConfig option(s): budgt (did you mean budget?); known: budget, ...
        """
        return config_from_options(cls, options)

    @classmethod
    def of(cls, value: OneShotConfig | Mapping[str, Any] | None) -> OneShotConfig | None:
        """The one reading of an edge's ``config=``: a ``OneShotConfig`` as is, a mapping of its fields through
        :meth:`from_options` (unknown names refused), ``None`` as ``None``; anything else is refused with
        :class:`~retrievekit.core.errors.InvalidInputError`.

        Examples:
            >>> OneShotConfig.of({"budget": 6}).budget
            6
            >>> OneShotConfig.of({"bogus": 6})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: unknown OneShotConfig option(s): bogus; known: budget, ...
            >>> OneShotConfig.of(6)
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: config must be a OneShotConfig or a mapping of its fields, got int
        """
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls.from_options(value)
        raise InvalidInputError(
            f"config must be a OneShotConfig or a mapping of its fields, got {type(value).__name__}"
        )

    def with_overrides(self, **overrides: Any) -> OneShotConfig:
        """This config with ``overrides`` applied: the one settings rule of the LlamaIndex and LangChain edges.

        A setting given explicitly (an edge's scalar argument such as ``budget=``) wins over the same field of the
        ``config=`` it is combined with; fields not given keep the config's value. The copy is made with
        ``dataclasses.replace``, so it is validated like any config. Unknown names raise
        :class:`~retrievekit.core.errors.InvalidInputError` naming them; without overrides ``self`` is returned.

        Examples:
            >>> base = OneShotConfig(budget=200, filter=True)
            >>> cfg = base.with_overrides(budget=1000)
            >>> cfg.budget, cfg.filter, base.budget
            (1000, True, 200)
            >>> base.with_overrides() is base
            True
            >>> base.with_overrides(budgt=1000)
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: unknown OneShotConfig setting(s): budgt; known: budget, ...
        """
        if not overrides:
            return self
        known = [f.name for f in fields(self)]
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise InvalidInputError(
                f"unknown OneShotConfig setting(s): {', '.join(unknown)}; known: {', '.join(known)}"
            )
        return replace(self, **overrides)


def options_to_config(cls: type[C], options: Mapping[str, Any]) -> C:
    """Deprecated: use :func:`~retrievekit.core.options.config_from_options` (or ``OneShotConfig.from_options``).

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     options_to_config(OneShotConfig, {"budget": "2000"}).budget
        2000
    """
    warnings.warn(
        "retrievekit.core.oneshot.config.options_to_config is deprecated: use "
        "retrievekit.core.options.config_from_options or OneShotConfig.from_options",
        DeprecationWarning,
        stacklevel=2,
    )
    return config_from_options(cls, options)
