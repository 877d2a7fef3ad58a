"""The embedding-cosine judge (``retrievekit bench --judge cosine``): ``P(relevant) = (1 + cos(query, text)) / 2``.

No training and no language model: a sentence embedder (MiniLM by default, the dense baseline's) scores every
candidate against the query. It is the cheapest real judge, a point to place beside the trained and zero-shot
judges on an accuracy-vs-quality curve (its measured AUC lands in the benchmark result's ``judge`` block). Free-text
requests (ARM keywords, a new LATTICE tree) go to a base chat model
(:class:`~retrievekit.core.llm.delegate.ChatDelegate`).

Examples:
    >>> import numpy as np
    >>> class Axes:
    ...     def embed_query(self, text): return np.array([1.0, 0.0])
    ...     def embed_documents(self, texts): return np.array([[1.0, 0.0] if "sun" in t else [0.0, 1.0] for t in texts])
    >>> CosineJudge(Axes()).score_relevance("solar", ["sun power", "rain"])
    [1.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrievekit.core.checks import check_query
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.llm.delegate import ChatDelegate
from retrievekit.core.trace import Trace

__all__ = ["CosineJudge"]


class CosineJudge(ChatDelegate):
    """A relevance judge from embedding cosine, mapped from ``[-1, 1]`` to ``[0, 1]``.

    Args:
        embedder: anything with ``embed_query(text)`` and ``embed_documents(texts)`` (None: MiniLM, loaded on the
            first call).
        base: a chat model for free-text requests; ``load_base``: called once on the first one when ``base`` is None.

    Examples:
        >>> CosineJudge().score_relevance("aspirin", ["Aspirin relieves pain.", "Rome"])  # needs all-MiniLM-L6-v2  # doctest: +SKIP
        [0.87..., 0.61...]
    """

    judge_name = "cosine"

    def __init__(self, embedder: Any = None, *, base: Any = None, load_base: Callable[[], Any] | None = None) -> None:
        self.embedder = as_embedder(embedder, where="CosineJudge")
        self.base = base
        self.load_base = load_base
        # fixed here, not read from the embedder later: the default MiniLM loads on the first call, and a record
        # file compares this repr across runs (``advise``'s resume)
        self._label = type(self.embedder).__name__ if self.embedder is not None else "MiniLM"

    def __repr__(self) -> str:
        """``CosineJudge(<embedder type>)``, the same before and after the default embedder loads.

        Examples:
            >>> j = CosineJudge(); before = repr(j); _ = j.score_relevance("q", ["a"])  # doctest: +SKIP
            >>> repr(j) == before  # doctest: +SKIP
            True
        """
        return f"CosineJudge({self._label})"

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """``(1 + cos) / 2`` of each candidate with the query, in input order.

        Examples:
            >>> CosineJudge().score_relevance("q", [])
            []
        """
        q = check_query(query)
        if not candidates:
            return []
        if self.embedder is None:
            from retrievekit.core.index.embeddings import MiniLMEmbedder

            self.embedder = MiniLMEmbedder.default()
        qv = np.asarray(self.embedder.embed_query(q), dtype=np.float64).reshape(-1)
        dv = np.asarray(self.embedder.embed_documents([str(c) for c in candidates]), dtype=np.float64)
        qv = qv / (np.linalg.norm(qv) or 1.0)
        dv = dv / np.maximum(np.linalg.norm(dv, axis=1, keepdims=True), 1e-12)
        return [float(min(max((1.0 + c) / 2.0, 0.0), 1.0)) for c in dv @ qv]
