"""MindRef's settings, model and stage-1 result: :class:`MindRefConfig`, :func:`scoring_lm`, :class:`TitleHit`,
and :func:`first_sentence_title` (the title of an untitled document). :mod:`retrievekit.core.generative.mindref`
re-exports them.

Examples:
    >>> MindRefConfig(title_beams=4).title_beams, first_sentence_title("Tea is a drink. It is hot.")
    (4, 'Tea is a drink.')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.suffix_array import DEFAULT_MAX_TOKENS
from retrievekit.core.llm.protocol import ScoringLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.options import check_at_least, config_from_options
from retrievekit.core.types import DataObject

__all__ = [
    "PASSAGE_PROMPT",
    "TITLE_PROMPT",
    "MindRefConfig",
    "TitleHit",
    "document_title",
    "first_sentence_title",
    "scoring_lm",
]

TITLE_PROMPT = "Question: {query}\n\nThe Wikipedia article corresponding to the above question is:\n\nTitle:"
PASSAGE_PROMPT = "Question: {query}\n\nThe Wikipedia paragraph to answer the above question is:\n\nAnswer:"


@dataclass(frozen=True)
class MindRefConfig:
    """MindRef settings; defaults are the reference code's (``www-Ye/MindRef``, ``src/llm2gr.py`` run by ``run.sh``).

    Attributes:
        title_beams: beams of the title search (``run.sh``: ``--title_gen_beams 15``).
        title_return: distinct titles kept (``run.sh``: ``--title_return_nums 2``).
        title_max_new_tokens: token cap of a title (reference code: max 64 new tokens). A beam cut off by the
            cap still counts when its prefix leads to exactly one title (it is resolved to that title).
        passage_beams: beams of the prefix search (``run.sh``: ``--re_beams 10``).
        prefix_tokens: length of the generated passage prefix (``run.sh``: ``--gen_len 16``).
        passage_tokens: passage length from the located prefix, forward (reference code: 150 tokens).
        lam: weight of the title score, ``score = lam * title + (1 - lam) * passage`` (``run.sh``:
            ``--lam 0.9``).
        length_penalty: exponent of the length normalisation of both scores (HF ``sequences_scores``: 1.0).
        title_prompt: stage-1 prompt, ``{query}`` is replaced (reference code, the NQ/HotpotQA wording).
        passage_prompt: stage-2 prompt (reference code).
        title_prefix: text put before a title when it is tokenized (the model continues ``"Title:"``, so titles
            are encoded as ``" " + title``).
        passage_prefix: text put before a document when it is tokenized for the suffix array.
        untitled: title of a document without one: ``"first_sentence"`` (its first sentence, cut to
            ``title_max_chars``), ``"llm"`` (the LM writes one; needs a ``complete`` method) or ``"id"``.
        title_max_chars: cap on derived titles.
        passages_per_document: passages kept per document; the best keeps the document id, others get
            ``"{id}#tok{start}"``.
        max_sa_tokens: cap on the per-query suffix array (:class:`SuffixArrayTooLargeError` above it).
        widen_to_k: when ``k`` exceeds the hits of the best ``title_return`` titles, recall passages in the next
            titles of the same title search (then more passages per document) until there are ``k`` (ours; the
            paper returns ``title_return`` documents; see the module docstring). False: the paper's output only.

    Examples:
        >>> MindRefConfig().title_beams, MindRefConfig(lam=0.5).lam
        (15, 0.5)
        >>> MindRefConfig.from_options({"title_beams": 4, "nope": 1})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown MindRef option(s): nope; known: ...
    """

    title_beams: int = 15
    title_return: int = 2
    title_max_new_tokens: int = 64
    passage_beams: int = 10
    prefix_tokens: int = 16
    passage_tokens: int = 150
    lam: float = 0.9
    length_penalty: float = 1.0
    title_prompt: str = TITLE_PROMPT
    passage_prompt: str = PASSAGE_PROMPT
    title_prefix: str = " "
    passage_prefix: str = " "
    untitled: Literal["first_sentence", "llm", "id"] = "first_sentence"
    title_max_chars: int = 100
    passages_per_document: int = 1
    max_sa_tokens: int = DEFAULT_MAX_TOKENS
    widen_to_k: bool = True

    def __post_init__(self) -> None:
        positive = ("title_beams", "title_return", "title_max_new_tokens", "passage_beams", "prefix_tokens")
        check_at_least(self, positive, 1)
        check_at_least(self, ("passage_tokens", "title_max_chars", "passages_per_document", "max_sa_tokens"), 1)
        if self.title_return > self.title_beams:
            raise InvalidInputError(f"title_return ({self.title_return}) must be <= title_beams ({self.title_beams})")
        if not 0.0 <= self.lam <= 1.0:
            raise InvalidInputError(f"lam must be in [0, 1], got {self.lam}")
        if self.untitled not in ("first_sentence", "llm", "id"):
            raise InvalidInputError(f"untitled must be 'first_sentence', 'llm' or 'id', got {self.untitled!r}")
        for name in ("title_prompt", "passage_prompt"):
            if "{query}" not in getattr(self, name):
                raise InvalidInputError(f"{name} must contain '{{query}}'")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> MindRefConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> MindRefConfig.from_options({"title_beams": "4", "lam": 1}).title_beams
            4
            >>> MindRefConfig.from_options({"widen_to_k": "false"}).widen_to_k
            False
        """
        return config_from_options(cls, options, label="MindRef")


