"""Change a :class:`~retrievekit.core.index.dense.DenseIndex` in place: upsert (embed and add or replace objects by
id) and delete by id, through the index's own calls (finite timeout, typed errors) and its change marks (a folder
index is sealed again by ``close()``; an interrupted change is never trusted on open).

Examples:
    >>> from retrievekit.core.index.dense import DenseIndex
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.fakes import WordCountEmbedder as Words  # a stand-in for all-MiniLM-L6-v2
    >>> idx = DenseIndex.build([Passage(id="a", text="cats purr"), Passage(id="b", text="stocks")], embedder=Words())
    >>> upsert_dense(idx, [Passage(id="a", text="a dog barks")])
    >>> delete_dense(idx, ["b", "missing"])
    ['b']
    >>> len(idx), idx.search("dog", k=1)[0].obj.text
    (1, 'a dog barks')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from retrievekit.core.index.chroma_clients import add_step
from retrievekit.core.index.store import object_json
from retrievekit.core.types import DataObject

__all__ = ["delete_dense", "upsert_dense"]

_OBJ_KEY = "rk_object"  # where a DenseIndex keeps each object's JSON (retrievekit.core.index.dense)
_ID_CHUNK = 10_000  # ids per request: below SQLite's limit on variables per query


def upsert_dense(index: Any, objects: Sequence[DataObject], *, batch_size: int = 256) -> None:
    """Embed ``objects`` and add them to ``index``, replacing the vectors and objects of ids it already holds
    (Chroma's ``upsert``). Ids must be unique within ``objects`` (the caller checks them:
    :func:`~retrievekit.core.index.updatable.check_batch`).

    Examples:
        >>> upsert_dense(None, [])  # nothing to do
    """
    if not objects:
        return
    objs = list(objects)
    col = index._live()
    index._begin_change()
    step = add_step(batch_size, index.client)
    for start in range(0, len(objs), step):
        part = objs[start : start + step]
        vecs = np.asarray(index.embedder.embed_documents([o.index_text() for o in part]), dtype=np.float32)
        batch = {
            "ids": [o.id for o in part],
            "embeddings": vecs.tolist(),
            "metadatas": [{_OBJ_KEY: object_json(o)} for o in part],
        }
        index._calls.run("upsert", lambda b=batch: col.upsert(**b), retry=False)
    index._set_state("complete", len(index))


def delete_dense(index: Any, ids: Sequence[str]) -> list[str]:
    """Delete the objects of ``ids`` from ``index``; returns those it held (in the order given, each once). Ids it
    does not hold are left be.

    Examples:
        >>> delete_dense(None, [])
        []
    """
    wanted = list(dict.fromkeys(str(i) for i in ids))
    if not wanted:
        return []
    col = index._live()
    held: set[str] = set()
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        held |= set(index._calls.run("get", lambda c=chunk: col.get(ids=c, include=[]))["ids"])
    found = [i for i in wanted if i in held]
    if not found:
        return []
    index._begin_change()
    for start in range(0, len(found), _ID_CHUNK):
        chunk = found[start : start + _ID_CHUNK]
        index._calls.run("delete", lambda c=chunk: col.delete(ids=c), retry=False)
    index._set_state("complete", len(index))
    return found
