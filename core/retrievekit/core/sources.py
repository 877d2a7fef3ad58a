"""The caller's own objects behind a corpus: framework edges return them instead of rebuilding new ones.

A framework edge converts the caller's documents (LlamaIndex nodes, LangChain ``Document`` s) to core objects, one
per document with the same id. :class:`SourceMap` remembers which caller object each core object came from; for a hit
that *is* one of them (same id, same text: not a span or a passage cut out of it) :meth:`SourceMap.match` gives the
caller's object back with the metadata the method added (scores, links), so the edge can return that very object
(or a copy with the additions) with its class, relationships and settings intact.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> doc = {"my": "document"}
    >>> sources = SourceMap([(doc, Passage(id="a", text="Aspirin thins the blood."))])
    >>> hit = Passage(id="a", text="Aspirin thins the blood.", metadata={"arm_score": 0.9})
    >>> sources.match(hit)
    ({'my': 'document'}, {'arm_score': 0.9})
    >>> sources.match(Passage(id="a", text="Aspirin")) is None  # a span of it: not the caller's object
    True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from retrievekit.core.types import DataObject

__all__ = ["SourceMap"]

T = TypeVar("T")
_MISSING = object()


class SourceMap(Generic[T]):
    """Caller objects by the id of the core object made from each (the first one wins when ids repeat).

    Args:
        pairs: ``(caller object, core object made from it)`` pairs.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> sources = SourceMap([("node-a", Passage(id="a", text="x", metadata={"k": 1}))])
        >>> sources.match(Passage(id="a", text="x", metadata={"k": 1, "score": 2.0}))
        ('node-a', {'score': 2.0})
        >>> len(sources), sources.match(Passage(id="b", text="x")) is None
        (1, True)
    """

    def __init__(self, pairs: Iterable[tuple[T, DataObject]] = ()) -> None:
        self._by_id: dict[str, tuple[T, DataObject]] = {}
        for caller, obj in pairs:
            self._by_id.setdefault(obj.id, (caller, obj))

    def __len__(self) -> int:
        return len(self._by_id)

    def match(self, hit: DataObject) -> tuple[T, dict[str, Any]] | None:
        """``(caller object, metadata the method added)`` when ``hit`` is a caller's object, else ``None``.

        ``hit`` is the caller's object when it has the id and the text of the core object made from it; the
        additions are the metadata keys whose value the method set or changed.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> SourceMap([("n", Passage(id="a", text="x"))]).match(Passage(id="a", text="x"))
            ('n', {})
        """
        found = self._by_id.get(hit.id)
        if found is None:
            return None
        caller, source = found
        if hit.text != source.text:
            return None
        extra = {k: v for k, v in hit.metadata.items() if source.metadata.get(k, _MISSING) != v}
        return caller, extra
