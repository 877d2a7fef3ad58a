"""The server-side overwrite of a dense index: a finished build swapped in under the index's name, and what a killed
swap leaves behind finished, rolled back or swept.

A build fills ``<name>-rk-building-<random>``, marks it complete and renames it to ``<name>``; with ``overwrite`` the
collection already there is renamed to ``<name>-rk-old-<random>`` first and deleted only once the new one holds the
name (:func:`swap_in`). Each step is one server call, so a kill can fall between any two:
:func:`recover_swap` (called by ``DenseIndex.open`` when nothing holds the name) finishes the swap with the newest
finished build or gives the old collection its name back, and :func:`sweep_leftovers` (after every finished build)
deletes the old collections and the builds started before it.

Examples:
    >>> STATE, BUILT_AT
    ('retrievekit_state', 'retrievekit_built_at')
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from retrievekit.core.index.chroma_calls import StoreCalls

__all__ = ["BUILT_AT", "STATE", "recover_swap", "swap_in", "sweep_leftovers"]

STATE = "retrievekit_state"
"""Collection metadata: ``"building"`` -> ``"complete"``; ``"adding"`` while an ``add()`` runs."""
BUILT_AT = "retrievekit_built_at"
"""Collection metadata: when its build started (``time.time()``)."""


def swap_in(calls: StoreCalls, client: Any, col: Any, name: str, *, replace: bool) -> None:
    """Rename the finished collection ``col`` to ``name``; a collection already there is renamed away first and
    deleted only once the new one holds the name (renamed back if that fails).

    Examples:
        >>> swap_in(StoreCalls(None), None, None, "kbase", replace=True)  # a real Chroma client  # doctest: +SKIP
    """
    if not replace:
        calls.run("rename the new collection", lambda: col.modify(name=name), retry=False)
        return
    old = calls.run("get collection", lambda: client.get_collection(name, embedding_function=None))
    old_name = f"{name[:470]}-rk-old-{uuid.uuid4().hex[:16]}"
    calls.run("rename the old collection", lambda: old.modify(name=old_name), retry=False)
    try:
        calls.run("rename the new collection", lambda: col.modify(name=name), retry=False)
    except BaseException:
        old.modify(name=name)
        raise
    calls.run("delete the old collection", lambda: client.delete_collection(old_name), retry=False)


def _leftovers(calls: StoreCalls, client: Any, name: str) -> dict[str, list[tuple[float, str, dict[str, Any]]]]:
    """The ``-rk-building-`` and ``-rk-old-`` collections an overwrite of ``name`` may have left, oldest first, each
    as ``(built_at, name, metadata)``."""
    out: dict[str, list[tuple[float, str, dict[str, Any]]]] = {"building": [], "old": []}
    for kind in out:
        prefix = f"{name[:470]}-rk-{kind}-"
        for c in calls.run("list collections", client.list_collections):
            cname = c.name if hasattr(c, "name") else str(c)
            if not cname.startswith(prefix):
                continue
            got = calls.run("get collection", functools.partial(client.get_collection, cname, embedding_function=None))
            meta = dict(got.metadata or {})
            out[kind].append((float(meta.get(BUILT_AT, 0.0) or 0.0), cname, meta))
        out[kind].sort()
    return out


def recover_swap(calls: StoreCalls, client: Any, name: str) -> bool:
    """Finish or roll back an overwrite killed between its two renames (nothing holds ``name``): the newest finished
    build takes the name (the old collection is deleted), else the old collection takes its name back. Returns
    whether a collection holds ``name`` now.

    Examples:
        >>> recover_swap(StoreCalls(None), client, "kbase")  # a real Chroma client  # doctest: +SKIP
        True
    """
    left = _leftovers(calls, client, name)
    finished = [item for item in left["building"] if item[2].get(STATE) == "complete"]
    if finished:
        new = finished[-1][1]
        col = calls.run("get collection", lambda: client.get_collection(new, embedding_function=None))
        calls.run("finish the interrupted swap", lambda: col.modify(name=name), retry=False)
        for _t, old, _m in left["old"]:
            calls.run("delete the old collection", functools.partial(client.delete_collection, old), retry=False)
        return True
    if left["old"]:
        old = left["old"][-1][1]
        col = calls.run("get collection", lambda: client.get_collection(old, embedding_function=None))
        calls.run("roll back the interrupted swap", lambda: col.modify(name=name), retry=False)
        return True
    return False


def sweep_leftovers(calls: StoreCalls, client: Any, name: str, *, older_than: float) -> None:
    """Delete what killed overwrites of ``name`` left behind and a finished build made obsolete: every
    ``-rk-old-`` collection, and every ``-rk-building-`` one started before ``older_than`` (a newer one may be another
    build still running).

    Examples:
        >>> sweep_leftovers(StoreCalls(None), client, "kbase", older_than=1.7e9)  # a real Chroma client  # doctest: +SKIP
    """
    left = _leftovers(calls, client, name)
    doomed = [c for _, c, _m in left["old"]] + [c for t, c, _m in left["building"] if t < older_than]
    for c in doomed:
        calls.run("delete a leftover collection", functools.partial(client.delete_collection, c), retry=False)
