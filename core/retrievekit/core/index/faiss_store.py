"""An in-process HNSW store (faiss) behind the :class:`~retrievekit.core.index.vector_store.VectorStore` interface:
the fastest vector path on one machine (``docs/benchmarks.md``, "Vector paths"), one setting away from Chroma
(``open_store("faiss", path=..., create=True)``).

A folder holds ``objects.sqlite3`` (one row per object: its id, the object as JSON, its filterable metadata as JSON,
and the label of its vector) and ``vectors.<generation>.faiss`` (a faiss ``IndexHNSWFlat`` over unit vectors, inner
product: cosine; with ``dtype="float16"`` an ``IndexHNSWSQ`` holding each vector in 16-bit floats). Vectors live in
memory while the store is open; objects stay in SQLite and are read per hit.

Writes (:meth:`FaissStore.add`, :meth:`FaissStore.delete`) change the open store at once and reach the folder at
:meth:`FaissStore.save` (and at :meth:`FaissStore.close`): the graph is written to a new generation's file (temp
file, fsync, rename), then one SQLite transaction commits the rows written since the last save together with the
new generation number, then the old file is removed. A crash at any point leaves the last saved state, whole: the
rows of an unsaved write roll back with the transaction, and the generation SQLite names is always a file on disk.

A deleted object's vector stays in the graph, skipped by every search, until :meth:`FaissStore.compact` rebuilds
the graph of the live vectors. A ``where`` filter selects the objects in SQLite (``json_extract``, values bound as
parameters); few matches (at most :data:`EXACT_BELOW`) are ranked exactly, more through the graph with faiss's
``IDSelectorBitmap``.

Examples:
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from retrievekit.core.types import Passage
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "vectors"
    >>> store = FaissStore.open(folder, create=True, dtype="float16")
    >>> docs = [Passage(id="a", text="cats"), Passage(id="b", text="stocks")]
    >>> store.add(docs, np.eye(2), record={"retrievekit_embedder": "toy", "retrievekit_dim": 2})
    >>> store.close()  # saves: the graph's new generation, then the rows in one transaction
    >>> again = FaissStore.open(folder)
    >>> again.count(), again.search(np.array([1.0, 0.1]), k=1)[0].id, again.settings["dtype"]
    (2, 'a', 'float16')
    >>> again.close()
"""

from __future__ import annotations

import json
import os
import threading
import warnings
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_k
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.faiss_files import FaissFiles, faiss_module
from retrievekit.core.index.store import object_json
from retrievekit.core.index.store_input import check_ids, check_query_vector
from retrievekit.core.index.vector_store import DIM_KEY, check_vectors, check_where
from retrievekit.core.retriever import ClosesOnExit
from retrievekit.core.types import DataObject, ScoredHit, object_from_dict

__all__ = ["DTYPES", "EXACT_BELOW", "FaissStore", "HNSW_DEFAULTS", "UnsavedWritesWarning"]

HNSW_DEFAULTS = {"m": 16, "ef_construction": 100, "ef_search": 100}
"""The graph's settings when none are given: Chroma's defaults, so the two stores build the same graph."""
DTYPES = ("float32", "float16")
"""How a store holds each vector (``dtype=``, chosen at creation): ``float32`` (the default, faiss's
``IndexHNSWFlat``) or ``float16`` (``IndexHNSWSQ`` with ``QT_fp16``: half the memory and the graph file; the recall
it costs is in ``docs/benchmarks.md``, "Vector paths")."""
EXACT_BELOW = 10_000
"""A filtered search over at most this many matching objects ranks them exactly (no graph)."""


