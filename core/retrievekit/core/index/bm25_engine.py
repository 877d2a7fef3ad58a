"""The tantivy engine behind ``BM25Index`` (``BM25Config(engine="tantivy")``): an index on disk that changes in
place (issues #63, #61), with today's analyzer and scores.

The analyzer is the bm25s one: words of two or more characters (``\\w\\w+``), lower-cased, the 33 Lucene / bm25s
English stop words removed, the Snowball English stemmer (:data:`ANALYZER`). Tantivy's BM25 is Lucene's times
``k1 + 1`` (K1 = 1.2, B = 0.75, fixed), so scores are divided by :data:`SCORE_SCALE` and stay near the bm25s
engine's. Each object is stored in tantivy's doc store (its JSON line, as ``objects.jsonl`` holds it) and read only
for the hits: nothing reads every object on open.

Changes (:meth:`TantivyEngine.add`, :meth:`TantivyEngine.delete`, :meth:`TantivyEngine.compact`) commit to tantivy
under its writer lock (one writer at a time; another one gets :class:`~retrievekit.core.errors.IndexLockedError`),
then rewrite the manifest (the corpus record and the commit's opstamp). Additions are exact at once (a new
segment's statistics add up to a fresh build's). A deleted id vanishes from results at once; tantivy's statistics
(document count, document frequencies, average length) still count it until a merge or :meth:`~TantivyEngine.compact`
drops it, and meanwhile the candidates are scored again over the live statistics
(:mod:`~retrievekit.core.index.tantivy_scores`), so scores stay a fresh build's. ``compact`` re-indexes the live
objects into a new generation (``gen-<n>/`` beside the old one; the manifest names the new one last, so a kill at any
instant leaves the old or the new state); ``delete`` runs it on its own when the deleted documents still counted
exceed :data:`COMPACT_ABOVE` of those counted.

Folder (:mod:`~retrievekit.core.index.tantivy_folder`): ``manifest.json`` and ``gen-<n>/`` (the tantivy index). A
kill between a commit and the manifest's rewrite leaves the commit (tantivy's ``meta.json`` opstamp is newer than the
manifest's): the next open reads the record from the doc store instead.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> eng = TantivyEngine.build([Passage(id="a", text="Cats sat."), Passage(id="b", text="Dogs bark.")], {})
    >>> [(o.id, round(s, 3)) for o, s in eng.search(analyze("barking dogs"), 5)]
    [('b', 0.63)]
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError, IndexLockedError, InvalidInputError
from retrievekit.core.index.corpus_record import RECORD_KEY, CorpusTally, record_of_digests
from retrievekit.core.index.store import MANIFEST, atomic_folder
from retrievekit.core.index.tantivy_docs import (
    HEAP,
    analyze,
    digests_of,
    fill,
    fill_documents,
    id_and_digest,
    make_document,
    new_index,
    open_index,
    reading,
    stored_docs,
    stored_object,
    tantivy,
)
from retrievekit.core.index.tantivy_folder import (
    ANALYZER,
    ENGINE,
    gen_name,
    is_engine_folder,
    meta_opstamp,
    read_manifest,
    settled,
    stat_of,
    sweep,
    write_manifest,
)
from retrievekit.core.index.tantivy_footers import check_segments
from retrievekit.core.index.tantivy_scores import (
    Memo,
    Stats,
    exact_top,
    live_frequencies,
    rescored,
    tantivy_average,
    top_with_ties,
    total_length,
)
from retrievekit.core.index.updatable import check_batch, check_ids
from retrievekit.core.types import DataObject

__all__ = ["ANALYZER", "COMPACT_ABOVE", "ENGINE", "SCORE_SCALE", "TantivyEngine", "analyze", "is_engine_folder"]

SCORE_SCALE = 2.2
"""Tantivy's BM25 is ``(k1 + 1)`` times Lucene's (K1 = 1.2): scores are divided by it."""
COMPACT_ABOVE = 0.10
"""``delete`` compacts on its own when deleted documents still counted exceed this share of those counted."""


class TantivyEngine:
    """A tantivy BM25 index in memory (``folder`` None) or in a folder: :meth:`build`, :meth:`open`, :meth:`search`,
    :meth:`add`, :meth:`delete`, :meth:`compact`, :meth:`save`. ``BM25Index`` wraps it; use that.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> eng = TantivyEngine.build([Passage(id="a", text="red apples"), Passage(id="b", text="green pears")], {})
        >>> eng.delete(["b"], compact=False), len(eng), eng.pending_deletes
        (['b'], 1, 1)
        >>> eng.compact(); eng.pending_deletes
        0
    """

    def __init__(self, index: Any, folder: Path | None, config: dict[str, Any], manifest: dict[str, Any]) -> None:
        self._index = index
        self.folder = folder
        self.config = dict(config)
        self._generation = int(manifest.get("generation", 1))
        self._opstamp = int(manifest.get("opstamp", 0))
        self._record: dict[str, Any] | None = manifest.get(RECORD_KEY)
        self._record_at = self._opstamp if self._record is not None else -1  # the opstamp the record describes
        self._digests: dict[str, str] | None = None  # id -> content digest, read from the doc store when needed
        self._digests_at = -1  # the opstamp they were read at
        self._stat = stat_of(folder / MANIFEST) if folder is not None else None
        self._objects: tuple[tuple[int, int], list[DataObject]] | None = None
        known = manifest.get("tokens")  # the live documents' total length, and the commit it describes
        self._tokens: tuple[int, int] | None = (int(known), self._opstamp) if known is not None else None
        self._memo: Memo | None = None  # what exact scores read, kept for one state of the index
        self._state = threading.RLock()  # a search takes its reader and what describes it together

    # ------------------------------------------------------------------ make, open, save
    @classmethod
    def build(
        cls, objects: Iterable[DataObject], config: dict[str, Any], *, folder: str | os.PathLike[str] | None = None
    ) -> TantivyEngine:
        """An index of ``objects``, read one at a time (:func:`~retrievekit.core.index.tantivy_docs.fill`): in
        memory (``save`` writes it to a folder), or straight into ``folder`` (atomically: a failure or a kill leaves
        what was there), so the corpus is never held in memory.

        Examples:
            >>> import tempfile, pathlib
            >>> from retrievekit.core.types import Passage
            >>> len(TantivyEngine.build([Passage(id="a", text="x y")], {}))
            1
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "t"
            >>> len(TantivyEngine.build((Passage(id=str(i), text="x") for i in range(3)), {}, folder=d))
            3
        """
        if folder is not None:
            with atomic_folder(folder) as tmp:
                opstamp, digests = fill(new_index(tmp / gen_name(1)), objects)
                write_manifest(tmp, config, 1, opstamp, digests)
            return cls.open(folder)
        index = new_index(None)
        opstamp, digests = fill(index, objects)
        eng = cls(index, None, config, {"opstamp": opstamp})
        eng._digests, eng._digests_at = digests, opstamp
        eng._record, eng._record_at = record_of_digests(digests), opstamp
        return eng

    @classmethod
    def open(cls, folder: str | os.PathLike[str]) -> TantivyEngine:
        """Open a folder written by :meth:`save` (:class:`IndexFormatError` if it is not one, or damaged).

        Examples:
            >>> import tempfile
            >>> from retrievekit.core.types import Passage
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     _ = TantivyEngine.build([Passage(id="a", text="red"), Passage(id="b", text="sky")], {}, folder=tmp + "/t")
            ...     print(sorted(TantivyEngine.open(tmp + "/t").objects_of(["b", "a"])))
            ['a', 'b']
        """
        path = Path(folder)
        manifest = read_manifest(path)
        gen = path / gen_name(int(manifest["generation"]))
        eng = cls(open_index(gen), path, manifest["config"], manifest)
        if meta_opstamp(gen) != eng._opstamp:  # killed between a commit and the manifest: the commit holds
            eng._record = record_of_digests(eng._held_digests())
            eng._record_at, eng._tokens = eng._digests_at, None
        return eng

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the live objects to ``folder`` as a new index (atomically); nothing to do for the index's own folder.

        Examples:
            >>> import tempfile, pathlib
            >>> from retrievekit.core.types import Passage
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "t"
            >>> TantivyEngine.build([Passage(id="a", text="alpha")], {}).save(d)
            >>> [o.id for o, _ in TantivyEngine.open(d).search(["alpha"], 3)]
            ['a']
        """
        target = Path(folder)
        if self.folder is not None and target.resolve() == self.folder.resolve():
            return
        with atomic_folder(target) as tmp:
            index = new_index(tmp / gen_name(1))
            opstamp = fill_documents(index, self._live_docs())
            digests = self._held_digests()
            write_manifest(tmp, self.config, 1, opstamp, digests, tokens=self._known_tokens())

    # ------------------------------------------------------------------ read
    def refresh(self) -> None:
        """See the folder's last change (another writer's, another process's): reopen the manifest's generation when
        it changed, reload tantivy's reader otherwise. In memory: nothing to do.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> TantivyEngine.build([Passage(id="a", text="x")], {}).refresh()
        """
        if self.folder is None:
            return
        stat = stat_of(self.folder / MANIFEST)
        if stat == self._stat:
            return
        with self._state:
            stat, manifest, index, ahead = settled(self.folder, self._reloaded)
            self._index, self._generation, self._stat = index, int(manifest["generation"]), stat
            self._opstamp = int(manifest["opstamp"])
            self._record, self._record_at = manifest.get(RECORD_KEY), self._opstamp
            tokens = manifest["tokens"]
            self._tokens = (tokens, self._opstamp) if tokens is not None and not ahead else None

    def _reloaded(self, generation: int) -> Any:
        """Generation ``generation``'s index, reloaded (opened, when it is not the current one)."""
        assert self.folder is not None
        if generation == self._generation:
            check_segments(self._gen_path())  # the segments another writer added, before tantivy reads them
        index = open_index(self.folder / gen_name(generation)) if generation != self._generation else self._index
        index.reload()
        return index

    def __len__(self) -> int:
        self.refresh()
        return int(self._index.searcher().num_docs)

    @property
    def pending_deletes(self) -> int:
        """Deleted documents that tantivy's statistics still count (0 after :meth:`compact`)."""
        self.refresh()
        return self._pending(self._index.searcher())

    @property
    def record(self) -> dict[str, Any]:
        """The corpus record of the live objects (:func:`~retrievekit.core.index.corpus_record.corpus_record`)."""
        self.refresh()
        if self._record is None:
            self._record = record_of_digests(self._held_digests())
            self._record_at = self._digests_at
        return self._record

    def search(self, terms: list[str], k: int) -> list[tuple[DataObject, float]]:
        """The top ``k`` objects for the analyzed ``terms`` (an OR of term queries; a repeated term counts again),
        with their scores divided by :data:`SCORE_SCALE`; ties by id, whatever the segments.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> eng = TantivyEngine.build([Passage(id="b", text="tea"), Passage(id="a", text="tea")], {})
            >>> [o.id for o, _ in eng.search(["tea"], 1)], eng.search([], 3)
            (['a'], [])
        """
        searcher, memo = self._view()
        if not terms or k <= 0 or searcher.num_docs == 0:
            return []
        query = self._query(terms)
        with reading(self.folder or "the in-memory BM25 index"):
            if self._pending(searcher):  # tantivy's statistics count deleted documents: score over the live ones
                found = exact_top(
                    lambda m: searcher.search(query, m, count=False).hits,
                    lambda addr: stored_object(searcher.doc(addr)),
                    self._live_stats(searcher, terms, memo),
                    self._counted_stats(searcher, terms, memo),
                    terms,
                    k,
                    memo,
                )
                return [(obj, score / SCORE_SCALE) for score, obj in found]
            hits = top_with_ties(lambda m: searcher.search(query, m, count=False).hits, k)
            docs = [(float(score), searcher.doc(addr)) for score, addr in hits]
        docs.sort(key=lambda h: (-h[0], str(h[1].get_first("id"))))  # only the k kept are parsed
        return [(stored_object(doc), score / SCORE_SCALE) for score, doc in docs[:k]]

    def scores_of(self, terms: list[str], ids: Iterable[str]) -> dict[str, float]:
        """The scores of the objects ``ids`` for the analyzed ``terms`` (as :meth:`search` gives them; 0.0 where no
        term matches), without scoring any other document; ids the index does not hold are left out.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> eng = TantivyEngine.build([Passage(id="a", text="tea"), Passage(id="b", text="rain")], {})
            >>> eng.scores_of(["tea"], ["b", "a", "zz"]) == {"a": eng.search(["tea"], 1)[0][1], "b": 0.0}
            True
        """
        wanted = sorted(set(ids))
        searcher, memo = self._view()
        if not wanted or searcher.num_docs == 0:
            return {}
        t = tantivy()
        only = t.Query.const_score_query(t.Query.term_set_query(self._index.schema, "id", wanted), 0.0)  # adds 0
        query = t.Query.boolean_query([*self._should(terms), (t.Occur.Must, only)])
        with reading(self.folder or "the in-memory BM25 index"):
            hits = searcher.search(query, len(wanted), count=False).hits
            if self._pending(searcher):  # score the named objects over the live statistics
                objs = [stored_object(searcher.doc(addr)) for _, addr in hits]
                scores = rescored(self._live_stats(searcher, terms, memo), terms, objs, memo)
                return {o.id: s / SCORE_SCALE for o, s in zip(objs, scores, strict=True)}
            return {str(searcher.doc(addr)["id"][0]): float(score) / SCORE_SCALE for score, addr in hits}

    def _should(self, terms: list[str]) -> list[tuple[Any, Any]]:
        """One optional term query a term (a repeated term counts again)."""
        t = tantivy()
        return [(t.Occur.Should, t.Query.term_query(self._index.schema, "text", w, index_option="freq")) for w in terms]

    def _query(self, terms: list[str]) -> Any:
        return tantivy().Query.boolean_query(self._should(terms))

    @staticmethod
    def _pending(searcher: Any) -> int:
        """Deleted documents the searcher's statistics still count."""
        return int(searcher.doc_freq("all", "1")) - int(searcher.num_docs)

    def _view(self) -> tuple[Any, Memo]:
        """A reader of the index's current state and the memo of exact scoring for that state (a new one after any
        change), taken together: a change in another thread swaps both at once."""
        self.refresh()
        with self._state:
            searcher = self._index.searcher()
            key = (self._generation, self._opstamp, int(searcher.num_docs), int(searcher.doc_freq("all", "1")))
            if self._memo is None or self._memo.key != key:
                tokens = self._tokens
                self._memo = Memo(key, tokens=tokens[0] if tokens is not None and tokens[1] == self._opstamp else None)
            return searcher, self._memo

    def _live_stats(self, searcher: Any, terms: list[str], memo: Memo) -> Stats:
        """The statistics a fresh build of the live documents would score ``terms`` with; the live total length is
        counted from the stored documents when the index does not know it (after a kill between a commit and the
        manifest's rewrite), once per state."""
        if memo.tokens is None:
            memo.tokens = total_length(map(stored_object, stored_docs(searcher, self.folder)))
        df = live_frequencies(searcher, self._index.schema, terms, memo)
        return Stats(int(searcher.num_docs), memo.tokens, df)

    def _counted_stats(self, searcher: Any, terms: list[str], memo: Memo) -> Stats:
        """The statistics tantivy scores ``terms`` with now (deleted documents counted); its average length and
        document count read once per state (:func:`tantivy_average`)."""
        df = {w: int(searcher.doc_freq("text", w)) for w in set(terms)}
        if memo.counted is None:
            memo.counted = tantivy_average(searcher, self._index.schema)
        avg, docs = memo.counted or (0.0, int(searcher.doc_freq("all", "1")))
        return Stats(docs, avg * docs, df)

    def _known_tokens(self) -> int | None:
        """The live documents' total length if it describes the last commit, else None."""
        tokens = self._tokens
        return tokens[0] if tokens is not None and tokens[1] == self._current_opstamp() else None

    def _tokens_now(self) -> int:
        """The live documents' total length, for a change (under the writer lock): kept across changes; else, when no
        deleted document is counted, tantivy's average times the count (read from one document's explanation), or
        counted document by document."""
        known = self._known_tokens()
        if known is not None:
            return known
        searcher = self._index.searcher()
        counted = None if self._pending(searcher) else tantivy_average(searcher, self._index.schema)
        if counted is not None:
            return round(counted[0] * counted[1])
        return total_length(map(stored_object, stored_docs(searcher, self.folder)))

    def objects(self) -> list[DataObject]:
        """Every live object, in a stable order (doc-store order); read once per state of the index.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> [o.id for o in TantivyEngine.build([Passage(id="b", text="x"), Passage(id="a", text="y")], {}).objects()]
            ['b', 'a']
        """
        self.refresh()
        key = (self._generation, self._opstamp)
        if self._objects is None or self._objects[0] != key:
            self._objects = (key, [stored_object(doc) for doc in self._stored()])
        return self._objects[1]

    def _stored(self) -> Iterator[Any]:
        """The live stored documents of the current reader, in address order."""
        return stored_docs(self._index.searcher(), self.folder)

    def _live_docs(self) -> Iterator[Any]:
        """The live documents, ready to be added to another index (text re-analyzed from each stored object)."""
        t = tantivy()
        for doc in self._stored():
            obj, digest = doc.get_first("obj"), doc.get_first("digest")
            text = stored_object(doc).index_text()
            yield t.Document(id=doc.get_first("id"), obj=obj, digest=digest, all="1", text=text)

    def _current_opstamp(self) -> int:
        """The opstamp of the last commit to the current generation (tantivy's own ``meta.json``)."""
        return meta_opstamp(self._gen_path()) if self.folder is not None else self._opstamp

    def _held_digests(self) -> dict[str, str]:
        """``id -> content digest`` of the live objects, read from the doc store when the index changed since."""
        current = self._current_opstamp()
        if self._digests is None or self._digests_at != current:
            self._index.reload()
            self._digests, self._digests_at = self._read_digests(), current
        return self._digests

    def _read_digests(self) -> dict[str, str]:
        return dict(map(id_and_digest, self._stored()))

    def _digests_of(self, ids: Sequence[str]) -> dict[str, str]:
        """``id -> content digest`` of those of ``ids`` the index holds now, read for them alone (a change costs what
        it changes, not the index)."""
        if self._digests is not None and self._digests_at == self._current_opstamp():
            return {i: self._digests[i] for i in set(ids) if i in self._digests}
        self._index.reload()
        return digests_of(self._index, ids, self.folder or "the in-memory BM25 index")

    def objects_of(self, ids: Iterable[str], searcher: Any = None) -> dict[str, DataObject]:
        """``id -> object`` for those of ``ids`` the index holds (of the current state, or of ``searcher``), read for
        them alone, in id order.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> list(TantivyEngine.build([Passage(id="b", text="x"), Passage(id="a", text="y")], {}).objects_of("zab"))
            ['a', 'b']
        """
        wanted, searcher = sorted(set(ids)), self._view()[0] if searcher is None else searcher
        query = tantivy().Query.term_set_query(self._index.schema, "id", wanted)
        with reading(self.folder or "the in-memory BM25 index"):
            found = [stored_object(searcher.doc(a)) for _, a in searcher.search(query, max(1, len(wanted))).hits]
        return {o.id: o for o in sorted(found, key=lambda o: o.id)}

    def _tally(self) -> CorpusTally | None:
        """The corpus record as a tally a change updates, when it describes the index's last commit (None: another
        writer's commit the manifest does not record yet, or a record of version 1)."""
        return CorpusTally.from_record(self._record) if self._record_at == self._current_opstamp() else None

    def _gen_path(self) -> Path:
        assert self.folder is not None
        return self.folder / gen_name(self._generation)

    # ------------------------------------------------------------------ change
    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """Hold tantivy's writer lock of the current generation (re-read first); :class:`IndexLockedError` if another
        writer holds it. An error inside rolls the uncommitted changes back."""
        for _ in range(3):
            self.refresh()
            try:
                writer = self._index.writer(heap_size=HEAP, num_threads=1)
            except ValueError as e:
                if "LockBusy" in str(e) or "lock" in str(e).lower():
                    where = self.folder if self.folder is not None else "this in-memory BM25 index"
                    raise IndexLockedError(
                        f"{where} is being changed by another writer (tantivy's writer lock is held); nothing was "
                        "changed: retry when it is done"
                    ) from e
                raise IndexFormatError(f"{self.folder}: the tantivy index cannot be written ({e})") from e
            if self.folder is not None and stat_of(self.folder / MANIFEST) != self._stat:
                writer.wait_merging_threads()  # changed while the lock was taken: start again on the new state
                continue
            try:
                yield writer
            except BaseException:
                writer.rollback()
                raise
            finally:
                writer.wait_merging_threads()
            return
        raise IndexLockedError(f"{self.folder} keeps changing under this writer; retry")  # pragma: no cover

    def _committed(
        self,
        opstamp: int,
        digests: dict[str, str] | None = None,
        *,
        before: CorpusTally | None = None,
        removed: Sequence[tuple[str, str]] = (),
        added: Sequence[tuple[str, str]] = (),
        tokens: int | None = None,
    ) -> None:
        """After a commit: reload, remember the state, rewrite the manifest (a change's last write). ``digests``: all
        live objects' (a compaction); else the change's ``removed`` / ``added`` pairs update ``before`` (the record
        before the commit, :meth:`_tally`) and the kept digests in O(changed), or, without it, all are read once;
        ``tokens``: the live documents' total length after the commit, where known."""
        with self._state:  # a search in another thread reads the state before or after, not half of it
            self._index.reload()
            if digests is None and before is None:
                digests = self._read_digests()  # the state after the commit: the change is in it
            if digests is not None:
                self._digests, tally = digests, CorpusTally.from_record(record_of_digests(digests))
            else:
                assert before is not None
                tally = before.changed_digests(removed=removed, added=added)
                if self._digests is not None and self._digests_at == self._opstamp:  # kept up to date, not re-read
                    for oid, _ in removed:
                        self._digests.pop(oid, None)
                    self._digests.update(added)
                else:
                    self._digests = None
            assert tally is not None
            self._opstamp, self._digests_at = opstamp, opstamp if self._digests is not None else -1
            self._record, self._record_at = tally.record(), opstamp
            self._tokens = (tokens, opstamp) if tokens is not None else None
        if self.folder is not None:
            record = self._record
            write_manifest(self.folder, self.config, self._generation, opstamp, tally.count, record, tokens=tokens)
            self._stat = stat_of(self.folder / MANIFEST)

    def add(self, objects: Iterable[DataObject]) -> None:
        """Index ``objects`` (ids not in the index yet) and commit: exact at once.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> eng = TantivyEngine.build([Passage(id="a", text="tea")], {})
            >>> eng.add([Passage(id="b", text="coffee")]); len(eng)
            2
            >>> eng.add([Passage(id="a", text="tea")])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: add: id 'a' is already in the index; delete it first
        """
        objs = check_batch(objects)
        if not objs:
            return
        made = [make_document(o) for o in objs]
        with self._writing() as writer:
            dup = next(iter(sorted(self._digests_of([o.id for o in objs]))), None)
            if dup is not None:
                raise InvalidInputError(f"add: id {dup!r} is already in the index; delete it first")
            before, tokens = self._tally(), self._known_tokens()
            if tokens is not None:  # kept up to date once known (exact scores after a delete read it)
                tokens += total_length(objs)
            for doc, _ in made:
                writer.add_document(doc)
            added = [(o.id, digest) for o, (_, digest) in zip(objs, made, strict=True)]
            self._committed(int(writer.commit()), before=before, added=added, tokens=tokens)

    def delete(self, ids: Iterable[str], *, compact: bool | None = None) -> list[str]:
        """Delete ``ids`` (those not held are ignored) and commit; returns the ids deleted, in the order given. They
        vanish from results at once (and searches score over the live documents); tantivy's statistics count them
        until a merge or a compaction: ``compact=True`` always, ``None`` when more than :data:`COMPACT_ABOVE` of the
        counted documents are deleted ones, ``False`` never.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> eng = TantivyEngine.build([Passage(id=str(i), text="tea") for i in range(20)], {})
            >>> eng.delete(["3", "zz"]), eng.pending_deletes, eng.delete(["4", "5"]), eng.pending_deletes
            (['3'], 1, ['4', '5'], 0)
        """
        wanted = check_ids(ids, where="delete")
        old = None
        with self._writing() as writer:
            held = self._digests_of(wanted)
            gone = [i for i in dict.fromkeys(wanted) if i in held]
            if gone:
                before, tokens = self._tally(), self._tokens_now()
                tokens -= total_length(self.objects_of(gone, self._index.searcher()).values())
                for i in gone:
                    writer.delete_documents_by_term("id", i)
                removed = [(i, held[i]) for i in gone]
                self._committed(int(writer.commit()), before=before, removed=removed, tokens=tokens)
            if compact or (compact is None and self._over_threshold()):
                old = self._compact_locked()
        self._remove(old)
        return gone

    def compact(self) -> None:
        """Re-index the live objects into a new generation (the manifest names it last), so that tantivy's own
        statistics count only them (searches then need no second scoring).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> TantivyEngine.build([Passage(id="a", text="x")], {}).compact()
        """
        with self._writing():
            old = self._compact_locked()
        self._remove(old)

    def _over_threshold(self) -> bool:
        searcher = self._index.searcher()
        counted = int(searcher.doc_freq("all", "1"))
        return counted > 0 and self._pending(searcher) > COMPACT_ABOVE * counted

    def _compact_locked(self) -> Path | None:
        """The compaction, under the current generation's writer lock; returns the old generation's folder."""
        digests, tokens = dict(self._held_digests()), self._known_tokens()
        if self.folder is None:
            index = new_index(None)
            opstamp = fill_documents(index, self._live_docs())
            with self._state:
                self._index = index
                self._committed(opstamp, digests, tokens=tokens)
            return None
        sweep(self.folder, self._generation)
        old, gen = self._gen_path(), self._generation + 1
        index = new_index(self.folder / gen_name(gen))
        opstamp = fill_documents(index, self._live_docs())
        with self._state:
            self._index, self._generation = index, gen
            self._committed(opstamp, digests, tokens=tokens)  # the manifest now names the new generation
        return old

    @staticmethod
    def _remove(old: Path | None) -> None:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
