"""A draft of a LATTICE tree: the tree a change is made on while the tree it came from is still searched, costing the
nodes the change reads, not the tree.

A living index changes a tree while searches read it, so the change is made on another tree and swapped in whole.
:meth:`~retrievekit.core.lattice.tree.SemanticTree.copy` makes that tree by cloning every node (at 100,000 documents
most of an insertion's time). :func:`draft` instead gives the new tree a :class:`NodeOverlay`: a node is cloned the
first time the change reads it (insertions and deletions change nodes in place, so every node read is taken as one
that may change), new and removed nodes are kept apart, and the tree it came from is never written to.
:func:`settle` then turns the overlay back into a plain ``dict`` (one copy of the node map, sharing the untouched
nodes with the tree it came from) and returns what the change touched, so finding the changed nodes compares those
only (:func:`~retrievekit.core.lattice.tree_delta.tree_delta`). The tree it came from must not change while a draft
of it lives (a living index never changes a tree it swapped in).

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> old = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
    >>> new = draft(old)
    >>> new.nodes["root"].children.remove("b"); del new.nodes["b"]; new.reindex()
    >>> old.children("root"), new.children("root"), sorted(settle(new)[0]), isinstance(new.nodes, dict)
    (['a', 'b'], ['a'], ['a', 'root'], True)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping

from retrievekit.core.lattice.tree import SemanticTree, TreeNode

__all__ = ["NodeOverlay", "draft", "settle"]


class NodeOverlay(MutableMapping[str, TreeNode]):
    """The nodes of a draft: ``base`` (read only) seen through the nodes the draft cloned, set and removed.

    A node read (``overlay[id]``, ``get``, ``values``, ``items``) is cloned on first access and that clone is the one
    returned from then on; ``in``, ``len`` and iterating the ids clone nothing. Ids iterate in ``base``'s order, the
    new ones after it (a copy's order).

    Examples:
        >>> base = {"a": TreeNode(id="a", text="x", children=["b"])}
        >>> o = NodeOverlay(base); o["a"].children.append("c")
        >>> base["a"].children, o["a"].children, "a" in o, len(o)
        (['b'], ['b', 'c'], True, 1)
    """

    __slots__ = ("_base", "_gone", "_own")

    def __init__(self, base: Mapping[str, TreeNode]) -> None:
        self._base = base
        self._own: dict[str, TreeNode] = {}  # cloned, set or new
        self._gone: set[str] = set()  # ids of ``base`` removed

    def __getitem__(self, key: str) -> TreeNode:
        node = self._own.get(key)
        if node is not None:
            return node
        if key in self._gone:
            raise KeyError(key)
        node = self._own[key] = self._base[key].clone()
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

    def settled(self) -> tuple[dict[str, TreeNode], dict[str, TreeNode], list[str]]:
        """The nodes as a plain ``dict`` (``base``'s order, the new ones last), the nodes read, set or added (by id),
        and the ids removed from ``base`` (sorted)."""
        nodes = dict(self._base)
        for k in self._gone:
            del nodes[k]
        nodes.update(self._own)
        return nodes, dict(self._own), sorted(self._gone)


def draft(tree: SemanticTree) -> SemanticTree:
    """A tree to change while ``tree`` is searched: :meth:`~SemanticTree.copy`'s, with its nodes a
    :class:`NodeOverlay` over ``tree``'s (a node cloned when first read); :func:`settle` it after the change.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x")])
        >>> d = draft(t); d.nodes["root"].text = "changed"; t.nodes["root"].text
        'root'
    """
    return tree.copy(nodes=NodeOverlay(tree.nodes))


def settle(tree: SemanticTree) -> tuple[dict[str, TreeNode] | None, list[str] | None]:
    """Make a draft's nodes a plain ``dict`` again; returns the nodes the change read, set or added (by id) and the
    ids it removed: every node that may differ from the tree the draft came from. ``(None, None)`` for a tree that
    is no draft (a :meth:`~SemanticTree.copy`: every node may differ).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> settle(SemanticTree.flat([Passage(id="a", text="x")]))
        (None, None)
    """
    if not isinstance(tree.nodes, NodeOverlay):
        return None, None
    tree.nodes, touched, gone = tree.nodes.settled()
    return touched, gone
