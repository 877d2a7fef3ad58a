"""The objects a :class:`~retrievekit.core.index.dense.DenseIndex` holds, read back from its collection, so a
reopened cache entry can be checked against the corpus it is opened for
(:func:`~retrievekit.core.index.corpus_record.check_same_corpus`).

Examples:
    >>> import numpy as np
    >>> from retrievekit.core.index.dense import DenseIndex
    >>> from retrievekit.core.types import Passage
    >>> class Ones:  # a stand-in embedder; the default is all-MiniLM-L6-v2
    ...     name, dim = "ones", 2
    ...     def embed_documents(self, texts, **kw): return np.ones((len(texts), 2), dtype=np.float32)
    ...     def embed_query(self, text): return np.ones(2, dtype=np.float32)
    >>> idx = DenseIndex.build([Passage(id="b", text="y"), Passage(id="a", text="x")], embedder=Ones())
    >>> sorted((o.id, o.text) for o in stored_objects(idx))
    [('a', 'x'), ('b', 'y')]
"""

from __future__ import annotations

import json
from typing import Any

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.types import DataObject, object_from_dict

__all__ = ["PAGE", "stored_objects"]

PAGE = 5_000
"""Objects read from the collection per request."""

_OBJ_KEY = "rk_object"  # where a DenseIndex keeps each object's JSON (retrievekit.core.index.dense)


def stored_objects(index: Any) -> list[DataObject]:
    """Every object a ``DenseIndex`` holds (its collection's stored JSON), read ``PAGE`` at a time through the
    index's calls (finite timeout, typed errors); a row without retrievekit's object raises
    :class:`~retrievekit.core.errors.IndexFormatError` naming its id.

    Examples:
        >>> class Rows:  # a stand-in index whose collection holds one row of another tool's
        ...     class collection:
        ...         @staticmethod
        ...         def get(include, limit, offset):
        ...             return {"ids": ["x"][offset:], "metadatas": [{"note": 1}][offset:]}
        ...     class _calls:
        ...         @staticmethod
        ...         def run(op, fn): return fn()
        >>> stored_objects(Rows())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: the collection's row 'x' holds no retrievekit object
    """
    col, out, offset = index.collection, [], 0
    while True:
        got = index._calls.run("get", lambda at=offset: col.get(include=["metadatas"], limit=PAGE, offset=at))
        ids, metas = list(got.get("ids") or []), list(got.get("metadatas") or [])
        if len(metas) != len(ids):
            raise IndexFormatError(f"the collection answered {len(ids)} ids with {len(metas)} metadata rows")
        offset += len(ids)
        for oid, meta in zip(ids, metas, strict=True):
            raw = (meta or {}).get(_OBJ_KEY)
            if not isinstance(raw, str):
                raise IndexFormatError(f"the collection's row {oid!r} holds no retrievekit object")
            try:
                out.append(object_from_dict(json.loads(raw)))
            except (ValueError, KeyError, TypeError) as e:
                raise IndexFormatError(f"the collection's row {oid!r} holds a damaged object ({e})") from e
        if len(ids) < PAGE:
            return out
