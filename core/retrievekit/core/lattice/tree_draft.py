"""A draft of a LATTICE tree: the tree a change is made on while the tree it came from is still searched, costing the
nodes the change reads, not the tree.

A living index changes a tree while searches read it, so the change is made on another tree and swapped in whole.
:meth:`~retrievekit.core.lattice.tree.SemanticTree.copy` makes that tree by cloning every node (at 100,000 documents
most of an insertion's time). :func:`draft` instead gives the new tree a
:class:`~retrievekit.core.lattice.node_overlay.NodeOverlay`: a node is cloned the
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

from retrievekit.core.lattice.node_overlay import NodeOverlay
from retrievekit.core.lattice.tree import SemanticTree, TreeNode

__all__ = ["draft", "settle"]


def draft(tree: SemanticTree) -> SemanticTree:
    """A tree to change while ``tree`` is searched: :meth:`~SemanticTree.copy`'s, with its nodes a
    :class:`~retrievekit.core.lattice.node_overlay.NodeOverlay` over ``tree``'s (a node cloned when first read);
    :func:`settle` it after the change.

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
    if not (isinstance(tree.nodes, NodeOverlay) and tree.nodes.is_draft):
        return None, None
    tree.nodes, touched, gone = tree.nodes.settled()
    return touched, gone
