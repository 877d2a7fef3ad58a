"""What One-SHOT takes and gives: ranked candidates (:class:`Candidate`, :func:`as_candidates`) and the selected
chunks with their budget (:class:`SelectedChunk`, :class:`OneShotResult`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Union

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.trace import Trace
from retrievekit.core.types import (
    DataObject,
    Passage,  # noqa: F401  (the examples use it)
    ScoredHit,
)

__all__ = ["Candidate", "CandidateLike", "OneShotResult", "SelectedChunk", "as_candidates"]

CandidateLike = Union["Candidate", ScoredHit, tuple[DataObject, float | None], DataObject]


@dataclass(frozen=True)
class Candidate:
    """A pool entry: the object and its retriever score (``None`` when the retriever gave none).

    Examples:
        >>> Candidate(Passage(id="a", text="x")).score is None
        True
    """

    obj: DataObject
    score: float | None = None


def as_candidates(items: Iterable[CandidateLike]) -> list[Candidate]:
    """Normalise hits, ``(object, score)`` pairs and bare objects to :class:`Candidate` (input order kept).

    Examples:
        >>> [c.score for c in as_candidates([(Passage(id="a", text="x"), 2.0), Passage(id="b", text="y")])]
        [2.0, None]
    """
    out: list[Candidate] = []
    for it in items:
        if isinstance(it, Candidate):
            out.append(it)
        elif isinstance(it, ScoredHit):
            out.append(Candidate(it.obj, it.score))
        elif isinstance(it, tuple) and len(it) == 2:
            obj, score = it
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
                raise InvalidInputError(f"score of {getattr(obj, 'id', obj)!r} must be a number or None, got {score!r}")
            out.append(Candidate(obj, None if score is None else float(score)))
        else:
            out.append(Candidate(it, None))
        if not hasattr(out[-1].obj, "id") or not hasattr(out[-1].obj, "text"):
            raise InvalidInputError(f"candidates must be retrievekit objects, got {type(out[-1].obj).__name__}")
    return out


@dataclass(frozen=True)
class SelectedChunk:
    """One selected chunk.

    Attributes:
        obj: the object (a cropped copy when ``cropped``; ``metadata['oneshot_original_tokens']`` then set).
        score: the retriever's score (None when it gave none).
        relevance: the knapsack value it was selected with.
        tokens: tokens charged against the budget (after cropping).
        origin: ``"knapsack"``, ``"add:<rule>"`` or ``"refill"``.
        cropped: whether the LLM removed sentences.

    Examples:
        >>> SelectedChunk(Passage(id="a", text="x"), 1.0, 1.0, 1, "knapsack").id
        'a'
    """

    obj: DataObject
    score: float | None
    relevance: float
    tokens: int
    origin: str
    cropped: bool = False

    @property
    def id(self) -> str:
        """The object's id."""
        return self.obj.id


@dataclass
class OneShotResult:
    """What :meth:`OneShotSelector.select` returns.

    Attributes:
        chunks: selected chunks, relevance desc (ties: input rank).
        budget: the token budget used.
        tokens_used: sum of the chunks' tokens (<= budget).
        algorithm: the knapsack solver of the final selection and its guarantee, e.g. ``"dp (optimal)"``.
        dropped: ``(id, reason)`` for every candidate removed (duplicates, filter drops).
        trace: the per-query trace (also holds every decision as an event).

    Examples:
        >>> OneShotResult([], 100, 0, "empty", [], Trace()).ids
        []
    """

    chunks: list[SelectedChunk]
    budget: int
    tokens_used: int
    algorithm: str
    dropped: list[tuple[str, str]]
    trace: Trace = field(default_factory=Trace)

    @property
    def ids(self) -> list[str]:
        """Ids of the selected chunks, in order."""
        return [c.id for c in self.chunks]

    def hits(self) -> list[ScoredHit]:
        """The selection as ranked hits (score = relevance), for retriever-style consumers.

        Examples:
            >>> OneShotResult([], 1, 0, "empty", []).hits()
            []
        """
        return [ScoredHit(obj=c.obj, score=c.relevance, rank=i) for i, c in enumerate(self.chunks)]