class FaissStore(ClosesOnExit):
    """Objects and their vectors in a faiss HNSW graph (cosine), in memory or in a folder.

    Args:
        files: the folder's files (:class:`~retrievekit.core.index.faiss_files.FaissFiles`), or None in memory.
        ef_search: how many candidates a search explores (more: better recall, slower); None keeps the saved one.

    Examples:
        >>> FaissStore.in_memory().kind
        'faiss'
    """

    kind = "faiss"

    def __init__(self, files: FaissFiles, *, ef_search: int | None = None) -> None:
        self._faiss = faiss_module()
        self._files = files
        self._lock = threading.RLock()
        self.label = f"faiss store {files.label}"
        try:
            self.settings = files.settings()
            if ef_search is not None:
                self.settings["ef_search"] = _positive("ef_search", ef_search)
            self._index = files.load_index(self._faiss)
            self._live = files.live_labels(self._index.ntotal if self._index is not None else 0)
        except BaseException:
            files.close()  # a damaged folder or a bad setting: the database is not left open
            raise
        self._bitmap: Any = None  # the packed live bitmap, made again after a delete
        self._dirty = False
        self._closed = False
        # A store dropped unclosed: its unsaved writes roll back with the database, said aloud (never silently).
        self._dropped = weakref.finalize(self, _dropped, files, self.label)

    # ------------------------------------------------------------------ open
    @classmethod
    def in_memory(cls, **settings: Any) -> FaissStore:
        """A store of its own that lives as long as it is open (nothing is written to disk).

        Examples:
            >>> FaissStore.in_memory(ef_search=50).settings["ef_search"]
            50
        """
        ef = settings.pop("ef_search", None)
        return cls(FaissFiles.in_memory(_settings(settings)), ef_search=ef)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        create: bool = False,
        m: int | None = None,
        ef_construction: int | None = None,
        ef_search: int | None = None,
        dtype: str | None = None,
    ) -> FaissStore:
        """The store in folder ``path``; ``create`` makes it when missing (with graph settings ``m`` and
        ``ef_construction`` and the vectors' ``dtype``, one of :data:`DTYPES`; a store that exists keeps its own).
        ``ef_search`` sets this handle's search breadth.

        A folder that is not a store, or a damaged one, raises :class:`~retrievekit.core.errors.IndexFormatError`;
        one another process is writing raises :class:`~retrievekit.core.errors.IndexLockedError` at the first write.

        Examples:
            >>> import tempfile, pathlib
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "vectors"
            >>> FaissStore.open(d)
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: no faiss store at ...vectors (pass create=True to make one)
            >>> FaissStore.open(d, create=True, m=8).settings["m"], FaissStore.open(d).settings["dtype"]
            (8, 'float32')
        """
        faiss_module()  # a missing package is said before any folder is made
        wanted = _settings({"m": m, "ef_construction": ef_construction, "dtype": dtype})
        return cls(FaissFiles.open(Path(path), create=create, settings=wanted), ef_search=ef_search)

    # ------------------------------------------------------------------ the interface
    def recorded_embedder(self) -> dict[str, Any] | None:
        """The embedding model recorded at the first :meth:`add`, or None.

        Examples:
            >>> FaissStore.in_memory().recorded_embedder() is None
            True
        """
        with self._lock:
            return self._files.record()

    def add(self, objects: Sequence[DataObject], vectors: np.ndarray, *, record: Mapping[str, Any]) -> None:
        """Add objects with their vectors (an id already stored is replaced); the first add records the embedding
        model and the dimension. Zero vectors and ids repeated in one call raise
        :class:`~retrievekit.core.errors.InvalidInputError` before anything is written.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> s = FaissStore.in_memory()
            >>> s.add([Passage(id="a", text="x")], np.ones((1, 2)), record={"retrievekit_embedder": "e", "retrievekit_dim": 2})
            >>> s.add([Passage(id="a", text="y")], np.array([[1.0, 0.0]]), record={})
            >>> s.count(), s.search(np.array([1.0, 0.0]), k=1)[0].obj.text
            (1, 'y')
        """
        with self._lock:
            self._check_open()
            dim = self._files.dim() or record.get(DIM_KEY)
            vecs = _unit_rows(check_vectors(objects, vectors, dim))
            ids = [o.id for o in objects]
            if len(set(ids)) != len(ids):
                dup = sorted({i for i in ids if ids.count(i) > 1})[0]
                raise InvalidInputError(f"object id {dup!r} appears twice in one add to the {self.label}")
            rows = [(o.id, object_json(o), json.dumps(_filterable(o.metadata), ensure_ascii=False)) for o in objects]
            if not rows:
                return
            if self._index is None:
                self._index = self._new_index(vecs.shape[1])
                self._files.set_dim(vecs.shape[1], dict(record))
            elif self._files.record() is None and record:
                self._files.set_dim(vecs.shape[1], dict(record))
            replaced = self._files.insert(rows, first_label=self._index.ntotal)
            self._index.add(vecs)
            self._live = np.concatenate([self._live, np.ones(len(rows), dtype=bool)])
            self._dirty = True
            self._forget(replaced)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the objects with these ids (ids not in the store are ignored).

        Examples:
            >>> s = FaissStore.in_memory(); s.delete(["nope"]); s.count()
            0
        """
        with self._lock:
            self._check_open()
            self._forget(self._files.remove(check_ids(ids)))

    def count(self) -> int:
        """How many objects the store holds.

        Examples:
            >>> FaissStore.in_memory().count()
            0
        """
        with self._lock:
            self._check_open()
            return self._files.count()

    def search(self, vector: np.ndarray, k: int, *, where: Mapping[str, Any] | None = None) -> list[ScoredHit]:
        """The ``k`` nearest objects by cosine similarity (ties by id), among those matching ``where``.

        Examples:
            >>> FaissStore.in_memory().search(np.ones(2), k=3)
            []
        """
        check_k(k)
        query = np.asarray(check_query_vector(vector), dtype=np.float32)
        filt = check_where(where)
        with self._lock:
            self._check_open()
            if self._index is None or self._index.ntotal == 0:
                return []
            if query.shape[0] != self._index.d:
                raise InvalidInputError(
                    f"a query vector of dimension {query.shape[0]} for the {self.label}, which holds dimension "
                    f"{self._index.d}"
                )
            query = _unit_rows(query[None, :])[0]
            allowed = self._files.matching(filt) if filt else None
            labels, scores = self._nearest(query, k, allowed)
            return self._hits(labels, scores)

    def save(self) -> None:
        """Write what changed since the last save to the folder (nothing in memory, nor when nothing changed).

        Examples:
            >>> import tempfile
            >>> s = FaissStore.open(tempfile.mkdtemp() + "/v", create=True); s.save(); s.close()
        """
        with self._lock:
            self._check_open()
            if self._dirty or self._files.pending():
                self._files.commit(self._index, self._faiss)
                self._dirty = False

    def compact(self) -> None:
        """Rebuild the graph from the live vectors only (deleted ones leave it) and save.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> s = FaissStore.in_memory()
            >>> s.add([Passage(id=i, text=i) for i in "ab"], np.eye(2), record={})
            >>> s.delete(["a"]); s.compact(); s.count(), s._index.ntotal
            (1, 1)
        """
        with self._lock:
            self._check_open()
            if self._index is None or bool(self._live.all()):
                return
            keep = np.flatnonzero(self._live)
            fresh = self._new_index(self._index.d)
            if keep.size:
                fresh.add(self._index.reconstruct_batch(keep.astype(np.int64)))
            self._files.relabel(keep)
            self._index, self._live, self._bitmap = fresh, np.ones(keep.size, dtype=bool), None
            self._dirty = True
            self.save()

    def close(self) -> None:
        """Save (a folder store) and release the store. Safe to call twice; a closed store raises
        :class:`~retrievekit.core.errors.InvalidInputError`.

        Examples:
            >>> s = FaissStore.in_memory(); s.close(); s.close()
        """
        with self._lock:
            if self._closed:
                return
            try:
                self.save()
            finally:
                self._closed = True
                self._index = None
                self._dropped.detach()
                self._files.close()

    # ------------------------------------------------------------------ inside
    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInputError(f"the {self.label} is closed")

    def _new_index(self, dim: int) -> Any:
        faiss, m = self._faiss, int(self.settings["m"])
        if self.settings["dtype"] == "float16":
            index = faiss.IndexHNSWSQ(int(dim), faiss.ScalarQuantizer.QT_fp16, m, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexHNSWFlat(int(dim), m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(self.settings["ef_construction"])
        return index

    def _forget(self, labels: Sequence[int]) -> None:
        if len(labels):
            self._live[np.asarray(labels, dtype=np.int64)] = False
            self._bitmap = None
            self._dirty = True

    def _nearest(self, query: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Labels and scores of the ``k`` nearest live vectors (among ``allowed`` labels when given)."""
        if allowed is not None:
            allowed = allowed[self._live[allowed]]
            if allowed.size <= EXACT_BELOW:
                return _exact(self._index, query, k, allowed)
            mask = np.zeros(self._index.ntotal, dtype=bool)
            mask[allowed] = True
            bits = np.packbits(mask, bitorder="little")
        elif self._live.all():
            bits = None
        else:
            if self._bitmap is None:
                self._bitmap = np.packbits(self._live, bitorder="little")
            bits = self._bitmap
        params = self._faiss.SearchParametersHNSW()
        params.efSearch = max(int(self.settings["ef_search"]), k)
        if bits is not None:
            selector = self._faiss.IDSelectorBitmap(self._index.ntotal, self._faiss.swig_ptr(bits))
            params.sel = selector
        scores, labels = self._index.search(query[None, :], k, params=params)
        keep = labels[0] >= 0
        return labels[0][keep], scores[0][keep]

    def _hits(self, labels: np.ndarray, scores: np.ndarray) -> list[ScoredHit]:
        """The hits' objects as they were added (the embedder is the store's own record, checked once by
        :class:`~retrievekit.core.index.store_retriever.StoreRetriever`: not repeated in every hit)."""
        found = self._files.objects([int(x) for x in labels])
        rows = sorted(
            ((float(s), found[int(lab)]) for lab, s in zip(labels, scores, strict=True) if int(lab) in found),
            key=lambda r: (-r[0], r[1][0]),
        )
        return [
            ScoredHit(obj=object_from_dict(json.loads(raw)), score=score, rank=rank)
            for rank, (score, (_, raw)) in enumerate(rows)
        ]


