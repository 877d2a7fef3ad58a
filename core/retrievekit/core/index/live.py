"""A living ``bm25`` / ``dense`` / ``hybrid`` index: objects added, replaced and removed by id, in place, and kept
in its folder (:class:`LiveIndex`, an :class:`~retrievekit.core.index.updatable.UpdatableIndex`).

After any sequence of changes it answers as a fresh build over the objects it holds: the dense side changes its Chroma
collection in place (:mod:`~retrievekit.core.index.dense_updates`: only the objects that changed are embedded); the BM25
side uses ``BM25Index``'s in-place ``add`` / ``delete``. On the default engine (option ``bm25_engine``, ``bm25`` and
``hybrid``: ``"tantivy"``) the BM25 part is tantivy's, changed in place in its folder; its deleted documents stay in
tantivy's statistics until a merge or a compaction (which ``delete`` runs on its own above 10 % deleted documents,
:data:`~retrievekit.core.index.bm25_engine.COMPACT_ABOVE`), and meanwhile its searches score over the live ones, so
scores stay a fresh build's.

A folder index (``path=``) holds ``live/`` (its manifest, with the method and options, the objects, and the log of
the changes since, :mod:`~retrievekit.core.index.live_log`: each line with the
:func:`~retrievekit.core.index.corpus_record.corpus_record` after it), ``bm25/`` and ``dense/`` (the parts, each a
retrievekit index folder). A change is written part by part, ``live/`` last (the commit: its line appended to the
log, or, once the log outgrows a quarter of the objects, all of ``live/`` rewritten in one swap);
:meth:`LiveIndex.open` checks every part against ``live/``'s objects and brings one that moved on without a commit
(a change killed part-way) back to them (:mod:`~retrievekit.core.index.live_repair`, an
:class:`~retrievekit.core.errors.IndexRepairedWarning`).

A change holds the writer lock (:mod:`~retrievekit.core.index.live_lock`; a folder's is an ``flock`` in it, waited
for :attr:`LiveIndex.writer_wait` seconds at most) and first reloads a folder another process changed, so processes
writing to one folder take turns and lose no write. Searches take no lock file; in one process a search reads one
state of the parts: it waits for a change or a reload under way, and a change for the searches under way
(:mod:`~retrievekit.core.index.live_readers`).

Examples:
    >>> from retrievekit.core.types import Passage
    >>> idx = LiveIndex.create("bm25")
    >>> idx.upsert([Passage(id="a", text="red apples"), Passage(id="b", text="green pears")])
    ['a', 'b']
    >>> idx.upsert([Passage(id="a", text="blue plums")])
    ['a']
    >>> idx.delete(["b", "zz"]), idx.ids(), idx.search("plums", k=1)[0].id
    (['b'], ['a'], 'a')
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import CorpusMismatchError, IndexFormatError, IndexRepairedWarning, InvalidInputError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.corpus_record import RECORD_KEY, CorpusTally
from retrievekit.core.index.folder_swap import restore_interrupted_swap
from retrievekit.core.index.hybrid import HybridRetriever
from retrievekit.core.index.live_bm25 import changed_bm25, has_text
from retrievekit.core.index.live_lock import LOCK_NAME, WriterLock
from retrievekit.core.index.live_log import ChangeLog, base_bytes, read_base, read_live
from retrievekit.core.index.live_options import (
    ENGINE_KEY,
    LIVE_METHODS,
    bm25_config,
    check_method,
    fusion_settings,
    no_embedder,
    options_json,
)
from retrievekit.core.index.live_readers import Readers
from retrievekit.core.index.live_repair import rebuild_bm25, reconcile_dense
from retrievekit.core.index.store import atomic_folder, write_manifest, write_objects
from retrievekit.core.index.updatable import check_batch, check_ids
from retrievekit.core.retriever import ClosesOnExit
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["LIVE_METHODS", "LiveIndex"]

FORMAT = "live"
FORMAT_VERSION = 2  # 2: changes appended to live/changes.jsonl (version 1 folders are read, and folded when changed)
FOLD: Any = object()
"""What :meth:`LiveIndex._logged_part` answers when a change cannot be written as a log line (``live/`` written whole)."""


class LiveIndex(ClosesOnExit):
    """``bm25``, ``dense`` or ``hybrid`` over objects that change: :meth:`upsert`, :meth:`delete`, :meth:`get`,
    :meth:`ids`, :meth:`search`; made empty with :meth:`create`, reopened with :meth:`open`, released with
    :meth:`close` (also ``with``).

    Args (of :meth:`create`): ``method`` (one of :data:`LIVE_METHODS`, or a method whose living index is imported:
    ``"lattice"``, ``"arm"``), ``path`` (its folder; None: in memory), ``embedder`` (``dense`` / ``hybrid``: any
    embedder ``from_documents`` takes; default all-MiniLM-L6-v2), ``options`` (``hybrid``'s: ``fusion``,
    ``dense_weight``, ``bm25_weight``, ``rrf_k``, ``candidate_k``; ``bm25``'s and ``hybrid``'s: ``bm25_engine``,
    ``"tantivy"`` by default or ``"bm25s"``), ``llm`` (the model of a method that has one; refused by the others).

    A subclass is a method's own living index: it names its methods in ``METHODS`` and changes its parts in
    :meth:`_change_parts` (and, when it keeps a part inside ``live/``, :meth:`_write_parts` and :meth:`_open_parts`);
    :meth:`create` and :meth:`open` of this class hand such a method to it.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> with LiveIndex.create("bm25") as idx:
        ...     _ = idx.upsert([Passage(id="a", text="tea")])
        ...     [o.text for o in idx.get(["a", "b"])]
        ['tea']
    """

    METHODS: ClassVar[tuple[str, ...]] = LIVE_METHODS
    """The methods this class is (a subclass names its own)."""

    _KINDS: ClassVar[dict[str, type[LiveIndex]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.METHODS:
            LiveIndex._KINDS[name] = cls

    def __init__(
        self,
        method: str,
        *,
        path: Path | None,
        embedder: Any,
        options: Mapping[str, Any],
        objects: Sequence[DataObject],
        llm: Any = None,
    ) -> None:
        self.method = check_method(method, type(self).METHODS)
        self.options = dict(options)
        self.path = path
        self._configure(self.options, llm)
        self._embedder = embedder
        self._objects: dict[str, DataObject] = {o.id: o for o in objects}
        self._tally: CorpusTally | None = None  # the held objects' corpus record, kept per change (None: count again)
        self._log: ChangeLog | None = None  # a folder's change log, as committed
        self._delta: tuple[list[str], list[DataObject], CorpusTally] | None = None  # the change _save_live commits
        self._bm25: BM25Index | None = None
        self._dense: Any = None
        self._closed = False
        # one change at a time: threads, awaited changes on the pool and, for a folder, other processes
        self._writer = WriterLock(path, on_stale=self._catch_up)
        # in this process: a search reads one state of the parts, waiting for a change or a reload under way
        self._readers = Readers(lambda: self._writer.wait_s)
        self.last_change: Trace | None = None
        """The trace of the last :meth:`upsert` or :meth:`delete` (its ``bm25_rebuilt`` event, counters)."""

    def _configure(self, options: dict[str, Any], llm: Any) -> None:
        """Parse the method's ``options`` (and take its ``llm``): here ``bm25`` / ``dense`` / ``hybrid``'s, no llm."""
        if llm is not None:
            raise InvalidInputError(
                f"llm= reaches no part of a {self.method} LiveIndex (it asks no model); leave it out"
            )
        self.bm25_config = bm25_config(self.method, options)
        self.fusion, self.weights = fusion_settings(self.method, {k: v for k, v in options.items() if k != ENGINE_KEY})

    @staticmethod
    def _kind(method: str) -> type[LiveIndex]:
        """The class that is ``method``: :class:`LiveIndex` itself, or a method's imported subclass."""
        if method in LIVE_METHODS:
            return LiveIndex
        kind = LiveIndex._KINDS.get(method) if isinstance(method, str) else None
        if kind is None:
            check_method(method)
        assert kind is not None
        return kind

    # ------------------------------------------------------------------ make, reopen, release
    @classmethod
    def create(
        cls,
        method: str = "hybrid",
        *,
        path: str | os.PathLike[str] | None = None,
        embedder: Any = None,
        options: Mapping[str, Any] | None = None,
        llm: Any = None,
    ) -> LiveIndex:
        """An empty index; a ``path`` that already holds a live index is reopened (:meth:`open`), one of another
        method refused, and a folder holding anything else refused (:class:`InvalidInputError`).

        Examples:
            >>> LiveIndex.create("sideways")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: a LiveIndex is one of ('bm25', 'dense', 'hybrid') ...
        """
        kind = cls._kind(method)
        if kind is not cls:
            return kind.create(method, path=path, embedder=embedder, options=options, llm=llm)
        opts = dict(options or {})
        folder = Path(path) if path is not None else None
        if folder is not None:
            restore_interrupted_swap(folder / "live")
        if folder is not None and (folder / "live").is_dir():
            idx = cls.open(folder, embedder=embedder, llm=llm)
            if idx.method != method or (options is not None and idx.options != opts):
                idx.close()
                raise InvalidInputError(
                    f"{folder} holds a live {idx.method} index with options {idx.options}, not {method} with {opts}; "
                    "open it with LiveIndex.open, or use another folder"
                )
            return idx
        if folder is not None and folder.exists() and any(e.name != LOCK_NAME for e in folder.iterdir()):
            raise InvalidInputError(f"{folder} exists and holds something other than a live index")
        emb = as_embedder(embedder, where="LiveIndex.create") if method != "bm25" else no_embedder(embedder)
        idx = cls(method, path=folder, embedder=emb, options=opts, objects=(), llm=llm)
        with idx._writer:  # a process that made the same folder meanwhile: its index is caught up with first
            idx._save_live()
        return idx

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, embedder: Any = None, llm: Any = None) -> LiveIndex:
        """Reopen a folder index. Each part is checked against the objects ``live/`` holds: one that holds others (a
        change killed between its parts and its commit) is brought back to them, with an
        :class:`~retrievekit.core.errors.IndexRepairedWarning`; a damaged one is an :class:`IndexFormatError`. A
        change in flight in another process is waited for (its parts are not yet committed; see :attr:`writer_wait`).

        Examples:
            >>> import tempfile
            >>> LiveIndex.open(tempfile.mkdtemp())
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... is not a live index folder (no live/)
        """
        folder = Path(path)
        cls.saved_method(folder)  # not a live index folder: refused before a lock file is made in it
        opening = WriterLock(folder, on_stale=lambda: None)
        with opening.holding(catch_up=False):
            method, options = cls.saved_method(folder)
            manifest, objects, log = read_live(folder / "live", FORMAT, FORMAT_VERSION)
            emb = as_embedder(embedder, where="LiveIndex.open") if method != "bm25" else no_embedder(embedder)
            idx = cls._kind(method)(method, path=folder, embedder=emb, options=options, objects=objects, llm=llm)
            idx._log, idx._tally = log, CorpusTally.from_record(log.record or manifest.get(RECORD_KEY))
            try:
                idx._open_parts()
            except BaseException:
                idx._forget_parts()
                raise
        idx._writer.seen = opening.seen  # the state it read, stamped by its own hold
        return idx

    @staticmethod
    def saved_method(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
        """The method and options a folder index was made with (its ``live/`` manifest), nothing else opened.

        Examples:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp() + "/idx"
            >>> LiveIndex.create("bm25", path=folder).close(); LiveIndex.saved_method(folder)
            ('bm25', {})
        """
        folder = Path(path)
        restore_interrupted_swap(folder / "live")  # a change killed between its two renames: the old live/ back
        if not (folder / "live").is_dir():
            raise IndexFormatError(f"{folder} is not a live index folder (no live/)")
        manifest = read_base(folder / "live", FORMAT, FORMAT_VERSION)
        try:
            return str(manifest["method"]), dict(manifest["options"])
        except (KeyError, TypeError, ValueError) as e:
            raise IndexFormatError(f"{folder}: the live manifest names no method and options ({e})") from e

    def _open_parts(self) -> None:
        """Load the BM25 and dense parts from the folder. ``live/`` is the commit: a part that holds other objects
        (a change killed between its parts and its commit) is brought back to the held objects
        (:mod:`~retrievekit.core.index.live_repair`), with an :class:`IndexRepairedWarning` naming it."""
        assert self.path is not None
        held = list(self._objects.values())
        repaired: list[str] = []
        if self._uses_bm25 and has_text(held):
            try:
                self._bm25 = BM25Index.load(self.path / "bm25", corpus=held)
            except CorpusMismatchError as mismatch:
                self._bm25 = rebuild_bm25(self.path / "bm25", held, self.bm25_config)
                repaired.append(f"the BM25 part, rebuilt ({mismatch})")
        if self._uses_dense and (self.path / "dense").is_dir():
            from retrievekit.core.index.dense import DenseIndex

            self._dense = DenseIndex.open(self.path / "dense", embedder=self._embedder)
            fixed = reconcile_dense(self._dense, held)
            if fixed:
                repaired.append(f"the dense part, {fixed} objects deleted or embedded again")
        elif self._uses_dense and held:
            raise IndexFormatError(f"{self.path}: the dense part (dense/) is missing")
        if repaired:
            warnings.warn(
                f"{self.path}: a change was cut short before its commit; brought back to the {len(held)} committed "
                f"objects: {'; '.join(repaired)}",
                IndexRepairedWarning,
                stacklevel=3,
            )

    def _catch_up(self) -> None:
        """Bring this index to its folder's committed state, under the writer lock before a change: another process
        changed the folder since this index read it, or cut a change short (killed, or raised). The parts are
        opened again (repaired as :meth:`open` does); a search of another thread meanwhile waits for them."""
        assert self.path is not None
        restore_interrupted_swap(self.path / "live")
        if not (self.path / "live").is_dir():  # a creator killed before its first commit: nothing to read
            return
        manifest, objects, log = read_live(self.path / "live", FORMAT, FORMAT_VERSION)
        if manifest.get("method") != self.method or options_json(manifest.get("options")) != options_json(self.options):
            raise IndexFormatError(
                f"{self.path} now holds a live {manifest.get('method')} index with options {manifest.get('options')} "
                f"(another process made it), not this {self.method} one with {self.options}"
            )
        with self._readers.changing():  # a search meanwhile waits for the reopened parts
            self._forget_parts()
            self._objects = {o.id: o for o in objects}
            self._log, self._tally = log, CorpusTally.from_record(log.record or manifest.get(RECORD_KEY))
            with warnings.catch_warnings():  # the other writer's dense part is unsealed until it closes: as expected
                warnings.filterwarnings("ignore", ".*cannot be verified \\(an add\\(\\) changed it")
                self._open_parts()

    def _forget_parts(self) -> None:
        """Drop the parts read from the folder (the dense part's client released) before they are opened again;
        a subclass drops its own too."""
        dense, self._dense, self._bm25 = self._dense, None, None
        if dense is not None:
            dense.close()

    @property
    def writer_wait(self) -> float:
        """Seconds a change (and :meth:`open`) waits for another writer of the folder (another process, or another
        index over it) before :class:`~retrievekit.core.errors.IndexLockedError`; settable.

        Examples:
            >>> idx = LiveIndex.create("bm25"); idx.writer_wait = 5; idx.writer_wait
            5.0
        """
        return self._writer.wait_s

    @writer_wait.setter
    def writer_wait(self, seconds: float) -> None:
        self._writer.wait_s = seconds

    def close(self) -> None:
        """Release the dense part's Chroma client (a folder's dense part is sealed again, under the writer lock: an
        :class:`~retrievekit.core.errors.IndexLockedError` past :attr:`writer_wait`, left open). Safe to call twice.

        Examples:
            >>> idx = LiveIndex.create("bm25"); idx.close(); idx.close()
        """
        if self._closed:
            return
        if self._dense is None:
            self._closed = True
            return
        with self._writer.holding(catch_up=False), self._readers.changing():  # searches under way finish first
            self._dense.close()  # the seal writes the dense part's manifest
            self._closed = True

    # ------------------------------------------------------------------ read
    def __len__(self) -> int:
        return len(self._objects)

    def ids(self) -> list[str]:
        """Every held id, oldest change first.

        Examples:
            >>> LiveIndex.create("bm25").ids()
            []
        """
        return list(self._objects)

    def get(self, ids: Sequence[str]) -> list[DataObject]:
        """The held objects of ``ids``, in the order asked, each once; ids not held are left out.

        Examples:
            >>> LiveIndex.create("bm25").get(["x"])
            []
        """
        return [self._objects[i] for i in check_ids(ids, where="get") if i in self._objects]

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top-``k`` held objects for ``query``, as a fresh build over them would answer. An empty index answers
        ``[]`` with an ``empty_index`` trace event.

        Examples:
            >>> t = Trace()
            >>> LiveIndex.create("bm25").search("tea", trace=t), t.events[0].kind
            ([], 'empty_index')
        """
        check_query(query)
        check_k(k)
        trace = trace if trace is not None else Trace()
        with self._readers.reading():  # one state of the parts: a change or reload under way is waited for
            self._check_open()  # (closed meanwhile: refused typed)
            if not self._objects:
                trace.note("empty_index", "the index holds no objects; returning no hits")
                return []
            if self.method == "bm25":
                return self._bm25.search(query, k, trace=trace) if self._bm25 is not None else []
            if self.method == "dense":
                return self._dense.search(query, k, trace=trace)
            parts = [self._dense, self._bm25 if self._bm25 is not None else _NoHits()]
            hybrid = HybridRetriever(parts, self.weights, config=self.fusion, names=["dense", "bm25"])
            return hybrid.search(query, k, trace=trace)

    # ------------------------------------------------------------------ change
    def upsert(self, objects: Sequence[DataObject], *, trace: Trace | None = None) -> list[str]:
        """Add ``objects``, replacing the held ones with the same ids; returns their ids, in order. An object equal
        to the one held is left as it is (nothing embedded); a replaced one moves to the end of :meth:`ids`.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> idx = LiveIndex.create("bm25")
            >>> idx.upsert([Passage(id="a", text="x")]), idx.upsert([])
            (['a'], [])
        """
        self._check_open()
        objs = check_batch(objects)
        trace = trace if trace is not None else Trace()
        with self._writer:
            changed = [o for o in objs if self._objects.get(o.id) != o]
            replaced = [o.id for o in changed if o.id in self._objects]
            trace.count("live.unchanged", len(objs) - len(changed))
            if changed:
                tally = self._held_tally().changed(removed=[self._objects[i] for i in replaced], added=changed)
                with self._readers.changing():  # searches of other threads wait: no half-made change is read
                    if self._uses_dense:
                        self._dense_upsert(changed)
                    for o in changed:
                        self._objects.pop(o.id, None)
                        self._objects[o.id] = o
                    self._change_parts(replaced, changed, trace)
                self._commit([], changed, tally)
            trace.count("live.upserted", len(changed))
            self.last_change = trace
        return [o.id for o in objs]

    def delete(self, ids: Sequence[str], *, trace: Trace | None = None) -> list[str]:
        """Remove ``ids``; returns those that were held (in the order given). Ids not held are not an error.

        Examples:
            >>> LiveIndex.create("bm25").delete(["a"])
            []
        """
        self._check_open()
        wanted = check_ids(ids, where="delete")
        trace = trace if trace is not None else Trace()
        with self._writer:
            gone = [i for i in wanted if i in self._objects]
            if gone:
                tally = self._held_tally().changed(removed=[self._objects[i] for i in gone], added=())
                with self._readers.changing():
                    if self._uses_dense and self._dense is not None:
                        from retrievekit.core.index.dense_updates import delete_dense

                        delete_dense(self._dense, gone)
                    for i in gone:
                        del self._objects[i]
                    self._change_parts(gone, [], trace)
                self._commit(gone, [], tally)
            trace.count("live.deleted", len(gone))
            self.last_change = trace
        return gone

    def compact(self, *, trace: Trace | None = None) -> int:
        """Make the BM25 part's own statistics count the held objects only (the tantivy engine counts deleted
        documents until compacted, and its searches score their candidates a second time over the live statistics
        meanwhile; :meth:`delete` compacts on its own above a tenth of the index); returns how many deleted
        documents it dropped from them (0 for the bm25s engine or without a BM25 part).

        Examples:
            >>> LiveIndex.create("bm25").compact()
            0
        """
        self._check_open()
        trace = trace if trace is not None else Trace()
        with self._writer:
            pending = self._bm25.pending_deletes if self._bm25 is not None else 0
            if pending and self._bm25 is not None:
                with self._readers.changing():
                    self._bm25.compact()
            if self._log is not None and self._log.end:  # the change log folded into a new object list
                self._save_live()
            trace.count("live.compacted", pending)
            self.last_change = trace
        return pending

    def _dense_upsert(self, changed: list[DataObject]) -> None:
        from retrievekit.core.index.dense import DenseIndex
        from retrievekit.core.index.dense_updates import upsert_dense

        if self._dense is not None:
            upsert_dense(self._dense, changed)
            return
        path = self.path / "dense" if self.path is not None else None
        self._dense = DenseIndex.build(changed, path, embedder=self._embedder)
        if self._embedder is None:
            self._embedder = self._dense.embedder  # the default model, loaded once

    def _change_parts(self, removed: list[str], added: list[DataObject], trace: Trace) -> None:
        """Bring the parts other than dense (changed before the held objects) to the held objects: ``removed`` ids
        (deleted or replaced), ``added`` objects (new or replacing). Here the BM25 part; a subclass changes its own."""
        self._bm25_change(removed, added, trace)

    def _write_parts(self, folder: Path) -> None:
        """Write the parts kept inside ``live/`` into its new copy ``folder`` (committed with it in one rename);
        none here."""

    def _logged_part(self) -> Any:
        """What a change's log line says of the parts kept inside ``live/`` (JSON; None: nothing), or :data:`FOLD`
        when it cannot be said in a line (``live/`` is written whole). Here none; a subclass with such parts says."""
        return None if type(self)._write_parts is LiveIndex._write_parts else FOLD

    def _bm25_change(self, removed: list[str], added: list[DataObject], trace: Trace) -> None:
        """Bring the BM25 part to the held objects (:func:`~retrievekit.core.index.live_bm25.changed_bm25`)."""
        if self._uses_bm25:
            held = list(self._objects.values())
            self._bm25 = changed_bm25(self._bm25, held, removed, added, self.bm25_config, self.path, trace)

    def _commit(self, removed: list[str], added: list[DataObject], tally: CorpusTally) -> None:
        """Commit a change (``removed`` ids, ``added`` objects) whose held objects' record is ``tally``."""
        self._delta = (removed, added, tally)
        try:
            self._save_live()
        except BaseException:
            self._tally = None  # counted again from the held objects, which the next change writes whole
            if self._log is not None:
                self._log.refold = True
            raise
        finally:
            self._delta = None
        self._tally = tally

    def _save_live(self) -> None:
        """Commit ``live/``, the last write of a change: its line appended to the change log
        (:mod:`~retrievekit.core.index.live_log`), or (no line, a log past its size, a part that cannot say its
        change in one) the held objects, the parts and the manifest written as a new ``live/`` (a fold)."""
        if self.path is None:
            return
        delta, log = self._delta, self._log
        part = self._logged_part() if delta is not None else FOLD
        record = (delta[2] if delta is not None else self._held_tally()).record()
        line = log.line(delta[0], delta[1], record, part=part) if log and delta and part is not FOLD else b""
        if log is not None and line and log.fits(line):
            log.append(line)
            return
        held = list(self._objects.values())
        with atomic_folder(self.path / "live") as tmp:
            n = write_objects(tmp, held)
            self._write_parts(tmp)
            fields = {"method": self.method, "options": self.options, "n_objects": n, RECORD_KEY: record}
            write_manifest(tmp, FORMAT, FORMAT_VERSION, fields)
        self._log = ChangeLog(self.path / "live", base_bytes=base_bytes(self.path / "live"))

    def _held_tally(self) -> CorpusTally:
        """The corpus tally of the held objects (counted again when a failed change lost it)."""
        if self._tally is None:
            self._tally = CorpusTally.of(self._objects.values())
        return self._tally

    @property
    def corpus(self) -> dict[str, Any]:
        """The :func:`~retrievekit.core.index.corpus_record.corpus_record` of the held objects (what the folder's
        manifest records after every change).

        Examples:
            >>> LiveIndex.create("bm25").corpus["count"]
            0
        """
        return self._held_tally().record()

    @property
    def _uses_bm25(self) -> bool:
        return self.method in ("bm25", "hybrid")

    @property
    def _uses_dense(self) -> bool:
        return self.method in ("dense", "hybrid")

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInputError("this LiveIndex is closed")


class _NoHits:
    """The BM25 side of a hybrid index whose objects have no searchable text yet."""

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        return []