@dataclass(frozen=True)
class TitleHit:
    """A stage-1 result: a generated title (a real one), its score and the documents that carry it.

    Examples:
        >>> TitleHit(title="Aspirin", token_ids=(5,), score=-0.5, documents=(0,)).documents
        (0,)
    """

    title: str
    token_ids: tuple[int, ...]
    score: float
    documents: tuple[int, ...]
    truncated: bool = False


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def first_sentence_title(text: str, max_chars: int = 100) -> str:
    """A title for an untitled document: its first sentence, cut at a word boundary to ``max_chars``.

    Examples:
        >>> first_sentence_title("Aspirin thins the blood. It also relieves pain.")
        'Aspirin thins the blood.'
        >>> first_sentence_title("a b c d e f", max_chars=5)
        'a b c'
    """
    first = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0].strip()
    if len(first) <= max_chars:
        return first
    cut = first[: max_chars + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut[:max_chars]).strip()


def document_title(
    obj: DataObject, config: MindRefConfig, lm: Any = None, title_fn: Callable[[DataObject], str] | None = None
) -> str:
    """The title MindRef gives a document: its own (``title`` or ``metadata["title"]``), else ``title_fn``'s, else
    as ``config.untitled`` says (its first sentence, the LM's title, or its id), cut to ``config.title_max_chars``.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> document_title(Passage(id="a", text="Tea is a drink. It is hot."), MindRefConfig())
        'Tea is a drink.'
        >>> document_title(Passage(id="a", text="x", metadata={"title": "Tea"}), MindRefConfig())
        'Tea'
    """
    title = obj.title.strip() or str(obj.metadata.get("title") or "").strip()
    if title:
        return title
    if title_fn is not None:
        title = str(title_fn(obj)).strip()
    elif config.untitled == "first_sentence":
        title = first_sentence_title(obj.text, config.title_max_chars)
    elif config.untitled == "llm":
        complete = getattr(lm, "complete", None)
        if complete is None:
            raise InvalidInputError("untitled='llm' needs an LM with a complete() method (e.g. LocalLM)")
        reply = complete(f"Write a short title for this text:\n\n{obj.text[:2000]}\n\nTitle:", max_tokens=24)
        title = first_sentence_title(str(getattr(reply, "text", reply)).strip().strip('"'), 200)
    return title[: config.title_max_chars].strip() or obj.id


def scoring_lm(llm: Any) -> ScoringLM:
    """``llm`` resolved (:func:`~retrievekit.core.llm.resolve.resolve_llm`: a local model's name, default
    :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`, or a model object) and checked to be the scoring LM MindRef
    decodes with; a chat model (served, LangChain, LlamaIndex) is an :class:`InvalidInputError`.

    Examples:
        >>> from retrievekit.core.fakes import WordScoreLLM
        >>> scoring_lm(WordScoreLLM("tea"))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: MindRef needs a scoring LM (e.g. LocalLM.load(...)), got WordScoreLLM
    """
    lm = resolve_llm(llm)
    if not isinstance(lm, ScoringLM):
        raise InvalidInputError(f"MindRef needs a scoring LM (e.g. LocalLM.load(...)), got {type(lm).__name__}")
    return lm
