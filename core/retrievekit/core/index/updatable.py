"""What an index that changes in place offers (:class:`UpdatableIndex`), and the one check of a batch of changes
(:func:`check_batch`).

The framework edges drive an updatable index from their own update surfaces: LangChain's ``DocumentIndex``
(``upsert`` / ``delete`` / ``get``, which ``langchain_core.indexing.index`` drives with a record manager) and
LlamaIndex's ``BaseIndex`` (``insert_nodes`` / ``delete_nodes`` / ``refresh_ref_docs``).
:class:`~retrievekit.core.index.live.LiveIndex` implements it for ``bm25``, ``dense`` and ``hybrid``.

Examples:
    >>> from retrievekit.core.index.live import LiveIndex
    >>> isinstance(LiveIndex.create("bm25"), UpdatableIndex)
    True
    >>> from retrievekit.core.types import Passage
    >>> [o.id for o in check_batch([Passage(id="a", text="x"), Passage(id="b", text="")])]
    ['a', 'b']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit, Table, TableRow

__all__ = ["UpdatableIndex", "check_batch", "check_ids"]


@runtime_checkable
class UpdatableIndex(Protocol):
    """A searchable index whose objects are added, replaced and removed by id, in place.

    ``upsert`` adds new ids and replaces held ones (returns the ids it took, in order); ``delete`` removes ids (returns
    those it held; an id it does not hold is not an error); ``get`` returns the held objects of ``ids`` (in the order
    asked, each once, missing ones left out); ``ids`` lists every held id. After any sequence of changes, ``search``
    answers as an index built afresh over the objects it holds.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> isinstance(BM25Index, UpdatableIndex)  # a plain BM25 index is rebuilt, not changed
        False
    """

    def upsert(self, objects: Sequence[DataObject], *, trace: Trace | None = None) -> list[str]:
        """Add or replace ``objects`` by id."""
        ...

    def delete(self, ids: Sequence[str], *, trace: Trace | None = None) -> list[str]:
        """Remove ``ids``; the ones that were held."""
        ...

    def get(self, ids: Sequence[str]) -> list[DataObject]:
        """The held objects of ``ids``."""
        ...

    def ids(self) -> list[str]:
        """Every held id."""
        ...

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top-``k`` held objects for ``query``."""
        ...


def check_batch(objects: Iterable[DataObject]) -> list[DataObject]:
    """A batch of objects to upsert: core objects with unique ids (it may be empty, and an object's text may be
    empty); :class:`InvalidInputError` naming the first bad item.

    Examples:
        >>> check_batch([Passage(id="a", text="x"), Passage(id="a", text="y")])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: objects[1]: id 'a' appears twice in one upsert (ids must be unique)
        >>> check_batch(["text"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: objects[0] must be a Passage/Table/TableRow, got str
    """
    out = list(objects)
    seen: set[str] = set()
    for i, o in enumerate(out):
        if not isinstance(o, (Passage, Table, TableRow)):
            raise InvalidInputError(f"objects[{i}] must be a Passage/Table/TableRow, got {type(o).__name__}")
        if o.id in seen:
            raise InvalidInputError(f"objects[{i}]: id {o.id!r} appears twice in one upsert (ids must be unique)")
        seen.add(o.id)
    return out


def check_ids(ids: Iterable[str] | None, *, where: str) -> list[str]:
    """Ids to delete or get: a list of strings, each once, in the order given; :class:`InvalidInputError` for
    ``None``, a bare string, or an item that is not a string.

    Examples:
        >>> check_ids(["b", "a", "b"], where="delete")
        ['b', 'a']
        >>> check_ids("ab", where="delete")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: delete: ids must be a list of strings, got a str
    """
    if ids is None or isinstance(ids, (str, bytes)):
        raise InvalidInputError(f"{where}: ids must be a list of strings, got {'None' if ids is None else 'a str'}")
    out = list(ids)
    for i, x in enumerate(out):
        if not isinstance(x, str):
            raise InvalidInputError(f"{where}: ids[{i}] must be a string, got {type(x).__name__}")
    return list(dict.fromkeys(out))
