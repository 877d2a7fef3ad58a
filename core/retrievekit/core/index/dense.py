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
    >>> class Words:  # a stand-in embedder (counts of three words); the default is all-MiniLM-L6-v2
    ...     name, dim = "words", 3
    ...     def embed_query(self, text): return np.array([text.count(w) for w in ("cat", "stock", "dog")]) + 0.1
    ...     def embed_documents(self, texts, **kw): return np.array([self.embed_query(t) for t in texts])
    >>> idx = DenseIndex.build([Passage(id="a", text="cats purr"), Passage(id="b", text="stock markets")], embedder=Words())
    >>> idx.search("a cat", k=1)[0].id
    'a'
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import IndexFormatError, InvalidInputError, MissingDependencyError
from retrievekit.core.index.embeddings import Embedder, MiniLMEmbedder
from retrievekit.core.index.store import atomic_folder, object_json, read_manifest, write_manifest
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit, object_from_dict

__all__ = ["DenseIndex"]

FORMAT = "dense"
FORMAT_VERSION = 1
_OBJ_KEY = "rk_object"


def _chromadb() -> Any:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        import chromadb
    except ImportError as e:
        raise MissingDependencyError("chromadb", 'pip install torch==2.13.0 "retrievekit[dense]"') from e
    return chromadb


def persistent_client(path: str | os.PathLike[str]) -> Any:
    """An embedded Chroma ``PersistentClient`` on ``path`` with telemetry off.

    Examples:
        >>> import tempfile
        >>> persistent_client(tempfile.mkdtemp()).heartbeat() > 0
        True
    """
    chromadb = _chromadb()
    return chromadb.PersistentClient(path=str(path), settings=chromadb.Settings(anonymized_telemetry=False))


