"""Bring a living index's parts back to its committed objects after a change was cut short (issue #61).

A change to a :class:`~retrievekit.core.index.live.LiveIndex` in a folder writes its parts first (the dense part in
place in its Chroma folder, then the BM25 part) and commits last: ``live/`` (the held objects and their corpus
record) replaced in one rename. ``live/`` is the truth. A kill between the parts and that commit leaves parts that
hold the new objects while ``live/`` holds the old ones; on open, each such part is brought back to the held objects
rather than refused:

* :func:`reconcile_dense`: the ids it holds that ``live/`` does not are deleted, the held objects it lacks or holds
  with another content are embedded again (only those);
* :func:`rebuild_bm25`: the BM25 part is built again from the held objects, atomically into its folder.

Examples:
    >>> reconcile_dense(None, [])
    0
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.types import DataObject

__all__ = ["rebuild_bm25", "reconcile_dense"]


def reconcile_dense(index: Any, held: Sequence[DataObject]) -> int:
    """Make the dense ``index`` hold exactly ``held``; returns how many objects it deleted or embedded again.

    Examples:
        >>> reconcile_dense(None, [])  # no dense part, nothing held
        0
    """
    if index is None:
        return 0
    from retrievekit.core.index.dense_corpus import stored_objects
    from retrievekit.core.index.dense_updates import delete_dense, upsert_dense

    stored = {o.id: o for o in stored_objects(index)}
    wanted = {o.id for o in held}
    extra = sorted(i for i in stored if i not in wanted)
    stale = [o for o in held if stored.get(o.id) != o]
    if extra:
        delete_dense(index, extra)
    if stale:
        upsert_dense(index, stale)
    return len(extra) + len(stale)


def rebuild_bm25(folder: str | os.PathLike[str], held: Sequence[DataObject], config: BM25Config) -> BM25Index:
    """The BM25 part built again from ``held`` into ``folder`` (replacing what is there in one rename), opened.

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "bm25"
        >>> len(rebuild_bm25(d, [Passage(id="a", text="tea")], BM25Config()))
        1
    """
    BM25Index.build(held, config, folder=folder)
    return BM25Index.load(folder, corpus=held)
