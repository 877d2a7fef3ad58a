"""Nodes seen through the ones changed on top of them: :class:`NodeOverlay`, the node map of a LATTICE tree's draft
(:mod:`~retrievekit.core.lattice.tree_draft`) and of a tree opened from its folder
(:mod:`~retrievekit.core.lattice.node_arrays`: the nodes on disk, each read when first asked for).

Examples:
    >>> o = NodeOverlay({"a": TreeNode(id="a", text="x")}); o["b"] = TreeNode(id="b", text="y"); sorted(o)
    ['a', 'b']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import overload

import numpy as np

from retrievekit.core.lattice.tree_node import TreeNode

__all__ = ["NodeOverlay"]


class NodeOverlay(MutableMapping[str, TreeNode]):
    """The nodes of a draft: ``base`` (read only) seen through the nodes the draft cloned, set and removed.

    A node read (``overlay[id]``, ``get``, ``values``, ``items``) is cloned on first access (kept as read, without a
    clone, when ``is_draft`` is False: ``base`` then builds each node afresh) and that node is the one returned from
    then on; ``in``, ``len`` and iterating the ids clone nothing. Ids iterate in ``base``'s order, the
    new ones after it (a copy's order).

    Examples:
        >>> base = {"a": TreeNode(id="a", text="x", children=["b"])}
        >>> o = NodeOverlay(base); o["a"].children.append("c")
        >>> base["a"].children, o["a"].children, "a" in o, len(o)
        (['b'], ['b', 'c'], True, 1)
    """

    __slots__ = ("_base", "_gone", "_own", "is_draft")

    def __init__(self, base: Mapping[str, TreeNode], *, is_draft: bool = True) -> None:
        self._base = base
        self.is_draft = is_draft  # False: a tree's own nodes read from its folder (``node_arrays``), not a draft
        self._own: dict[str, TreeNode] = {}  # cloned, set or new
        self._gone: set[str] = set()  # ids of ``base`` removed

    def __getitem__(self, key: str) -> TreeNode:
        node = self._own.get(key)
        if node is not None:
            return node
        if key in self._gone:
            raise KeyError(key)
        node = self._base[key]
        node = self._own[key] = node.clone() if self.is_draft else node  # a stored node is built afresh: no clone
        return node

    def __contains__(self, key: object) -> bool:
        return key in self._own or (key not in self._gone and key in self._base)

    def __setitem__(self, key: str, node: TreeNode) -> None:
        self._own[key] = node
        self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._own.pop(key, None)
        if key in self._base:
            self._gone.add(key)

    def __iter__(self) -> Iterator[str]:
        gone, own = self._gone, self._own
        yield from (k for k in self._base if k not in gone)
        yield from (k for k in own if k not in self._base)

    def __len__(self) -> int:
        return len(self._base) - len(self._gone) + sum(k not in self._base for k in self._own)

    def widest(self, skip: Iterable[str] = ()) -> int:
        """The most children of any node but those ids in ``skip``, from :meth:`internal` (so no node of an opened
        tree's arrays is built).

        Examples:
            >>> o = NodeOverlay({"a": TreeNode(id="a", text="", children=["x", "y", "z"])}); o["a"].children.pop()
            'z'
            >>> o.widest(), o.widest(skip=["a"])
            (2, 0)
        """
        widths = self.internal(skip)[1]  # a leaf has no children
        return int(widths.max()) if widths.size else 0

    def internal(self, skip: Iterable[str] = ()) -> tuple[Sequence[str], np.ndarray]:
        """The ids of the internal nodes but those in ``skip`` and their numbers of children: ``base``'s first (in
        its order), then the ones read, set or added here (sorted). A base that answers ``internal`` itself (the
        arrays of an opened tree) is asked for the nodes not read, set or removed here: no node of it is built, and
        its ids are read when asked for.

        Examples:
            >>> o = NodeOverlay({"a": TreeNode(id="a", text="", children=["x"]), "x": TreeNode(id="x", text="", is_leaf=True)})
            >>> o["b"] = TreeNode(id="b", text="", children=["y", "z"]); ids, widths = o.internal(); list(ids), widths.tolist()
            (['a', 'b'], [1, 2])
        """
        skipped = set(skip)
        hidden = skipped | self._own.keys() | self._gone
        base_internal = getattr(self._base, "internal", None)
        if base_internal is not None:
            base_ids, base_widths = base_internal(hidden)
        else:
            seen = sorted((k, len(n.children)) for k, n in self._base.items() if k not in hidden and not n.is_leaf)
            base_ids, base_widths = [k for k, _ in seen], np.array([w for _, w in seen], dtype=np.int64)
        own = sorted((k, len(n.children)) for k, n in self._own.items() if k not in skipped and not n.is_leaf)
        ids = _Joined(base_ids, [k for k, _ in own])
        return ids, np.concatenate(
            [np.asarray(base_widths, dtype=np.int64), np.array([w for _, w in own], dtype=np.int64)]
        )

    def settled(self) -> tuple[dict[str, TreeNode], dict[str, TreeNode], list[str]]:
        """The nodes as a plain ``dict`` (``base``'s order, the new ones last), the nodes read, set or added (by id),
        and the ids removed from ``base`` (sorted)."""
        nodes = dict(self._base)
        for k in self._gone:
            del nodes[k]
        nodes.update(self._own)
        return nodes, dict(self._own), sorted(self._gone)


class _Joined(Sequence[str]):
    """Two sequences one after the other, each read when asked for."""

    def __init__(self, first: Sequence[str], second: Sequence[str]) -> None:
        self._first, self._second = first, second

    def __len__(self) -> int:
        return len(self._first) + len(self._second)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self._first)
        if i < 0:
            i += len(self)
        return self._first[i] if i < n else self._second[i - n]