class DenseIndex:
    """Nearest-neighbour search over embedded objects in a Chroma collection (cosine).

    Scores are cosine similarities in [-1, 1].

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> class Words:  # a stand-in embedder (counts of three words); the default is all-MiniLM-L6-v2
        ...     name, dim = "words", 3
        ...     def embed_query(self, text): return np.array([text.count(w) for w in ("cat", "stock", "dog")]) + 0.1
        ...     def embed_documents(self, texts, **kw): return np.array([self.embed_query(t) for t in texts])
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
    ) -> None:
        self.collection = collection
        self.embedder = embedder
        self.client = client
        self.path = path
        self._closed = False
        # What close() releases, also run when the index is garbage-collected: the collection of an in-memory
        # index (its own) and a client this index opened itself. A client passed in is the caller's.
        drop = collection.name if drop_on_close else None
        self._release = weakref.finalize(self, _release, client if owns_client else None, client, drop)
        self._release.atexit = False  # at exit the process gives everything back anyway

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Release what the index holds: the Chroma client it opened (its SQLite files and threads) and, in memory,
        its own collection. A client passed in (``client=``) stays open. Safe to call twice; searching a closed
        index raises :class:`InvalidInputError`. An index that is garbage-collected unclosed is released then.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> class Words:  # a stand-in embedder (counts of three words)
            ...     name, dim = "words", 3
            ...     def embed_query(self, text): return np.array([text.count(w) for w in ("cat", "stock", "dog")]) + 0.1
            ...     def embed_documents(self, texts, **kw): return np.array([self.embed_query(t) for t in texts])
            >>> with DenseIndex.build([Passage(id="a", text="cats")], embedder=Words()) as idx:
            ...     idx.search("cat", k=1)[0].id
            'a'
            >>> idx.search("cat")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: this DenseIndex is closed
        """
        self._closed = True
        self._release()

    def __enter__(self) -> DenseIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        embedder: Embedder | None = None,
        batch_size: int = 256,
        overwrite: bool = False,
        progress: bool = False,
    ) -> DenseIndex:
        """Embed and index objects.

        Args:
            objects: the corpus.
            path: folder for an embedded ``PersistentClient`` (built atomically). None with no ``client``: in memory,
                in a collection of this index's own (``collection_name`` plus a unique suffix).
            client: an existing Chroma client (e.g. ``chromadb.HttpClient(host, port)`` for a server).
            collection_name: Chroma collection name (3–512 characters).
            embedder: defaults to all-MiniLM-L6-v2 from its wheel.
            batch_size: objects embedded and added per batch.
            overwrite: replace an existing index/collection of that name instead of failing.
            progress: show a progress bar while embedding.

        Examples:
            >>> DenseIndex.build([])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
        """
        objs = check_corpus(objects)
        if not 3 <= len(collection_name) <= 512:
            raise InvalidInputError("collection_name must be 3-512 characters (a Chroma rule)")
        emb = embedder or MiniLMEmbedder.default()
        if client is not None and path is not None:
            raise InvalidInputError("pass either path= (embedded Chroma) or client= (e.g. a Chroma server), not both")
        if client is not None:
            existing = [c.name if hasattr(c, "name") else c for c in client.list_collections()]
            if collection_name in existing:
                if not overwrite:
                    raise InvalidInputError(f"collection {collection_name!r} already exists (pass overwrite=True)")
                client.delete_collection(collection_name)
            col = cls._create(client, collection_name, emb)
            idx = cls(col, emb, client=client)
            idx.add(objs, batch_size=batch_size, progress=progress)
            return idx
        if path is None:
            # The in-process EphemeralClient is one shared store: a name of its own per build, never a delete.
            client = _chromadb().EphemeralClient(settings=_chromadb().Settings(anonymized_telemetry=False))
            own = f"{collection_name[:490]}-{uuid.uuid4().hex[:16]}"
            idx = cls(cls._create(client, own, emb), emb, client=client, owns_client=True, drop_on_close=True)
            try:
                idx.add(objs, batch_size=batch_size, progress=progress)
            except BaseException:
                idx.close()
                raise
            return idx
        final = Path(path)
        if final.exists() and any(final.iterdir()) and not overwrite:
            raise InvalidInputError(f"{final} exists and is not empty (pass overwrite=True to replace it)")
        with atomic_folder(final) as tmp:
            tmp_client = persistent_client(tmp / "chroma")
            try:
                col = cls._create(tmp_client, collection_name, emb)
                cls(col, emb, client=tmp_client).add(objs, batch_size=batch_size, progress=progress)
                n = col.count()
            finally:
                _close_client(tmp_client)
            write_manifest(
                tmp,
                FORMAT,
                FORMAT_VERSION,
                {"collection": collection_name, "embedder": emb.name, "dim": emb.dim, "n_objects": n},
            )
        return cls.open(final, embedder=emb)

    @staticmethod
    def _create(client: Any, name: str, emb: Embedder) -> Any:
        meta = {
            "retrievekit_format": FORMAT,
            "retrievekit_format_version": FORMAT_VERSION,
            "embedder": emb.name,
            "dim": emb.dim,
        }
        return client.create_collection(
            name, configuration={"hnsw": {"space": "cosine"}}, metadata=meta, embedding_function=None
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        client: Any = None,
        collection_name: str | None = None,
        embedder: Embedder | None = None,
    ) -> DenseIndex:
        """Reopen an index from its folder, or a collection on a Chroma client/server.

        Raises :class:`IndexFormatError` for a missing, foreign or newer-version index, or an embedder mismatch.

        Examples:
            >>> import tempfile
            >>> DenseIndex.open(tempfile.mkdtemp())
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
        """
        if path is not None:
            manifest = read_manifest(path, FORMAT, FORMAT_VERSION)
            collection_name = collection_name or manifest.get("collection", "retrievekit")
            chroma_dir = Path(path) / "chroma"
            if not (chroma_dir / "chroma.sqlite3").is_file():
                raise IndexFormatError(f"{path}: the Chroma database (chroma/chroma.sqlite3) is missing")
            client = persistent_client(chroma_dir)
            try:
                return cls._open_collection(client, collection_name, embedder, path=Path(path), owns_client=True)
            except BaseException:
                _close_client(client)
                raise
        if client is None:
            raise InvalidInputError("pass path= or client=")
        return cls._open_collection(client, collection_name, embedder, path=None, owns_client=False)

    @classmethod
    def _open_collection(
        cls,
        client: Any,
        collection_name: str | None,
        embedder: Embedder | None,
        *,
        path: Path | None,
        owns_client: bool,
    ) -> DenseIndex:
        """The index over ``client``'s collection, after checking its format and embedder."""
        name = collection_name or "retrievekit"
        try:
            col = client.get_collection(name, embedding_function=None)
        except Exception as e:  # chroma raises NotFoundError / ValueError depending on version
            raise IndexFormatError(f"no Chroma collection {name!r} ({type(e).__name__}: {e})") from e
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
        emb = embedder or MiniLMEmbedder.default()
        if meta.get("embedder") != emb.name or meta.get("dim") != emb.dim:
            raise IndexFormatError(
                f"collection {name!r} was embedded with {meta.get('embedder')!r} (dim {meta.get('dim')}), "
                f"but the embedder given is {emb.name!r} (dim {emb.dim}); pass the matching embedder or rebuild"
            )
        return cls(col, emb, client=client, path=path, owns_client=owns_client)

    # ------------------------------------------------------------------ use
    def __len__(self) -> int:
        return int(self._live().count())

    def add(self, objects: Sequence[DataObject], *, batch_size: int = 256, progress: bool = False) -> None:
        """Embed and add objects (ids must be new)."""
        objs = check_corpus(objects)
        ids = [o.id for o in objs]
        clash = self._live().get(ids=ids, include=[])["ids"]
        if clash:
            raise InvalidInputError(f"{len(clash)} object ids already in the index, e.g. {clash[0]!r}")
        step = max(1, min(batch_size, _max_batch(self.client)))
        bar = _progress(len(objs), progress)
        for start in range(0, len(objs), step):
            part = objs[start : start + step]
            vecs = self.embedder.embed_documents([o.index_text() for o in part])
            self.collection.add(
                ids=[o.id for o in part],
                embeddings=vecs.tolist(),
                metadatas=[{_OBJ_KEY: object_json(o)} for o in part],
            )
            bar.update(len(part))
        bar.close()

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top-``k`` objects by cosine similarity."""
        q = check_query(query)
        check_k(k)
        self._live()
        trace = trace if trace is not None else Trace()
        with trace.stage("dense"):
            with trace.stage("dense.embed"):
                vec = np.asarray(self.embedder.embed_query(q), dtype=np.float32)
            n = min(k, len(self))
            if n == 0:
                return []
            res = self._live().query(query_embeddings=[vec.tolist()], n_results=n, include=["distances", "metadatas"])
        hits = []
        rows = sorted(
            zip(res["distances"][0], res["ids"][0], res["metadatas"][0], strict=True), key=lambda r: (r[0], r[1])
        )
        for rank, (dist, _id, meta) in enumerate(rows):
            hits.append(ScoredHit(obj=object_from_dict(json.loads(meta[_OBJ_KEY])), score=1.0 - float(dist), rank=rank))
        return hits


def _max_batch(client: Any) -> int:
    try:
        return int(client.get_max_batch_size())
    except Exception:
        return 1000


def _release(owned: Any, client: Any, drop: str | None) -> None:
    """Delete the in-memory collection ``drop`` (if any) from ``client`` and close ``owned`` (if any); never raises."""
    if drop is not None:
        try:
            client.delete_collection(drop)
        except Exception:  # already gone, or the client is closed: nothing left to free
            pass
    if owned is not None:
        try:
            _close_client(owned)
        except Exception:  # pragma: no cover - a client that fails to close has nothing more to give back
            pass


def _close_client(client: Any) -> None:
    """Close a Chroma client this module opened (its system stops when no other client shares it)."""
    if hasattr(client, "close"):
        client.close()
    else:  # pragma: no cover - chromadb without Client.close
        _clear_chroma_cache()


def _stop_chroma_system(chroma_dir: Path) -> None:
    """Stop the shared Chroma system of one folder (its files are about to go); other folders' stay as they are."""
    try:
        from chromadb.api.client import SharedSystemClient

        for key in {str(chroma_dir), str(chroma_dir.resolve())}:
            system = SharedSystemClient._identifier_to_system.pop(key, None)
            SharedSystemClient._identifier_to_refcount.pop(key, None)
            if system is not None:
                system.stop()
    except Exception:  # pragma: no cover - internal API moved: the folder is removed all the same
        pass


def _clear_chroma_cache() -> None:
    try:
        from chromadb.api.client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:  # pragma: no cover - internal API moved
        pass


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="embedding", unit="obj")


def remove_index(path: str | os.PathLike[str]) -> None:
    """Delete an index folder (only if it is a retrievekit dense index).

    Examples:
        >>> remove_index("/nonexistent")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: index folder /nonexistent does not exist
    """
    read_manifest(path, FORMAT, FORMAT_VERSION)
    _stop_chroma_system(Path(path) / "chroma")
    shutil.rmtree(path)
