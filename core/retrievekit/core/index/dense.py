"""Dense index: Chroma collection + an embedder (all-MiniLM-L6-v2 by default).

Works over any Chroma client: an embedded ``PersistentClient`` folder (the
default, written atomically: built in a temp folder and renamed into place),
an in-memory ``EphemeralClient`` (no path; every build gets its own collection, so two in-memory indexes in one
process never share or delete each other's), or a Chroma server via ``chromadb.HttpClient`` (pass ``client=``)
when one machine is not enough. :meth:`DenseIndex.close` (or ``with DenseIndex.open(path) as idx:``) releases the
files and threads an index holds.
The collection's metadata records the format version and the embedder, so an
index built with another model or by another tool is refused with
:class:`IndexFormatError` rather than silently returning wrong neighbours.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.fakes import WordCountEmbedder as Words  # a stand-in for all-MiniLM-L6-v2
    >>> idx = DenseIndex.build([Passage(id="a", text="cats purr"), Passage(id="b", text="stock markets")], embedder=Words())
    >>> idx.search("a cat", k=1)[0].id
    'a'
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
import warnings
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import (
    IndexFormatError,
    InvalidInputError,
    UnverifiedIndexWarning,
)
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.awaited import OBJ_KEY as _OBJ_KEY
from retrievekit.core.index.awaited import asearch_dense, query_hits
from retrievekit.core.index.checksums import refuse_stripped_seal, sqlite_digest, verify_checksums
from retrievekit.core.index.chroma_calls import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S, StoreCalls
from retrievekit.core.index.chroma_clients import (
    _chromadb,
    _clear_chroma_cache,  # noqa: F401  (still importable from here)
    _close_client,
    _release,
    _stop_chroma_system,
    add_step,
    http_client,
    persistent_client,
)
from retrievekit.core.index.collection_swap import BUILT_AT as _BUILT_AT
from retrievekit.core.index.collection_swap import STATE as _STATE
from retrievekit.core.index.collection_swap import recover_swap, swap_in, sweep_leftovers
from retrievekit.core.index.embeddings import Embedder, MiniLMEmbedder
from retrievekit.core.index.fingerprint import check_embedder, embedder_fingerprint, recorded_fingerprint
from retrievekit.core.index.hnsw_writes import add_requests, build_write_every, hnsw_settings
from retrievekit.core.index.open_folders import folder_identity, open_handles
from retrievekit.core.index.store import MANIFEST, atomic_folder, object_json, read_manifest, write_manifest
from retrievekit.core.retriever import ClosesOnExit
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["DenseIndex", "http_client", "persistent_client"]

_ID_CHECK_CHUNK = 10_000  # ids per clash check in add(): below SQLite's limit on variables per query

FORMAT = "dense"
FORMAT_VERSION = 1
_SQLITE = "chroma/chroma.sqlite3"


class DenseIndex(ClosesOnExit):
    """Nearest-neighbour search over embedded objects in a Chroma collection (cosine).

    Scores are cosine similarities in [-1, 1].

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import WordCountEmbedder as Words  # a stand-in for all-MiniLM-L6-v2
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "dense"
        >>> _ = DenseIndex.build([Passage(id="a", text="cats purr"), Passage(id="b", text="stocks")], d, embedder=Words())
        >>> idx = DenseIndex.open(d, embedder=Words())
        >>> idx.add([Passage(id="c", text="a dog barks")])
        >>> len(idx), idx.search("dog", k=1)[0].id
        (3, 'c')
    """

    def __init__(
        self,
        collection: Any,
        embedder: Embedder,
        *,
        client: Any = None,
        path: Path | None = None,
        owns_client: bool = False,
        drop_on_close: bool = False,
        calls: StoreCalls | None = None,
    ) -> None:
        self.collection = collection
        self.embedder = embedder
        self.client = client
        self.path = path
        self._closed = False
        self._calls = calls if calls is not None else StoreCalls(client, timeout=None)
        self._modified = False  # a folder index changed in place since its manifest was sealed: close() seals it
        self._folder_id = folder_identity(path)  # the folder this handle reads: close() seals that one only
        # What close() releases, also run when the index is garbage-collected: the collection of an in-memory
        # index (its own) and a client this index opened itself. A client passed in is the caller's.
        drop = collection.name if drop_on_close else None
        self._release = weakref.finalize(self, _release, client if owns_client else None, client, drop)
        self._release.atexit = False  # at exit the process gives everything back anyway

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Release what the index holds: the Chroma client it opened (its SQLite files and threads) and, in memory,
        its own collection. A client passed in (``client=``) stays open. A folder index changed by :meth:`add` is
        sealed again (fresh checksums in its manifest). Safe to call twice; searching a closed index raises
        :class:`InvalidInputError`. An index that is garbage-collected unclosed is released then (unsealed: the
        next :meth:`open` warns that it cannot verify the folder).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.fakes import WordCountEmbedder as Words  # a stand-in for all-MiniLM-L6-v2
            >>> with DenseIndex.build([Passage(id="a", text="cats")], embedder=Words()) as idx:
            ...     idx.search("cat", k=1)[0].id
            'a'
            >>> idx.search("cat")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: this DenseIndex is closed
        """
        if self._closed:
            return
        n = len(self) if self._modified and self.path is not None else None
        self._closed = True
        self._release()
        if n is not None and self.path is not None:
            if folder_identity(self.path) != self._folder_id:  # rebuilt or replaced since: not this handle's folder
                warnings.warn(
                    f"{self.path} was replaced while this DenseIndex was open; close() leaves its seal alone",
                    UnverifiedIndexWarning,
                    stacklevel=2,
                )
            else:
                _seal(self.path, self.collection.name, self.embedder, n)
            self._modified = False

    def _live(self) -> Any:
        """The collection, or :class:`InvalidInputError` once the index is closed."""
        if self._closed:
            raise InvalidInputError("this DenseIndex is closed")
        return self.collection

    # ------------------------------------------------------------------ build / open
    @classmethod
    def build(
        cls,
        objects: Iterable[DataObject],
        path: str | os.PathLike[str] | None = None,
        *,
        client: Any = None,
        collection_name: str = "retrievekit",
        embedder: Any = None,
        batch_size: int = 256,
        overwrite: bool = False,
        progress: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
    ) -> DenseIndex:
        """Embed and index objects. Every build is all-or-nothing: a folder is built beside ``path`` and renamed
        into place; on a server the collection is built under a temporary name, marked complete, then swapped in,
        so a build that fails or is killed part-way never replaces (or deletes) the index that was there.

        Args:
            objects: the corpus.
            path: folder for an embedded ``PersistentClient`` (built atomically). None with no ``client``: in memory,
                in a collection of this index's own (``collection_name`` plus a unique suffix).
            client: an existing Chroma client (e.g. ``chromadb.HttpClient(host, port)`` for a server).
            collection_name: Chroma collection name (3–512 characters).
            embedder: defaults to all-MiniLM-L6-v2 from its wheel; also a LlamaIndex ``BaseEmbedding``, a LangChain
                ``Embeddings`` or ``"openai:MODEL@URL"`` (:func:`~retrievekit.core.index.as_embedder.as_embedder`).
            batch_size: objects embedded and added per batch.
            overwrite: replace an existing index/collection of that name (only once the new one is complete).
            progress: show a progress bar while embedding.
            timeout: seconds a Chroma server may take per request (set on ``client``'s HTTP session); None keeps
                the client's own (chromadb's default is to wait forever).
            retries: further tries of a server read that timed out or could not connect.

        Examples:
            >>> DenseIndex.build([])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
        """
        objs = check_corpus(objects)
        if not 3 <= len(collection_name) <= 512:
            raise InvalidInputError("collection_name must be 3-512 characters (a Chroma rule)")
        emb = as_embedder(embedder, where="DenseIndex.build") or MiniLMEmbedder.default()
        if client is not None and path is not None:
            raise InvalidInputError("pass either path= (embedded Chroma) or client= (e.g. a Chroma server), not both")
        if client is not None:
            calls = StoreCalls(client, timeout=timeout, retries=retries)
            return cls._build_on_client(objs, client, collection_name, emb, calls, batch_size, overwrite, progress)
        if path is None:
            # The in-process EphemeralClient is one shared store: a name of its own per build, never a delete.
            client = _chromadb().EphemeralClient(settings=_chromadb().Settings(anonymized_telemetry=False))
            own = f"{collection_name[:490]}-{uuid.uuid4().hex[:16]}"
            every = build_write_every(len(objs), batch_size, client)
            idx = cls(cls._create(client, own, emb, every), emb, client=client, owns_client=True, drop_on_close=True)
            try:
                idx._add(objs, batch_size=batch_size, progress=progress, write_every=every)
            except BaseException:
                idx.close()
                raise
            return idx
        final = Path(path)
        if final.exists() and any(final.iterdir()) and not overwrite:
            raise InvalidInputError(f"{final} exists and is not empty (pass overwrite=True to replace it)")
        if any(not h._closed for h in open_handles(final)):
            raise InvalidInputError(
                f"a DenseIndex is open on {final} in this process: close() it before building there again (its "
                "Chroma client would keep reading the old index)"
            )
        with atomic_folder(final) as tmp:
            tmp_client = persistent_client(tmp / "chroma")
            try:
                every = build_write_every(len(objs), batch_size, tmp_client)
                col = cls._create(tmp_client, collection_name, emb, every)
                building = cls(col, emb, client=tmp_client)
                building._add(objs, batch_size=batch_size, progress=progress, write_every=every)
                n = len(building)
            finally:
                _close_client(tmp_client)
            _seal(tmp, collection_name, emb, n)
        return cls.open(final, embedder=emb)

    @classmethod
    def _build_on_client(
        cls,
        objs: list[DataObject],
        client: Any,
        name: str,
        emb: Embedder,
        calls: StoreCalls,
        batch_size: int,
        overwrite: bool,
        progress: bool,
    ) -> DenseIndex:
        """Build in a temporary collection, mark it complete, then swap it in under ``name``."""
        existing = {c.name if hasattr(c, "name") else c for c in calls.run("list collections", client.list_collections)}
        if name in existing and not overwrite:
            raise InvalidInputError(f"collection {name!r} already exists (pass overwrite=True)")
        tmp_name = f"{name[:470]}-rk-building-{uuid.uuid4().hex[:16]}"
        every = build_write_every(len(objs), batch_size, client)
        col = calls.run("create collection", lambda: cls._create(client, tmp_name, emb, every), retry=False)
        idx = cls(col, emb, client=client, calls=calls)
        try:
            idx._add(objs, batch_size=batch_size, progress=progress, write_every=every)
            n = len(idx)
            if n != len(objs):
                raise IndexFormatError(f"the server holds {n} of the {len(objs)} objects just added to {tmp_name!r}")
            swap_in(calls, client, col, name, replace=name in existing)
        except BaseException:
            try:
                client.delete_collection(tmp_name)
            except Exception:  # the server is gone or the swap already renamed it: nothing more to undo here
                pass
            raise
        try:  # what killed earlier overwrites left behind; the new index is in place whatever happens here
            sweep_leftovers(calls, client, name, older_than=float((col.metadata or {}).get(_BUILT_AT, 0.0)))
        except Exception as e:
            warnings.warn(
                f"leftover collections of {name!r} could not be deleted ({e}); a later build retries", stacklevel=3
            )
        return idx

    @staticmethod
    def _create(client: Any, name: str, emb: Embedder, write_every: int) -> Any:
        """A new collection, marked as being built, whose HNSW graph Chroma writes every ``write_every`` objects
        (:mod:`~retrievekit.core.index.hnsw_writes`: the build's last write lands on its last object, so every
        open loads the same graph and a folder's checksums stay valid across opens). Objects added later by
        :meth:`add` sit in the log until the next write, as Chroma does by default.
        """
        config = {"hnsw": {"space": "cosine", **hnsw_settings(write_every)}}
        meta = {**_meta(emb, "building", 0), _BUILT_AT: time.time()}  # when: orphans older than a finished build go
        return client.create_collection(name, configuration=config, metadata=meta, embedding_function=None)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        client: Any = None,
        collection_name: str | None = None,
        embedder: Any = None,
        verify: bool = True,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
    ) -> DenseIndex:
        """Reopen an index from its folder, or a collection on a Chroma client/server.

        A folder is verified before Chroma reads any of it (``verify=False`` skips this): every stored file
        against the sha256 in the manifest, and the SQLite database's content against its recorded digest, so a
        damaged index raises :class:`IndexFormatError` instead of returning wrong neighbours or crashing the
        process. The number of objects is checked against the manifest and the collection's completion mark; a
        collection whose build never finished is refused, and so are (unless ``verify=False``) one with no
        completion mark and one whose ``add()`` did not finish.

        Raises :class:`IndexFormatError` for a missing, foreign, damaged, incomplete or newer-version index, and its
        subclass :class:`~retrievekit.core.errors.EmbedderMismatchError` for another embedding model (another
        dimension, or probe vectors unlike the recorded ones: :mod:`~retrievekit.core.index.fingerprint`);
        :class:`~retrievekit.core.errors.StoreUnavailableError` for a server that cannot be reached or does not answer
        within ``timeout`` seconds after ``retries`` further tries.

        Examples:
            >>> import tempfile
            >>> DenseIndex.open(tempfile.mkdtemp())
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
        """
        if path is not None:
            folder = Path(path)
            manifest = read_manifest(folder, FORMAT, FORMAT_VERSION, verify=False)
            if not (folder / _SQLITE).is_file():
                raise IndexFormatError(f"{path}: the Chroma database (chroma/chroma.sqlite3) is missing")
            reseal = _verify_folder(folder, manifest) if verify else False
            client = persistent_client(folder / "chroma")
            try:
                idx = cls._open_collection(
                    client, collection_name or manifest.get("collection", "retrievekit"), embedder,
                    path=folder, owns_client=True, verify=verify,
                    calls=StoreCalls(client, timeout=None, where=str(folder)),
                )  # fmt: skip
                expected = manifest.get("n_objects")
                if verify and "checksums" in manifest and isinstance(expected, int) and len(idx) != expected:
                    raise IndexFormatError(f"{path} holds {len(idx)} objects but its manifest says {expected}")
            except BaseException:
                _close_client(client)
                raise
            idx._modified = reseal
            open_handles(folder).add(idx)  # a build there refuses while it is open
            return idx
        if client is None:
            raise InvalidInputError("pass path= or client=")
        calls = StoreCalls(client, timeout=timeout, retries=retries)
        return cls._open_collection(
            client, collection_name, embedder, path=None, owns_client=False, calls=calls, verify=verify
        )

    @classmethod
    def _open_collection(
        cls,
        client: Any,
        collection_name: str | None,
        embedder: Any,
        *,
        path: Path | None,
        owns_client: bool,
        calls: StoreCalls,
        verify: bool = True,
    ) -> DenseIndex:
        """The index over ``client``'s collection, after checking its format, embedder and completeness."""
        name = collection_name or "retrievekit"
        try:
            col = calls.run("get collection", lambda: client.get_collection(name, embedding_function=None))
        except (IndexFormatError, ValueError) as e:  # chroma raises ValueError for a missing one in some versions
            if not recover_swap(calls, client, name):
                raise IndexFormatError(f"no Chroma collection {name!r} ({type(e).__name__}: {e})") from e
            col = calls.run("get collection", lambda: client.get_collection(name, embedding_function=None))
        meta = col.metadata or {}
        if meta.get("retrievekit_format") != FORMAT:
            raise IndexFormatError(
                f"Chroma collection {name!r} was not written by retrievekit (no retrievekit_format metadata)"
            )
        version = meta.get("retrievekit_format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise IndexFormatError(
                f"collection {name!r} has format version {version!r}; this retrievekit reads up to {FORMAT_VERSION}"
            )
        emb = as_embedder(embedder, where="DenseIndex.open") or MiniLMEmbedder.default()
        found = recorded_fingerprint(
            meta.get("embedder"), meta.get("dim"), meta.get(_FINGERPRINT), where="the collection"
        )
        check_embedder(found, emb, where=f"collection {name!r}")
        idx = cls(col, emb, client=client, path=path, owns_client=owns_client, calls=calls)
        _check_complete(idx, name, meta, strict=verify)
        return idx

    # ------------------------------------------------------------------ use
    def __len__(self) -> int:
        col = self._live()
        return int(self._calls.run("count", col.count))

    def add(self, objects: Sequence[DataObject], *, batch_size: int = 256, progress: bool = False) -> None:
        """Embed and add objects (ids must be new).

        While it runs the collection is marked as being changed; a folder index is sealed again (fresh checksums)
        by :meth:`close`.
        """
        self._add(objects, batch_size=batch_size, progress=progress)

    def _add(self, objects: Sequence[DataObject], *, batch_size: int, progress: bool, write_every: int = 0) -> None:
        """:meth:`add`; a build (an empty collection created with a write every ``write_every`` objects) sends its
        requests as :func:`~retrievekit.core.index.hnsw_writes.add_requests` plans, so Chroma's last write of the
        graph lands on the last object."""
        objs = check_corpus(objects)
        col = self._live()
        ids = [o.id for o in objs]
        clash: list[str] = []
        for start in range(0, len(ids), _ID_CHECK_CHUNK):  # one SQL variable per id: SQLite allows 32,766 a query
            chunk = ids[start : start + _ID_CHECK_CHUNK]
            clash += self._calls.run("get", lambda c=chunk: col.get(ids=c, include=[]))["ids"]  # type: ignore[misc]
        if clash:
            raise InvalidInputError(f"{len(clash)} object ids already in the index, e.g. {clash[0]!r}")
        self._begin_change()
        step = add_step(batch_size, self.client)
        every = write_every or len(objs) + step  # a plain add: batches of step
        bar = _progress(len(objs), progress)
        for start, end in add_requests(len(objs), step=step, every=every):
            part = objs[start:end]
            texts = [o.index_text() for o in part]
            vecs = np.concatenate(
                [self.embedder.embed_documents(texts[i : i + step]) for i in range(0, len(part), step)]
            )
            batch = {
                "ids": [o.id for o in part],
                "embeddings": vecs.tolist(),
                "metadatas": [{_OBJ_KEY: object_json(o)} for o in part],
            }
            self._calls.run("add", lambda b=batch: col.add(**b), retry=False)  # type: ignore[misc]
            bar.update(len(part))
        bar.close()
        self._set_state("complete", len(self))

    def _begin_change(self) -> None:
        """Mark the collection (and a folder's manifest) as being changed, so an interrupted add is never trusted."""
        if self.path is not None and folder_identity(self.path) != self._folder_id:
            raise InvalidInputError(
                f"{self.path} was replaced (rebuilt) while this DenseIndex was open; open it again to add to it"
            )
        if self.path is not None and not self._modified:
            manifest = read_manifest(self.path, FORMAT, FORMAT_VERSION, verify=False)
            fields = {k: v for k, v in manifest.items() if k not in _MANIFEST_OWN}
            write_manifest(self.path, FORMAT, FORMAT_VERSION, {**fields, "modified": True}, checksums=False)
            self._modified = True
        if (self.collection.metadata or {}).get(_STATE) != "building":
            self._set_state("adding", (self.collection.metadata or {}).get("n_objects", 0))

    def _set_state(self, state: str, n: int) -> None:
        meta = {**(self.collection.metadata or {}), _STATE: state, "n_objects": int(n)}
        col = self.collection
        self._calls.run("mark the collection", lambda: col.modify(metadata=meta))

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top-``k`` objects by cosine similarity."""
        q, col, trace = self._search_plan(query, k, trace)
        with trace.stage("dense"):
            with trace.stage("dense.embed"):
                vec = np.asarray(self.embedder.embed_query(q), dtype=np.float32)
            # k as asked: Chroma returns what it holds when that is fewer (counting first costs a scan of the index)
            res = self._calls.run(
                "query",
                lambda: col.query(query_embeddings=[vec.tolist()], n_results=k, include=["distances", "metadatas"]),
            )
        return query_hits(res)

    asearch = asearch_dense  # awaited: the query's embedding awaited for an async embedder (index.awaited)

    def _search_plan(self, query: str, k: int, trace: Trace | None) -> tuple[str, Any, Trace]:
        """What :meth:`search` and :meth:`asearch` check and settle first: the query (checked), the open collection
        (a closed index refused) and the trace to write (a new one when none is given)."""
        q = check_query(query)
        check_k(k)
        return q, self._live(), trace if trace is not None else Trace()


_FINGERPRINT = "embedder_fingerprint"


_MANIFEST_OWN = frozenset({"format", "format_version", "retrievekit_version", "checksums", "sqlite_digest"})


def _meta(emb: Embedder, state: str, n: int) -> dict[str, Any]:
    """A collection's metadata: retrievekit's format, the embedder (its name, dimension and probe fingerprint,
    :mod:`~retrievekit.core.index.fingerprint`), the build state and the object count."""
    fingerprint = embedder_fingerprint(emb)
    return {
        "retrievekit_format": FORMAT,
        "retrievekit_format_version": FORMAT_VERSION,
        "embedder": emb.name,
        "dim": emb.dim,
        _FINGERPRINT: json.dumps(fingerprint["probes"]),
        _STATE: state,
        "n_objects": n,
    }


def _check_complete(idx: DenseIndex, name: str, meta: dict[str, Any], *, strict: bool = True) -> None:
    """Refuse a collection whose build never finished or whose count differs from its mark. An unmarked collection
    (built before marks existed) and one whose ``add()`` did not finish are refused too, unless ``strict`` is off
    (``open(..., verify=False)``), which opens them with a warning."""
    state = meta.get(_STATE)
    if state == "building":
        raise IndexFormatError(f"collection {name!r} is incomplete: its build never finished; build it again")
    n, expected = len(idx), meta.get("n_objects")
    unsure = {
        None: f"collection {name!r} has no completion mark (built by a retrievekit that did not mark finished "
        "builds), so its completeness cannot be checked",
        "adding": f"collection {name!r}: an add() did not finish (or is running now); it holds {n} objects, "
        f"{expected} before that add",
    }
    if state in unsure:
        if strict:
            raise IndexFormatError(f"{unsure[state]}; build it again, or pass verify=False to open it as it is")
        warnings.warn(f"{unsure[state]}; opened as it is (verify=False)", UnverifiedIndexWarning, stacklevel=4)
        return
    if isinstance(expected, int) and n != expected:
        raise IndexFormatError(f"collection {name!r} holds {n} objects but was marked complete with {expected}")


def _seal(folder: Path, collection: str, emb: Embedder, n: int) -> None:
    """Write a folder index's manifest with checksums of its files and a digest of its database's content."""
    fields = {
        "collection": collection,
        "embedder": emb.name,
        "dim": emb.dim,
        "n_objects": n,
        "sqlite_digest": sqlite_digest(folder / _SQLITE),
        "chromadb_version": _chromadb().__version__,
    }
    write_manifest(folder, FORMAT, FORMAT_VERSION, fields, exclude=[_SQLITE])


def _verify_folder(folder: Path, manifest: dict[str, Any]) -> bool:
    """Check a folder before Chroma reads it; returns whether it must be sealed again at close (another chromadb).

    Raises :class:`IndexFormatError` for a missing or altered file or database content.
    """
    if "checksums" not in manifest:
        why = (
            "an add() changed it and the index was not closed"
            if manifest.get("modified") is True
            else f"it was written by retrievekit {refuse_stripped_seal(folder, manifest)}, before checksums"
        )
        warnings.warn(
            f"{folder}: the index cannot be verified ({why}); open it and close() it, or build it again, to seal it",
            UnverifiedIndexWarning,
            stacklevel=3,
        )
        sqlite_digest(folder / _SQLITE)  # still refuse a database SQLite itself reports as damaged
        return bool(manifest.get("modified"))
    verify_checksums(folder, manifest["checksums"], exclude=[MANIFEST, _SQLITE])
    if sqlite_digest(folder / _SQLITE) != manifest.get("sqlite_digest"):  # before any chromadb touched it
        raise IndexFormatError(
            f"{folder} is damaged: the content of {_SQLITE} does not match its recorded digest; rebuild the index"
        )
    # another chromadb may migrate the database once it opens it: checked above, sealed again at close
    return manifest.get("chromadb_version") != _chromadb().__version__


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="embedding", unit="obj", disable=not enabled)


def remove_index(path: str | os.PathLike[str]) -> None:
    """Delete an index folder (only if it is a retrievekit dense index).

    Examples:
        >>> remove_index("/nonexistent")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: index folder /nonexistent does not exist
    """
    read_manifest(path, FORMAT, FORMAT_VERSION, verify=False)  # a dense index folder, whatever its state
    _stop_chroma_system(Path(path) / "chroma")
    shutil.rmtree(path)
