"""The leaves below one node of a LATTICE tree as a set that is listed only when iterated
(:meth:`~retrievekit.core.lattice.tree.SemanticTree.leaf_ref`).

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> leaves = SubtreeLeaves(SemanticTree.flat([Passage(id="a", text="x")]), "root")
    >>> "a" in leaves, "root" in leaves, len(leaves)
    (True, False, 1)
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import Any

__all__ = ["SubtreeLeaves"]


class SubtreeLeaves(AbstractSet[str]):
    """The leaves below ``node_id`` of ``tree`` (a :class:`~retrievekit.core.lattice.tree.SemanticTree`): ``in``
    walks parents (the tree's height in steps), iteration lists them once (:meth:`SemanticTree.leaf_set`).

    Examples:
        >>> from retrievekit.core.lattice.tree import SemanticTree
        >>> from retrievekit.core.types import Passage
        >>> t = SemanticTree.flat([Passage(id="a", text="x"), Passage(id="b", text="y")])
        >>> sorted(SubtreeLeaves(t, "root"))
        ['a', 'b']
    """

    def __init__(self, tree: Any, node_id: str) -> None:
        self._tree, self._node = tree, node_id

    def __contains__(self, item: object) -> bool:
        node = self._tree.nodes.get(item) if isinstance(item, str) else None
        if node is None or not node.is_leaf:
            return False
        cur: str | None = node.id
        while cur is not None:
            if cur == self._node:
                return True
            cur = self._tree.nodes[cur].parent
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._tree.leaf_set(self._node))

    def __len__(self) -> int:
        return len(self._tree.leaf_set(self._node))

    def __repr__(self) -> str:
        return f"<leaves under {self._node!r}>"
