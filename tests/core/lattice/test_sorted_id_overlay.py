"""``SortedIdOverlay``: a tree's leaf ids as a read-only sorted base seen through the ids added and removed. Checked
against a sorted list under random adds, discards and copies, over a list base and over the leaf ids of an opened
tree's arrays (which answer ``find`` themselves)."""

from __future__ import annotations

import random

import pytest

from retrievekit.core.lattice.node_arrays import open_node_arrays, write_node_arrays
from retrievekit.core.lattice.sorted_id_overlay import SortedIdOverlay
from retrievekit.core.lattice.tree_node import TreeNode

IDS = sorted({f"d{i:03d}" for i in range(0, 120, 3)} | {"é", "zz", "a b"})


def _arrays_base(folder):
    nodes = {"root": TreeNode(id="root", text="", children=list(IDS))}
    nodes.update({i: TreeNode(id=i, text="", is_leaf=True) for i in IDS})
    write_node_arrays(folder, nodes, lambda n: n.text)
    return open_node_arrays(folder).leaf_ids()


@pytest.mark.parametrize("kind", ["list", "arrays"])
def test_it_holds_what_a_sorted_list_holds_under_random_changes_and_copies(kind, tmp_path):
    base = list(IDS) if kind == "list" else _arrays_base(tmp_path)
    rng = random.Random(7)
    universe = [*IDS, *(f"d{i:03d}" for i in range(120)), "new", "é", ""]
    ids, model = SortedIdOverlay(base), list(IDS)
    copies = []
    for step in range(400):
        key = rng.choice(universe)
        if rng.random() < 0.5:
            ids.add(key)
            model = sorted(set(model) | {key})
        else:
            ids.discard(key)
            model = [k for k in model if k != key]
        if step % 50 == 0:
            copies.append((ids.copy(), list(model)))
        assert (key in ids) == (key in model) and len(ids) == len(model)
    assert list(ids) == model and 5 not in ids
    for twin, held in copies:  # each copy kept the ids it had: the later changes were the original's
        assert list(twin) == held and len(twin) == len(held)
    assert list(base) == list(IDS)  # the base is never changed