def _dropped(files: FaissFiles, label: str) -> None:
    """A store garbage-collected (or left open at exit) without :meth:`FaissStore.close`: warn when writes were
    not saved (they are lost), and close the database."""
    if files.pending() and files.folder is not None:  # in memory, everything goes with the store: nothing to say
        warnings.warn(
            f"the {label} was dropped without save() or close(): its writes since the last save are lost",
            UnsavedWritesWarning,
            stacklevel=2,
        )
    files.close()


class UnsavedWritesWarning(UserWarning):
    """A :class:`FaissStore` was dropped (garbage-collected, or left open at exit) with writes it never saved.

    Examples:
        >>> issubclass(UnsavedWritesWarning, UserWarning)
        True
    """


def _exact(index: Any, query: np.ndarray, k: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of ``allowed`` by exact inner product (a selective filter: the graph would miss them)."""
    if allowed.size == 0:
        return allowed, np.zeros(0, dtype=np.float32)
    allowed = np.sort(allowed)
    scores = index.reconstruct_batch(allowed.astype(np.int64)) @ query
    order = np.lexsort((allowed, -scores))[:k]
    return allowed[order], scores[order]


def _unit_rows(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    if (norms == 0).any():
        raise InvalidInputError(f"vector {int(np.flatnonzero(norms[:, 0] == 0)[0])} is all zeros: it has no direction")
    return np.ascontiguousarray(vecs / norms, dtype=np.float32)


def _filterable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if isinstance(v, str | int | float | bool)}


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise InvalidInputError(f"{name} must be an integer from 1 to 100000, got {value!r}")
    return value


def _settings(given: Mapping[str, Any]) -> dict[str, Any]:
    known = [*HNSW_DEFAULTS, "dtype"]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InvalidInputError(f"unknown faiss store setting {unknown[0]!r}; known: {', '.join(known)}")
    dtype = given.get("dtype") or DTYPES[0]
    if dtype not in DTYPES:
        raise InvalidInputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    out: dict[str, Any] = dict(HNSW_DEFAULTS)
    out.update({k: _positive(k, v) for k, v in given.items() if v is not None and k != "dtype"})
    if out["m"] < 2:
        raise InvalidInputError(f"m must be at least 2, got {out['m']}")
    return {**out, "dtype": dtype}
