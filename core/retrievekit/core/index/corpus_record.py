"""Which corpus an index holds: a record of it kept in the index's manifest, and the check that refuses an index
folder built from another corpus.

An index's save writes :func:`corpus_record` (``{"count", "digest", "version"}``: how many objects, and the sum
modulo 2**256 of one sha256 per object, over its id and content digest) into its manifest under :data:`RECORD_KEY`.
A sum is the same in any order and is updated by adding and removing objects (:class:`CorpusTally`): a living index
records every change's corpus in O(changed). A record without ``"version"`` (written before version 2) holds a
sha256 over the sorted ``(id, content digest)`` pairs; it is still checked as such. An index reopened for a corpus
(a ``work_dir`` cache entry, a LATTICE ``tree_dir``) is checked with :func:`check_same_corpus`: another corpus,
whether other ids or the same ids with other texts, raises :class:`~retrievekit.core.errors.CorpusMismatchError`
naming both sizes and an example id that differs, instead of being served. An object's content digest
(:func:`content_digest`) covers what an index serves and searches (kind, title, text; a table's header and rows, a
row's cells), not its metadata.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> held = [Passage(id="a", text="red apples"), Passage(id="b", text="green pears")]
    >>> corpus_record(held)["count"]
    2
    >>> check_same_corpus(held, list(reversed(held)), where="index x")  # the same corpus, in another order
    >>> check_same_corpus(held, [held[0], Passage(id="b", text="blue plums")], where="index x")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.CorpusMismatchError: index x holds another corpus: 2 objects, not this corpus of 2: 1 object has another text in the index (e.g. 'b')
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from retrievekit.core.errors import CorpusMismatchError
from retrievekit.core.types import DataObject, object_to_dict

__all__ = [
    "RECORD_KEY",
    "RECORD_VERSION",
    "CorpusTally",
    "check_same_corpus",
    "content_digest",
    "corpus_difference",
    "corpus_record",
    "record_of_digests",
]

RECORD_KEY = "corpus"
"""The manifest field that holds an index's :func:`corpus_record`."""

RECORD_VERSION = 2
"""The version of the records :func:`corpus_record` writes (a sum of per-object digests); version 1 (no
``"version"`` field) was a sha256 over the sorted pairs."""

_MOD = 1 << 256


