"""The retriever protocol every method implements: ``search(query, k, trace=None) -> list[ScoredHit]``, and
:class:`ClosesOnExit`, the ``with`` block of an index that holds resources until its ``close()``.

The rest of what used to live here has a module of its own: input checks in :mod:`retrievekit.core.checks`, option
parsing in :mod:`retrievekit.core.options`, the method registry in :mod:`retrievekit.core.registry` and the
relevance-judge hook in :mod:`retrievekit.core.llm.judge_hooks`. Importing those names from here still works for one
release, with a :class:`DeprecationWarning`.

Examples:
    >>> from retrievekit.core.index.bm25 import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> isinstance(BM25Index.build([Passage(id="a", text="red apples")]), Retriever)
    True
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Protocol, Self, runtime_checkable

from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit

__all__ = ["ClosesOnExit", "Retriever", "search_with_trace"]


@runtime_checkable
class Retriever(Protocol):
    """Anything that returns scored hits for a query.

    Examples:
        >>> class Const:
        ...     def search(self, query, k=10, *, trace=None):
        ...         return []
        >>> isinstance(Const(), Retriever)
        True
    """

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Return at most ``k`` hits, best first."""
        ...


def search_with_trace(retriever: Retriever, query: str, k: int = 10) -> tuple[list[ScoredHit], Trace]:
    """Search and return the hits with this call's own :class:`~retrievekit.core.trace.Trace` (its ``query`` set).

    The trace is made for this call and handed back with the hits, so concurrent callers of one retriever never
    see each other's (the framework edges' ``retrieve_with_trace`` / ``invoke_with_trace`` do the same for theirs).

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> hits, trace = search_with_trace(BM25Index.build([Passage(id="a", text="red apples")]), "apples", 1)
        >>> [h.obj.id for h in hits], trace.query, "bm25" in trace.stage_seconds
        (['a'], 'apples', True)
    """
    trace = Trace(query=query)
    return retriever.search(query, k, trace=trace), trace


class ClosesOnExit:
    """A ``with`` block for an object that holds resources until its ``close()`` (a client, open files, a store):
    entering gives the object, leaving closes it, on an error too. A subclass defines ``close``.

    Examples:
        >>> class Held(ClosesOnExit):
        ...     closed = False
        ...     def close(self): self.closed = True
        >>> with Held() as held:
        ...     held.closed
        False
        >>> held.closed
        True
    """

    def close(self) -> None:
        """Release what the object holds (each subclass's own)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_MOVED = {
    "check_corpus": "retrievekit.core.checks",
    "check_k": "retrievekit.core.checks",
    "check_query": "retrievekit.core.checks",
    "option_bool": "retrievekit.core.options",
    "METHOD_ENTRY_POINT_GROUP": "retrievekit.core.registry",
    "MethodContext": "retrievekit.core.registry",
    "MethodFactory": "retrievekit.core.registry",
    "available_methods": "retrievekit.core.registry",
    "build_method": "retrievekit.core.registry",
    "register_method": "retrievekit.core.registry",
    "judge_from_options": "retrievekit.core.llm.judge_hooks",
    "judge_relevance": "retrievekit.core.llm.judge_hooks",
}


def __getattr__(name: str) -> Any:
    """The names that moved out of this module, for one release (with a :class:`DeprecationWarning`)."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"retrievekit.core.retriever.{name} moved to {home}.{name}; importing it from retrievekit.core.retriever is "
        "deprecated",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
