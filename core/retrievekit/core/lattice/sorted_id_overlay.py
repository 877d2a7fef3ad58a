"""Sorted ids seen through the ids added and removed since: :class:`SortedIdOverlay`, a LATTICE tree's leaf ids.

A tree opened from its folder reads its leaf ids from its arrays (ten million at 10M documents, never held as Python
strings). The overlay keeps that base as it is, the ids added since in a sorted list and the ids removed in a set,
so a change and a copy of the ids (a draft's) cost what changed, not the tree.

Examples:
    >>> ids = SortedIdOverlay(["a", "c", "e"]); ids.add("b"); ids.discard("c"); ids.add("a")
    >>> list(ids), len(ids), "c" in ids, "b" in ids
    (['a', 'b', 'e'], 3, False, True)
    >>> twin = ids.copy(); twin.discard("e"); list(ids), list(twin)
    (['a', 'b', 'e'], ['a', 'b'])
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Collection, Iterator, Sequence

__all__ = ["SortedIdOverlay"]


class SortedIdOverlay(Collection[str]):
    """The ids of ``base`` (sorted; a sequence with ``find(id)``, such as an opened tree's leaf ids, is asked
    directly) with ids added and removed; iterating gives them sorted. Example: the module docstring."""

    __slots__ = ("_added", "_base", "_removed")

    def __init__(self, base: Sequence[str] = ()) -> None:
        self._base = base
        self._added: list[str] = []  # sorted, none of them in base
        self._removed: set[str] = set()  # ids of base

    def _in_base(self, key: str) -> bool:
        find = getattr(self._base, "find", None)
        if find is not None:
            return find(key) is not None
        at = bisect_left(self._base, key)
        return at < len(self._base) and self._base[at] == key

    def _added_at(self, key: str) -> int | None:
        at = bisect_left(self._added, key)
        return at if at < len(self._added) and self._added[at] == key else None

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return self._added_at(key) is not None or (key not in self._removed and self._in_base(key))

    def add(self, key: str) -> None:
        """Make ``key`` one of the ids (nothing when it is)."""
        if key in self._removed:
            self._removed.discard(key)
        elif self._added_at(key) is None and not self._in_base(key):
            insort(self._added, key)

    def discard(self, key: str) -> None:
        """Make ``key`` none of the ids (nothing when it is not)."""
        at = self._added_at(key)
        if at is not None:
            del self._added[at]
        elif self._in_base(key):
            self._removed.add(key)

    def copy(self) -> SortedIdOverlay:
        """The same ids over the same base: changing one leaves the other as it is."""
        twin = SortedIdOverlay(self._base)
        twin._added, twin._removed = list(self._added), set(self._removed)
        return twin

    def __len__(self) -> int:
        return len(self._base) - len(self._removed) + len(self._added)

    def __iter__(self) -> Iterator[str]:
        removed = self._removed
        kept = (k for k in self._base if k not in removed) if removed else iter(self._base)
        return heapq.merge(kept, self._added)
