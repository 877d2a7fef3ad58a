"""A benchmark dataset in memory: its corpus, queries and graded relevance (``Dataset``, ``Query``), and
stable ids for objects a loader has to name."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.types import (
    DataObject,
    Passage,  # noqa: F401  (the examples below use it)
)

__all__ = ["Dataset", "Query", "restrict_objects", "stable_id"]


@dataclass(frozen=True)
class Query:
    """One benchmark question.

    Attributes:
        id: the question id from the file.
        text: the question text.
        metadata: gold ids, answers and anything else the file carries.

    Examples:
        >>> Query(id="q1", text="Who?").metadata
        {}
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    """A loaded benchmark: corpus objects, queries and graded qrels.

    Attributes:
        name: dataset name (``scifact``, ``ott_qa``, ...).
        split: the split loaded.
        corpus: passages / tables to index, in file order.
        queries: questions in file order (after ``limit``).
        qrels: ``{query_id: {object_id: grade}}``, restricted to the loaded queries.
        metadata: loader notes: ``n_corpus``, ``files`` (the files read, relative to the data folder),
            ``qrels_missing_from_corpus`` (gold ids the pool lacks), ...

    Examples:
        >>> ds = Dataset("toy", "dev", [Passage(id="a", text="x")], [Query("q", "x?")], {"q": {"a": 1}})
        >>> ds.object("a").text, len(ds)
        ('x', 1)
    """

    name: str
    split: str
    corpus: list[DataObject]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        """Number of queries."""
        return len(self.queries)

    def objects_by_id(self) -> dict[str, DataObject]:
        """Map of object id to object.

        Examples:
            >>> Dataset("t", "dev", [Passage(id="a", text="x")], [], {}).objects_by_id()["a"].id
            'a'
        """
        return {o.id: o for o in self.corpus}

    def restrict_corpus(self, size: int | None, *, seed: int = 0, keep: Sequence[str] = ()) -> Dataset:
        """The same queries over a smaller pool: every gold object of the loaded queries, the ids in ``keep``, and
        seeded random distractors up to ``size`` objects in all (corpus order kept; ``None`` keeps everything).

        A smaller pool makes an expensive method (a LATTICE tree build, ARM's compatibility) affordable on a CPU while
        every query can still find its gold objects. ``metadata["restricted"]`` records the size and seed.

        Raises:
            InvalidInputError: ``size`` is below 1.

        Examples:
            >>> docs = [Passage(id=str(i), text=f"doc {i}") for i in range(10)]
            >>> ds = Dataset("t", "dev", docs, [Query("q", "?")], {"q": {"7": 1}})
            >>> small = ds.restrict_corpus(3, seed=0)
            >>> len(small.corpus), "7" in {o.id for o in small.corpus}
            (3, True)
        """
        if size is None or size >= len(self.corpus):
            return self
        wanted = [oid for q in self.queries for oid, grade in self.qrels.get(q.id, {}).items() if grade > 0]
        pool = restrict_objects(self.corpus, [*wanted, *keep], size, seed=seed)
        meta = {**self.metadata, "restricted": {"size": len(pool), "seed": seed, "n_corpus_full": len(self.corpus)}}
        return Dataset(self.name, self.split, pool, self.queries, self.qrels, meta)

    def object(self, object_id: str) -> DataObject:
        """The corpus object with this id (``KeyError`` if absent).

        Examples:
            >>> Dataset("t", "dev", [Passage(id="a", text="x")], [], {}).object("a").id
            'a'
        """
        for o in self.corpus:
            if o.id == object_id:
                return o
        raise KeyError(object_id)


def restrict_objects(
    objects: Sequence[DataObject], must: Iterable[str], size: int | None, *, seed: int = 0
) -> list[DataObject]:
    """The objects whose ids are in ``must`` plus seeded random others, ``size`` objects in all, in input order.

    The others are drawn with ``random.Random(seed).sample`` from the remaining objects in input order, so a seed
    always gives the same pool. ``None`` (or a size of at least ``len(objects)``) keeps everything.

    Raises:
        InvalidInputError: ``size`` is below 1.

    Examples:
        >>> docs = [Passage(id=str(i), text="x") for i in range(10)]
        >>> len(restrict_objects(docs, ["3"], 3, seed=0)), "3" in [o.id for o in restrict_objects(docs, ["3"], 3)]
        (3, True)
    """
    if size is None or size >= len(objects):
        return list(objects)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInputError(f"corpus size must be a positive integer, got {size!r}")
    ids = {o.id for o in objects}
    keep = {oid for oid in must if oid in ids}
    rest = [o.id for o in objects if o.id not in keep]
    keep |= set(random.Random(seed).sample(rest, max(0, min(len(rest), size - len(keep)))))
    return [o for o in objects if o.id in keep]


def stable_id(*parts: str, length: int = 12) -> str:
    """Deterministic short id: the first ``length`` hex digits of sha1 over the parts joined by newlines.

    Examples:
        >>> stable_id("Title", "Some text")
        '8085dcd07404'
    """
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()[:length]