def content_digest(obj: DataObject) -> str:
    """The sha256 of what an index serves of ``obj``: its kind, title and text (a table's header and rows, a row's
    cells), as canonical JSON; its id and metadata are left out.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> a = content_digest(Passage(id="a", text="x", metadata={"page": 1}))
        >>> a == content_digest(Passage(id="b", text="x")), a == content_digest(Passage(id="a", text="y"))
        (True, False)
    """
    data = object_to_dict(obj)
    data.pop("id", None)
    data.pop("metadata", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _digests(objects: Iterable[DataObject]) -> dict[str, str]:
    return {o.id: content_digest(o) for o in objects}


def _sorted_digest(digests: Mapping[str, str]) -> str:
    """A version-1 record's digest: a sha256 over the sorted ``(id, content digest)`` pairs."""
    h = hashlib.sha256()
    for oid in sorted(digests):
        h.update(f"{oid}\x1f{digests[oid]}\n".encode())
    return h.hexdigest()


def _term(oid: str, digest: str) -> int:
    """One object's part of a version-2 digest: the sha256 of its id and content digest, as a number."""
    return int.from_bytes(hashlib.sha256(f"{oid}\x1f{digest}".encode()).digest(), "big")


def _hex(total: int) -> str:
    return f"{total % _MOD:064x}"


def _digest_of(digests: Mapping[str, str]) -> str:
    return _hex(sum(_term(oid, d) for oid, d in digests.items()))


def _recorded_digest(recorded: Mapping[str, Any], digests: Mapping[str, str]) -> str | None:
    """The digest ``recorded``'s version would hold for ``digests`` (None for a version this code does not know)."""
    version = recorded.get("version", 1)
    if version == 1:
        return _sorted_digest(digests)
    return _digest_of(digests) if version == RECORD_VERSION else None


class CorpusTally:
    """A :func:`corpus_record` kept up to date by adding and removing objects, each change in O(changed): the count
    and the sum of the per-object terms.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> a, b, b2 = Passage(id="a", text="x"), Passage(id="b", text="y"), Passage(id="b", text="z")
        >>> tally = CorpusTally.of([a, b]).changed(removed=[b], added=[b2])
        >>> tally.record() == corpus_record([a, b2]), tally.count
        (True, 2)
        >>> CorpusTally.from_record(tally.record()).record() == tally.record()
        True
        >>> CorpusTally.from_record({"count": 2, "digest": "ab"}) is None  # a version-1 record: not a sum
        True
    """

    def __init__(self, count: int = 0, total: int = 0) -> None:
        self.count, self.total = count, total % _MOD

    @classmethod
    def of(cls, objects: Iterable[DataObject]) -> CorpusTally:
        """The tally of ``objects`` (each hashed once)."""
        return cls().changed(removed=(), added=objects)

    @classmethod
    def from_record(cls, record: Any) -> CorpusTally | None:
        """The tally a version-2 record holds; None for another record (an older version, or none)."""
        if not isinstance(record, Mapping) or record.get("version") != RECORD_VERSION:
            return None
        try:
            return cls(int(record["count"]), int(str(record["digest"]), 16))
        except (KeyError, TypeError, ValueError):
            return None

    def changed(self, *, removed: Iterable[DataObject], added: Iterable[DataObject]) -> CorpusTally:
        """A new tally: ``removed`` objects (as held) taken out, ``added`` ones put in."""
        return self.changed_digests(
            removed=((o.id, content_digest(o)) for o in removed), added=((o.id, content_digest(o)) for o in added)
        )

    def changed_digests(self, *, removed: Iterable[tuple[str, str]], added: Iterable[tuple[str, str]]) -> CorpusTally:
        """:meth:`changed` from ``(id, content digest)`` pairs (an index that keeps its objects' digests)."""
        count, total = self.count, self.total
        for oid, digest in removed:
            count, total = count - 1, total - _term(oid, digest)
        for oid, digest in added:
            count, total = count + 1, total + _term(oid, digest)
        return CorpusTally(count, total)

    def record(self) -> dict[str, Any]:
        """The :func:`corpus_record` of the tallied objects."""
        return {"count": self.count, "digest": _hex(self.total), "version": RECORD_VERSION}


def corpus_record(objects: Iterable[DataObject]) -> dict[str, Any]:
    """What an index records of its corpus: ``{"count": objects, "digest": the sum of one sha256 per (id, content
    digest) pair, "version": 2}`` (the same for the same objects in any order; :class:`CorpusTally` updates it).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> a, b = Passage(id="a", text="x"), Passage(id="b", text="y")
        >>> corpus_record([a, b]) == corpus_record([b, a]), corpus_record([a])["count"]
        (True, 1)
    """
    digests = _digests(objects)
    return record_of_digests(digests)


def record_of_digests(digests: Mapping[str, str]) -> dict[str, Any]:
    """:func:`corpus_record` from the objects' content digests (``id -> content_digest``): what an index that keeps
    its digests (and changes in place) records without reading its objects again.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> a = Passage(id="a", text="x")
        >>> record_of_digests({"a": content_digest(a)}) == corpus_record([a])
        True
    """
    return {"count": len(digests), "digest": _digest_of(digests), "version": RECORD_VERSION}


def _differences(held: Mapping[str, str], given: Mapping[str, str]) -> tuple[list[str], list[str], list[str]]:
    """The ids only ``given`` has, only ``held`` has, and those both have with other digests (each sorted)."""
    missing = sorted(set(given) - set(held))
    extra = sorted(set(held) - set(given))
    edited = sorted(i for i in set(given) & set(held) if given[i] != held[i])
    return missing, extra, edited


def corpus_difference(held: Mapping[str, str], given: Mapping[str, str], *, held_name: str = "index") -> str:
    """How a corpus (``given``: id -> content digest) and what an index holds (``held``) differ: how many ids each
    lacks and how many shared ids have another text, with the first id of each (sorted); ``""`` when they agree.

    Examples:
        >>> corpus_difference({"a": "1", "b": "2", "z": "9"}, {"a": "1", "b": "3", "c": "4"}, held_name="tree")
        "1 of the corpus's objects are not in the tree (e.g. 'c'), 1 of the tree's are not in the corpus (e.g. 'z'), 1 object has another text in the tree (e.g. 'b')"
    """
    missing, extra, edited = _differences(held, given)
    parts = []
    if missing:
        parts.append(f"{len(missing)} of the corpus's objects are not in the {held_name} (e.g. {missing[0]!r})")
    if extra:
        parts.append(f"{len(extra)} of the {held_name}'s are not in the corpus (e.g. {extra[0]!r})")
    if edited:
        verb = "object has" if len(edited) == 1 else "objects have"
        parts.append(f"{len(edited)} {verb} another text in the {held_name} (e.g. {edited[0]!r})")
    return ", ".join(parts)


def check_same_corpus(
    held: Iterable[DataObject],
    given: Iterable[DataObject],
    *,
    where: str,
    held_name: str = "index",
    advice: str = "",
    recorded: Any = None,
) -> None:
    """Refuse an index (``where``, holding ``held``) reopened for another corpus (``given``): other ids, or the same
    ids with another text, in any order. ``recorded`` is the index's manifest record (:func:`corpus_record`, of
    either version); when it matches ``given`` the held objects are not hashed again. ``advice`` ends the message (what to do instead).

    Raises:
        CorpusMismatchError: naming both sizes and an example id that differs (added, removed or edited).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> check_same_corpus([Passage(id="b0", text="x")], [Passage(id="a0", text="x")], where="cache c",
        ...                   advice="remove it to rebuild")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.CorpusMismatchError: cache c holds another corpus: 1 objects, not this corpus of 1: 1 of the corpus's objects are not in the index (e.g. 'a0'), 1 of the index's are not in the corpus (e.g. 'b0'); remove it to rebuild
    """
    want = _digests(given)
    if (
        isinstance(recorded, Mapping)
        and recorded.get("count") == len(want)
        and recorded.get("digest") == _recorded_digest(recorded, want)
    ):
        return
    have = _digests(held)
    difference = corpus_difference(have, want, held_name=held_name)
    if not difference:
        return
    example = next(ids[0] for ids in _differences(have, want) if ids)  # the first one the message names
    raise CorpusMismatchError(
        f"{where} holds another corpus: {len(have)} objects, not this corpus of {len(want)}: {difference}"
        + (f"; {advice}" if advice else ""),
        indexed=len(have),
        given=len(want),
        example=example,
    )
