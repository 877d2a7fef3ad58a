"""Hybrid retrieval: fuse the rankings of several retrievers (weighted scores or reciprocal-rank fusion).

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.index.bm25 import BM25Index
    >>> corpus = [Passage(id="a", text="solar power"), Passage(id="b", text="wind power")]
    >>> h = HybridRetriever([BM25Index.build(corpus), BM25Index.build(corpus)], fusion="rrf")
    >>> h.search("solar", k=1)[0].id
    'a'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.awaited import awaited_search
from retrievekit.core.retriever import ClosesOnExit, Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["FusionConfig", "HybridRetriever", "check_weights", "fuse"]


@dataclass(frozen=True)
class FusionConfig:
    """How to fuse rankings.

    Attributes:
        fusion: "rrf" (reciprocal-rank fusion, Cormack et al. 2009: parameter-free and robust to score scales)
            or "weighted" (sum of weight × max-normalised score, the scheme ARM uses for 0.9·dense + 0.1·BM25).
        rrf_k: the RRF constant; 60 is the value of Cormack et al. 2009.
        candidate_k: how many hits each retriever contributes before fusion (at least the requested k).

    Examples:
        >>> FusionConfig().rrf_k
        60
        >>> FusionConfig(rrf_k=-1)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: rrf_k must be an int >= 0 (60 in Cormack et al. 2009), got -1
    """

    fusion: Literal["rrf", "weighted"] = "rrf"
    rrf_k: int = 60
    candidate_k: int = 100

    def __post_init__(self) -> None:
        if self.fusion not in ("rrf", "weighted"):
            raise InvalidInputError(f"unknown fusion {self.fusion!r}; use 'rrf' or 'weighted'")
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, int) or self.rrf_k < 0:
            raise InvalidInputError(f"rrf_k must be an int >= 0 (60 in Cormack et al. 2009), got {self.rrf_k!r}")
        if isinstance(self.candidate_k, bool) or not isinstance(self.candidate_k, int) or self.candidate_k < 1:
            raise InvalidInputError(f"candidate_k must be a positive int, got {self.candidate_k!r}")


def check_weights(weights: Sequence[float], n: int) -> list[float]:
    """``n`` fusion weights as floats: finite and non-negative, or :class:`InvalidInputError`.

    Examples:
        >>> check_weights([1, 0.5], 2)
        [1.0, 0.5]
        >>> check_weights([float("nan"), 1.0], 2)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: weights must be finite numbers >= 0, one per retriever; got [nan, 1.0]
    """
    try:
        out = [float(w) for w in weights]
    except (TypeError, ValueError):
        raise InvalidInputError(f"weights must be numbers, got {list(weights)!r}") from None
    if len(out) != n or any(isinstance(w, bool) for w in weights) or not all(math.isfinite(w) and w >= 0 for w in out):
        raise InvalidInputError(f"weights must be finite numbers >= 0, one per retriever; got {list(weights)!r}")
    return out


def fuse(
    rankings: Sequence[Sequence[ScoredHit]],
    weights: Sequence[float],
    k: int,
    config: FusionConfig = FusionConfig(),
) -> list[ScoredHit]:
    """Fuse ranked hit lists into one ranking of ``k`` hits (ties broken by first appearance).

    Weighted fusion max-normalises each list (score / max score; lists whose
    best score is not positive are shifted to be) before weighting.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> a, b = Passage(id="a", text="x"), Passage(id="b", text="y")
        >>> r1 = [ScoredHit(a, 2.0, 0), ScoredHit(b, 1.0, 1)]
        >>> r2 = [ScoredHit(b, 0.9, 0)]
        >>> [h.id for h in fuse([r1, r2], [0.5, 0.5], k=2, config=FusionConfig(fusion="weighted"))]
        ['b', 'a']
    """
    if len(rankings) != len(weights):
        raise InvalidInputError("need one weight per ranking")
    weights = check_weights(weights, len(rankings))
    total: dict[str, float] = {}
    objs: dict[str, DataObject] = {}
    first_seen: dict[str, int] = {}
    order = 0
    for hits, w in zip(rankings, weights, strict=True):
        if not hits:
            continue
        if config.fusion == "weighted":
            scores = [h.score for h in hits]
            lo, hi = min(scores), max(scores)
            shift = -lo if hi <= 0 or lo < 0 else 0.0
            top = hi + shift
            norm = [(s + shift) / top if top > 0 else 1.0 for s in scores]
        elif config.fusion == "rrf":
            norm = [1.0 / (config.rrf_k + r + 1) for r in range(len(hits))]
        else:
            raise InvalidInputError(f"unknown fusion {config.fusion!r}; use 'rrf' or 'weighted'")
        for h, s in zip(hits, norm, strict=True):
            total[h.id] = total.get(h.id, 0.0) + w * s
            objs.setdefault(h.id, h.obj)
            if h.id not in first_seen:
                first_seen[h.id] = order
                order += 1
    ranked = sorted(total, key=lambda i: (-total[i], first_seen[i]))[:k]
    return [ScoredHit(obj=objs[i], score=total[i], rank=r) for r, i in enumerate(ranked)]


class HybridRetriever(ClosesOnExit):
    """Fuses any retrievers (BM25 + dense by default in ``retrievekit bench --method hybrid``).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> bm = BM25Index.build([Passage(id="a", text="tea")])
        >>> HybridRetriever([bm], weights=[1.0]).search("tea")[0].id
        'a'
    """

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        weights: Sequence[float] | None = None,
        *,
        fusion: Literal["rrf", "weighted"] = "rrf",
        config: FusionConfig | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        if not retrievers:
            raise InvalidInputError("HybridRetriever needs at least one retriever")
        self.retrievers = list(retrievers)
        self.weights = check_weights(weights if weights is not None else [1.0] * len(self.retrievers), len(retrievers))
        self.config = config or FusionConfig(fusion=fusion)
        self.names = list(names) if names else [type(r).__name__ for r in self.retrievers]

    def close(self) -> None:
        """Close the retrievers it fuses that hold resources (e.g. a :class:`DenseIndex`'s Chroma client).

        Also ``with HybridRetriever(...) as h:``. Retrievers without ``close`` are left as they are.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.index.bm25 import BM25Index
            >>> with HybridRetriever([BM25Index.build([Passage(id="a", text="tea")])]) as h:
            ...     h.search("tea")[0].id
            'a'
        """
        for r in self.retrievers:
            close = getattr(r, "close", None)
            if callable(close):
                close()

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Search each retriever for ``max(k, candidate_k)`` hits and fuse.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.index.bm25 import BM25Index
            >>> HybridRetriever([BM25Index.build([Passage(id="a", text="tea")])]).search("coffee")
            []
        """
        n, trace = self._plan(query, k, trace)
        rankings = []
        with trace.stage("hybrid"):
            for name, r in zip(self.names, self.retrievers, strict=True):
                with trace.stage(f"hybrid.{name}"):
                    rankings.append(r.search(query, n, trace=trace))
            return fuse(rankings, self.weights, k, self.config)

    async def asearch(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """:meth:`search` awaited: each retriever's ``asearch`` awaited where it has one (a dense index: its query
        embedding awaited for an async embedder), the others off the loop; the same fused hits.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.index.bm25 import BM25Index
            >>> [h.id for h in asyncio.run(HybridRetriever([BM25Index.build([Passage(id="a", text="tea")])]).asearch("tea"))]
            ['a']
        """
        n, trace = self._plan(query, k, trace)
        rankings = []
        with trace.stage("hybrid"):
            for name, r in zip(self.names, self.retrievers, strict=True):
                with trace.stage(f"hybrid.{name}"):
                    rankings.append(await awaited_search(r, query, n, trace))
            return fuse(rankings, self.weights, k, self.config)

    def _plan(self, query: str, k: int, trace: Trace | None) -> tuple[int, Trace]:
        """What :meth:`search` and :meth:`asearch` check and settle first: the candidates to ask each retriever for
        (``max(k, candidate_k)``) and the trace to write (a new one when none is given)."""
        check_query(query)
        check_k(k)
        return max(k, self.config.candidate_k), trace if trace is not None else Trace()
