"""A node of a LATTICE tree: :class:`TreeNode` (a leaf, a corpus object, or an internal node, a summary of its
children), what ``tree.nodes`` maps each id to.

Examples:
    >>> n = TreeNode(id="n1-x", text="Fruit", children=["a"], depth=1)
    >>> n.is_leaf, n.clone().children
    (False, ['a'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TreeNode"]


@dataclass
class TreeNode:
    """One node: a leaf (a corpus object) or an internal node (a summary of its children).

    A leaf's ``text`` is empty when the node does not hold it (a tree opened from its folder): its text is then its
    object's ``index_text()``; read a node's text with :meth:`SemanticTree.text`.

    Examples:
        >>> TreeNode(id="n1-x", text="Fruit", children=["a"], depth=1).is_leaf
        False
    """

    id: str
    text: str
    children: list[str] = field(default_factory=list)
    depth: int = 0
    is_leaf: bool = False
    parent: str | None = None

    @classmethod
    def from_line(cls, line: Mapping[str, Any]) -> TreeNode:
        """The node a ``nodes.jsonl`` line holds (:meth:`SemanticTree.node_line`; a leaf's text left out: its
        object's, read by :meth:`SemanticTree.text`)."""
        text = str(line["text"]) if "text" in line or not line["leaf"] else ""
        return cls(str(line["id"]), text, [str(c) for c in line["children"]], int(line["depth"]), bool(line["leaf"]))

    def clone(self) -> TreeNode:
        """This node with its own list of children (what a change may edit in place)."""
        return TreeNode(self.id, self.text, list(self.children), self.depth, self.is_leaf, self.parent)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (the parent is implied by ``children``).

        Examples:
            >>> TreeNode(id="a", text="x", is_leaf=True).to_dict()["leaf"]
            True
        """
        return {
            "id": self.id,
            "text": self.text,
            "children": list(self.children),
            "depth": self.depth,
            "leaf": self.is_leaf,
        }
