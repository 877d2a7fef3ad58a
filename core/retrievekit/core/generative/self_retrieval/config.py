"""Self-Retrieval settings: prompt templates, data-building modes and decoding/scoring defaults.

Every default cites its source: the reference code (``icip-cas/SelfRetrieval``: ``data_preprocess/`` builds the
training data with ``mem_dataset.py``, ``add_neg_data.py``, ``qa_dataset.py`` and ``configs/config1.json``;
``evaluation/predict.py`` decodes; ``evaluation/get_retrieve_from_generation.py`` scores) or the paper
(arXiv 2403.00801). Fields marked "ours" are choices this package makes where neither says anything.

Examples:
    >>> cfg = SelfRetrievalConfig()
    >>> cfg.title_beams, cfg.passage_beams, cfg.tau, cfg.delta
    (5, 10, 0.4, 0.4)
    >>> cfg.query_prompt.format(query="why?")
    'Question: why?\\n\\n Related document title: '
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.options import check_at_least, config_from_options

__all__ = ["MATCH_SETTINGS", "SelfRetrievalConfig"]

QUERY_PROMPT = "Question: {query}\n\n Related document title: "
CANDIDATES_PROMPT = "Question: {query}\n\n Candidate document titles:\n{candidates}\n\n Related document title: "
CONTENT_SEPARATOR = "\n Related document content: "
ANSWER_PROMPT = "\n\n Final answer:"
REJECTION = " cannot extract answer"
APPROVAL = " the document answers the question"

MATCH_SETTINGS: tuple[str, ...] = (
    "query_prompt",
    "content_separator",
    "answer_prompt",
    "rejection_response",
    "lowercase_titles",
    "max_passage_words",
    "untitled_title_chars",
)
"""Config fields a trained model depends on: stored in its manifest and checked when a retriever loads it."""


@dataclass(frozen=True)
class SelfRetrievalConfig:
    """Self-Retrieval settings (data building, decoding and scoring).

    Attributes:
        query_prompt: model input before a title, ``{query}`` is replaced (reference training data and
            ``predict.py``: ``Question: {q}\\n\\n Related document title: ``).
        candidates_prompt: input of the "query + candidate titles" instances (reference ``configs/config1.json``,
            configs 2-4).
        content_separator: text between a title and its passage (reference training data and trie:
            ``\\n Related document content: ``).
        answer_prompt: text after a passage, before the assessment response (reference training data and
            ``predict.py``: ``\\n\\n Final answer:``).
        rejection_response: the fixed rejection response whose likelihood scores a passage (reference training
            data and ``predict.py``: ``cannot extract answer``, with the space the template puts after
            ``answer:``; paper §3.4).
        approval_response: response trained after a gold passage when a query pair has no answer (ours: the
            reference trains the gold answer of the QA pair; retrieval datasets such as SciFact have none).
        lowercase_titles: titles are lower-cased in training data and the trie (reference
            ``mem_dataset.py --lower_title``).
        untitled_title_chars: length cap of the first-sentence title of an untitled document (ours, as MindRef).
        max_passage_words: documents are split into passages of at most this many words (paper §5.1: KILT
            passages of at most 200 words, as the reference data ships them).
        index_mode: ``"full"``: an indexing instance's target is title + whole passage; ``"prefix"``: title + the
            first ``prefix_words`` words (reference ``mem_dataset.py --tile_and_prefix_only``).
        prefix_words: words of the passage prefix in ``"prefix"`` mode and in the QA prefix instances (reference
            ``mem_dataset.py`` and ``config1.json``: 10 words).
        min_sentence_words: shortest sentence used as an indexing input (reference ``mem_dataset.py``: 5 words).
        max_sentence_words: longest sentence used as an indexing input (reference ``mem_dataset.py``: 50 words).
        random_sent_num: sentences sampled per passage (reference ``mem_dataset.py --random_sent_num``: ``mem_3``
            uses 20); ``None`` uses every sentence (``mem_all``, the reference's stage-1 data, our default).
        neg_num: rejection negatives per query pair (reference ``add_neg_data.py --neg_num 5``, as its README runs
            it).
        qa_repeat_times: repeats of the query data in the mixture (reference ``qa_dataset.py --qa_repeat_times 2``).
        candidate_titles: titles listed in a "candidate titles" instance, gold included (paper §5.2 and reference
            ``config1.json``: 10); 0 disables those instances.
        title_beams: beams of the title stage (reference ``predict.py --beam_num_for_title 5``; paper §5.2).
        passage_beams: first-token beams of the passage stage per title (reference
            ``predict.py --beam_num_for_chunk 10``; paper §5.2).
        max_title_tokens: token cap of a title in the trie (ours; longer titles are cut, counted).
        max_passage_tokens: tokens of a passage kept in the trie and in the self-assessment input (reference
            ``predict.py`` caps the greedy continuation at 256 tokens); the returned passage text is always the
            full passage.
        tau: title temperature of ``S^T`` (paper §3.4; reference ``get_retrieve_from_generation.py``: 0.4).
        delta: passage temperature of ``S^P`` (paper §3.4; reference ``get_retrieve_from_generation.py``: 0.4).
        top_k: candidates kept after scoring (reference ``get_retrieve_from_generation.py``: top 50).
        hit_level: ``"passage"``: one hit per passage (id ``{doc_id}`` or ``{doc_id}#p{i}``); ``"document"``: the best
            passage per document, id = document id, for document-level qrels (ours; ``retrievekit bench`` uses it).
        assess_batch_size: self-assessment forward passes per batch (reference ``predict.py``: batches of 12).
        seed: seed of every sampling step of the data builders (ours).

    Examples:
        >>> SelfRetrievalConfig(index_mode="prefix").index_mode
        'prefix'
        >>> SelfRetrievalConfig(tau=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: SelfRetrievalConfig.tau must be > 0, got 0
    """

    query_prompt: str = QUERY_PROMPT
    candidates_prompt: str = CANDIDATES_PROMPT
    content_separator: str = CONTENT_SEPARATOR
    answer_prompt: str = ANSWER_PROMPT
    rejection_response: str = REJECTION
    approval_response: str = APPROVAL
    lowercase_titles: bool = True
    untitled_title_chars: int = 100
    max_passage_words: int = 200
    index_mode: Literal["full", "prefix"] = "full"
    prefix_words: int = 10
    min_sentence_words: int = 5
    max_sentence_words: int = 50
    random_sent_num: int | None = None
    neg_num: int = 5
    qa_repeat_times: int = 2
    candidate_titles: int = 10
    title_beams: int = 5
    passage_beams: int = 10
    max_title_tokens: int = 64
    max_passage_tokens: int = 256
    tau: float = 0.4
    delta: float = 0.4
    top_k: int = 50
    hit_level: Literal["passage", "document"] = "passage"
    assess_batch_size: int = 12
    seed: int = 0

    def __post_init__(self) -> None:
        positive = (
            "untitled_title_chars",
            "max_passage_words",
            "prefix_words",
            "min_sentence_words",
            "max_sentence_words",
            "qa_repeat_times",
            "title_beams",
            "passage_beams",
            "max_title_tokens",
            "max_passage_tokens",
            "top_k",
            "assess_batch_size",
        )
        check_at_least(self, positive, 1)
        check_at_least(self, ("neg_num", "candidate_titles"), 0)
        if self.random_sent_num is not None and self.random_sent_num < 1:
            raise InvalidInputError(f"random_sent_num must be >= 1 or None, got {self.random_sent_num}")
        for name in ("tau", "delta"):
            if not float(getattr(self, name)) > 0:
                raise InvalidInputError(f"SelfRetrievalConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.min_sentence_words > self.max_sentence_words:
            raise InvalidInputError("min_sentence_words must be <= max_sentence_words")
        if self.index_mode not in ("full", "prefix"):
            raise InvalidInputError(f"index_mode must be 'full' or 'prefix', got {self.index_mode!r}")
        if self.hit_level not in ("passage", "document"):
            raise InvalidInputError(f"hit_level must be 'passage' or 'document', got {self.hit_level!r}")
        if "{query}" not in self.query_prompt or "{query}" not in self.candidates_prompt:
            raise InvalidInputError("query_prompt and candidates_prompt must contain '{query}'")
        if "{candidates}" not in self.candidates_prompt:
            raise InvalidInputError("candidates_prompt must contain '{candidates}'")
        if not self.rejection_response.strip():
            raise InvalidInputError("rejection_response must not be empty")

    def match_settings(self) -> dict[str, Any]:
        """The settings a trained model depends on (stored in its manifest, compared at load time).

        Examples:
            >>> SelfRetrievalConfig().match_settings()["lowercase_titles"]
            True
        """
        d = asdict(self)
        return {k: d[k] for k in MATCH_SETTINGS}

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> SelfRetrievalConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> SelfRetrievalConfig.from_options({"title_beams": "3", "lowercase_titles": "false"}).title_beams
            3
            >>> SelfRetrievalConfig.from_options({"nope": 1})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: unknown Self-Retrieval option(s): nope; known: ...
        """
        return config_from_options(cls, options, label="Self-Retrieval")
