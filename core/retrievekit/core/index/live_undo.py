"""A living index's change, all or nothing: :func:`undone_on_failure`.

A :class:`~retrievekit.core.index.live.LiveIndex` subclass whose part is one object swapped in by
``_change_parts`` (LATTICE's tree, MindRef's ``MindRef``) runs its ``upsert`` and ``delete`` inside this context:
when the change raises (the LLM unreachable, a reserved id, a full disk), the held objects and that part are put
back as they were before it, so a failing change leaves the index as it was.

Examples:
    >>> class Index:
    ...     def __init__(self): self._objects, self._part = {"a": 1}, "old"
    >>> idx = Index()
    >>> with undone_on_failure(idx, "_part"):
    ...     idx._objects["b"], idx._part = 2, "new"
    >>> idx._objects, idx._part
    ({'a': 1, 'b': 2}, 'new')
    >>> try:
    ...     with undone_on_failure(idx, "_part"):
    ...         idx._objects["c"], idx._part = 3, "newer"
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> idx._objects, idx._part
    ({'a': 1, 'b': 2}, 'new')
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["undone_on_failure"]


@contextmanager
def undone_on_failure(index: Any, part: str) -> Iterator[None]:
    """Run the block as one change of ``index``: if it raises (any exception, a cancellation included), restore
    ``index._objects`` (a shallow copy taken on entry) and ``index.<part>`` (the object held on entry: a change
    swaps in a new one, never edits it) and re-raise.

    Examples:
        >>> class Index:
        ...     def __init__(self): self._objects, self._tree = {}, None
        >>> idx = Index()
        >>> with undone_on_failure(idx, "_tree"):
        ...     idx._objects["a"] = "x"
        >>> idx._objects
        {'a': 'x'}
    """
    objects, held = dict(index._objects), getattr(index, part)
    try:
        yield
    except BaseException:
        index._objects = objects
        setattr(index, part, held)
        raise
