"""A living index's BM25 part brought to the held objects after a change: in place on the tantivy engine (its ``add``
/ ``delete``), built again from them on the bm25s engine (traced as ``bm25_rebuilt``), and kept in the index's
folder.

Examples:
    >>> from retrievekit.core.index.bm25 import BM25Config
    >>> from retrievekit.core.types import Passage
    >>> part = changed_bm25(None, [Passage(id="a", text="red apples")], [], [], BM25Config(), None, Trace())
    >>> part.search("apples", k=1)[0].id
    'a'
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.index.bm25 import BM25Config, BM25Index
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["changed_bm25", "has_text"]


def has_text(objects: Sequence[DataObject]) -> bool:
    """Whether any of ``objects`` has text to index (a BM25 part over none would be empty).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> has_text([Passage(id="a", text=" ")]), has_text([Passage(id="a", text="tea")])
        (False, True)
    """
    return any(o.index_text().strip() for o in objects)


def changed_bm25(
    bm25: Any,
    held: Sequence[DataObject],
    removed: list[str],
    added: list[DataObject],
    config: BM25Config,
    path: Path | None,
    trace: Trace,
) -> BM25Index | None:
    """The BM25 part over ``held`` after a change (``removed`` ids, ``added`` objects) to ``bm25`` (None: none
    yet); written to ``path / "bm25"`` for a folder index (removed there when no object has text).

    Examples:
        >>> changed_bm25(None, [], [], [], BM25Config(), None, Trace()) is None
        True
    """
    part: Any = bm25
    if not has_text(held):
        part = None
    elif part is None:
        part = BM25Index.build(held, config)
    elif part.config.engine == "tantivy":  # in place: a new segment, tombstones (the part's engine: its folder's)
        if removed:
            part.delete(removed)
        if added:
            part.add(added)
    else:  # bm25s has no in-place change: one build over the held objects (not one per delete and add)
        part = BM25Index.build(held, part.config)
        trace.note(
            "bm25_rebuilt",
            "the bm25s engine has no in-place change: the BM25 part was built again over the held objects "
            '(bm25_engine="tantivy" changes it in place)',
            objects=len(held),
        )
    if path is not None:
        if part is not None:
            part.save(path / "bm25")  # a tantivy part changed in its folder: nothing to write
            if part.config.engine == "tantivy" and part.folder is None:
                part = BM25Index.load(path / "bm25")  # built in memory: change it in its folder
        elif (path / "bm25").exists():
            shutil.rmtree(path / "bm25")
    return part
