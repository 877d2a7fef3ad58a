"""Where ARM finds its objects by id: held in memory (:class:`HeldObjects`, a corpus given as a list) or read for each
search from its BM25 index's document store (:class:`StoredObjects`, :meth:`Arm.from_indexes
<retrievekit.core.arm.retriever.Arm.from_indexes>`: nothing listed, so an index of millions opens in a process that
holds only what one search reads); and the passages a search adds because the base tables' cells link to them
(:func:`linked_passages`), read in one batch.

Examples:
    >>> from retrievekit.core.types import Passage, Table
    >>> objects = HeldObjects([Table(id="t", title="Cast", header=("Role",), rows=(("Robert",),),
    ...                              metadata={"cell_links": [[0, 0, "p"], [0, 0, "gone"]]}),
    ...                        Passage(id="p", text="Robert is a character.")])
    >>> len(objects), list(objects.fetch(["p", "zz"])), list(linked_passages(objects.fetch(["t"]).values(), set(), objects))
    (2, ['p'], ['p'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.types import DataObject, Table

__all__ = ["MAX_LINKED", "HeldObjects", "ObjectsById", "StoredObjects", "linked_passages"]

MAX_LINKED = 30
"""Passages linked from the base tables' cells that are added to the candidate pool, at most."""


class HeldObjects:
    """ARM's objects held in memory by id (the corpus an :class:`~retrievekit.core.arm.retriever.Arm` was given).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> HeldObjects([Passage(id="a", text="x")]).fetch(["b", "a"])
        {'a': Passage(id='a', text='x', title='', metadata={}, kind='passage')}
    """

    def __init__(self, objects: Sequence[DataObject]) -> None:
        self._by_id = {o.id: o for o in objects}

    def __len__(self) -> int:
        return len(self._by_id)

    def fetch(self, ids: Iterable[str], given: Mapping[str, DataObject] | None = None) -> dict[str, DataObject]:
        """``id -> object`` for those of ``ids`` held, in the order of ``ids`` (``given`` is not needed here: the
        held objects are the ones searched)."""
        return {i: self._by_id[i] for i in ids if i in self._by_id}


class StoredObjects:
    """ARM's objects read from its BM25 index's document store, those a search asks for and no others.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Config
        >>> from retrievekit.core.types import Passage
        >>> bm25 = BM25Index.build([Passage(id="a", text="x"), Passage(id="b", text="y")], BM25Config(engine="tantivy"))
        >>> stored = StoredObjects(bm25)
        >>> len(stored), list(stored.fetch(["b", "zz", "a"]))
        (2, ['b', 'a'])
    """

    def __init__(self, bm25: BM25Index) -> None:
        self.bm25 = bm25

    def __len__(self) -> int:
        return len(self.bm25)

    def fetch(self, ids: Iterable[str], given: Mapping[str, DataObject] | None = None) -> dict[str, DataObject]:
        """``id -> object`` for those of ``ids`` the store holds, in the order of ``ids``; those in ``given``
        (objects this store's index returned already, its search hits) are not read again."""
        wanted = list(dict.fromkeys(ids))
        given = given or {}
        need = [i for i in wanted if i not in given]
        read = self.bm25.objects_of(need) if need else {}
        return {i: o for i in wanted if (o := given[i] if i in given else read.get(i)) is not None}


ObjectsById = HeldObjects | StoredObjects
"""Either home of ARM's objects: ``fetch(ids, given=None)`` and ``len``."""


def linked_passages(
    base: Iterable[DataObject], have: set[str], objects: ObjectsById, limit: int = MAX_LINKED
) -> dict[str, DataObject]:
    """The objects the base tables' cells link to (``cell_links`` metadata: ``[row, column, target id]``) that
    ``objects`` holds and ``have`` lacks, in link order, at most ``limit``; all read in one fetch.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> t = Table(id="t", title="T", header=("A",), rows=(("x",),), metadata={"cell_links": [[0, 0, "p"], "bad"]})
        >>> objects = HeldObjects([t, Passage(id="p", text="x"), Passage(id="q", text="y")])
        >>> list(linked_passages([t], set(), objects)), list(linked_passages([t], {"p"}, objects))
        (['p'], [])
    """
    targets: list[str] = []
    for obj in base:
        if not isinstance(obj, Table):
            continue
        for link in obj.metadata.get("cell_links") or ():
            try:
                target = str(link[2])
            except (TypeError, IndexError):
                continue
            if target not in have:
                targets.append(target)
    found = objects.fetch(targets)
    return dict(list(found.items())[:limit])
