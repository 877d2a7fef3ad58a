"""The ``dense`` method (and ``hybrid``'s dense side) in a vector store kind of your choice: the ``store`` option.

``retrievekit bench --method dense --option store=faiss`` embeds the corpus into an in-process HNSW graph instead of
Chroma (``docs/benchmarks.md`` measures both): any kind of :data:`~retrievekit.core.index.store_kinds.STORE_KINDS`
that keeps its vectors in a folder (``path=``, ``create=``) serves, and ``"chroma"`` (the default) keeps the
:class:`~retrievekit.core.index.dense.DenseIndex`.

1. **Where.** With a work dir, the store lives in ``dense-KIND-<corpus fingerprint>/``, built once under the work
   dir's build lock into a folder of its own and renamed into place when complete (a build killed half way leaves
   nothing that could be mistaken for the corpus); without one, in the kind's ``-memory`` variant.
2. **Reopened, not rebuilt.** A complete folder is opened as it is; its embedding model is checked against yours
   (``EmbedderMismatchError``) by :class:`~retrievekit.core.index.store_retriever.StoreRetriever`.
3. **Searched** as any store is (:class:`~retrievekit.core.index.store_retriever.StoreRetriever`).

Examples:
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> from retrievekit.core.types import Passage
    >>> r = dense_in_store([Passage(id="a", text="x")], "faiss", OnesEmbedder(), None)
    >>> len(r), type(r.store).__name__
    (1, 'FaissStore')
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.store_kinds import open_store, store_kinds
from retrievekit.core.index.store_retriever import StoreRetriever
from retrievekit.core.types import DataObject

__all__ = ["DEFAULT_STORE", "dense_in_store", "store_kind_option"]

DEFAULT_STORE = "chroma"
"""The ``store`` option's default: the :class:`~retrievekit.core.index.dense.DenseIndex` (Chroma)."""


def store_kind_option(value: object) -> str:
    """The ``store`` option as a kind that can hold a built corpus: a known kind with a ``-memory`` variant or
    ``chroma``; anything else is an ``InvalidInputError`` naming the kinds.

    Examples:
        >>> store_kind_option("faiss"), store_kind_option(None)
        ('faiss', 'chroma')
        >>> store_kind_option("faiss-memory")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option store must be one of chroma, faiss (a kind that builds in a folder), got 'faiss-memory'
    """
    kind = DEFAULT_STORE if value is None else str(value).strip()
    known = store_kinds()
    buildable = sorted(k for k in known if f"{k}-memory" in known)
    if kind not in buildable:
        raise InvalidInputError(
            f"option store must be one of {', '.join(buildable)} (a kind that builds in a folder), got {value!r}"
        )
    return kind


def dense_in_store(
    corpus: Sequence[DataObject], kind: str, embedder: Any, folder: str | os.PathLike[str] | None
) -> StoreRetriever:
    """``corpus`` embedded into a store of ``kind`` in ``folder`` (reopened when it is complete there), or in the
    kind's in-memory variant when ``folder`` is None (module docstring).

    Examples:
        >>> import tempfile
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> from retrievekit.core.types import Passage
        >>> d = tempfile.mkdtemp() + "/dense-faiss"
        >>> first = dense_in_store([Passage(id="a", text="x")], "faiss", OnesEmbedder(), d); first.close()
        >>> [h.id for h in dense_in_store([Passage(id="a", text="x")], "faiss", OnesEmbedder(), d).search("x", k=1)]
        ['a']
    """
    if folder is None:
        retriever = StoreRetriever(open_store(f"{kind}-memory"), embedder)
        retriever.add(corpus)
        return retriever
    path = Path(folder)
    if path.exists():
        try:
            return StoreRetriever(open_store(kind, path=str(path)), embedder)
        except IndexFormatError:
            shutil.rmtree(path)  # not a store of this kind (damaged, or left by another version): built again
    building = path.with_name(path.name + ".building")
    shutil.rmtree(building, ignore_errors=True)  # a build killed half way
    store = open_store(kind, path=str(building), create=True)
    try:
        StoreRetriever(store, embedder).add(corpus)
        _saved(store)
    finally:
        store.close()
    os.replace(building, path)
    return StoreRetriever(open_store(kind, path=str(path)), embedder)


def _saved(store: Any) -> None:
    """Write a store that keeps its additions in memory until asked (a faiss graph) to its folder."""
    save = getattr(store, "save", None)
    if callable(save):
        save()
