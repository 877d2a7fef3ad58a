"""BM25 lexical index over data objects (tantivy underneath, or bm25s with ``BM25Config(engine="bm25s")``),
persisted to a folder.

The tantivy engine (:mod:`~retrievekit.core.index.bm25_engine`, the default) keeps its objects on disk, reads only
the hits, and changes in place: :meth:`BM25Index.add`, :meth:`BM25Index.delete`, :meth:`BM25Index.compact`. The
bm25s engine holds the corpus in memory, takes other BM25 settings, and does the same changes by rebuilding. The
environment variable ``RETRIEVEKIT_BM25_ENGINE`` (:data:`ENGINE_ENV`) names the default for a process.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> idx = BM25Index.build([Passage(id="a", text="The cat sat."), Passage(id="b", text="Dogs bark loudly.")])
    >>> [h.id for h in idx.search("barking dogs", k=2)]
    ['b']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.bm25_engine import TantivyEngine, analyze, is_engine_folder
from retrievekit.core.index.corpus_record import RECORD_KEY, check_same_corpus, corpus_record
from retrievekit.core.index.store import atomic_folder, read_manifest, read_objects, write_manifest, write_objects
from retrievekit.core.index.updatable import check_batch, check_ids
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["BM25Config", "BM25Index", "ENGINES", "ENGINE_ENV", "config_for_option", "default_engine", "top_k_indices"]

FORMAT = "bm25"
FORMAT_VERSION = 1
ENGINES = ("tantivy", "bm25s")
"""The engines a :class:`BM25Config` can name; the first is the default."""
ENGINE_ENV = "RETRIEVEKIT_BM25_ENGINE"
"""The environment variable that names the default engine for a process (unset or empty: ``ENGINES[0]``)."""


def default_engine() -> str:
    """The engine a :class:`BM25Config` takes when none is named: ``RETRIEVEKIT_BM25_ENGINE``, else tantivy; an
    engine the variable names that is not one of :data:`ENGINES` is an :class:`InvalidInputError` naming it.

    Examples:
        >>> import os
        >>> default_engine() == (os.environ.get(ENGINE_ENV, "").strip() or "tantivy")
        True
    """
    engine = os.environ.get(ENGINE_ENV, "").strip() or ENGINES[0]
    if engine not in ENGINES:
        raise InvalidInputError(f"{ENGINE_ENV} must name one of {ENGINES}, not {engine!r}")
    return engine


@dataclass(frozen=True)
class BM25Config:
    """BM25 settings.

    Attributes:
        k1: term-frequency saturation; 1.2 is the Lucene/Elasticsearch default that BEIR's BM25 numbers use.
        b: length normalisation; 0.75 is the Lucene/Elasticsearch default.
        method: bm25s scoring variant; "lucene" matches Lucene's IDF.
        stemmer: Snowball stemmer language (PyStemmer), or "" for none.
        stopwords: bm25s stopword list name ("en") or "" for none.
        engine: "tantivy" (the default, or what :data:`ENGINE_ENV` names: on disk, read per hit, changes in place,
            folder of version 2) or "bm25s" (in memory, rebuilt on a change, folder of version 1); tantivy takes
            only the defaults above (k1 1.2, b 0.75, "lucene", "english", "en").

    Examples:
        >>> BM25Config().k1, BM25Config(engine="bm25s").engine
        (1.2, 'bm25s')
    """

    k1: float = 1.2
    b: float = 0.75
    method: str = "lucene"
    stemmer: str = "english"
    stopwords: str = "en"
    engine: str = field(default_factory=default_engine)


def config_for_option(engine: object = None) -> BM25Config:
    """The settings of the engine that a method's option ``bm25_engine`` names (None: the default engine);
    :class:`InvalidInputError` naming the option for an engine that is not one of :data:`ENGINES`.

    Examples:
        >>> config_for_option("bm25s").engine, config_for_option().engine == default_engine()
        ('bm25s', True)
    """
    if engine is None:
        return BM25Config()
    if engine not in ENGINES:
        raise InvalidInputError(f"option bm25_engine must be one of {ENGINES}, not {engine!r}")
    return BM25Config(engine=str(engine))


def _check_config(cfg: BM25Config) -> BM25Config:
    """The engine named, and for tantivy the settings it fixes; :class:`InvalidInputError` naming the field."""
    if cfg.engine not in ENGINES:
        raise InvalidInputError(f"BM25Config.engine must be one of {ENGINES}, not {cfg.engine!r}")
    if cfg.engine == "tantivy":
        for f in fields(BM25Config):  # the defaults tantivy fixes (not the engine's, which the environment may name)
            name, value = f.name, f.default
            if name != "engine" and getattr(cfg, name) != value:
                raise InvalidInputError(
                    f"BM25Config.{name}={getattr(cfg, name)!r} is not available with engine='tantivy' "
                    f"(it fixes {name}={value!r}); use engine='bm25s' for other settings"
                )
    return cfg


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first, ties broken by lower index (deterministic).

    Examples:
        >>> top_k_indices(np.array([0.5, 2.0, 0.5, 1.0]), 3).tolist()
        [1, 3, 0]
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = np.partition(scores, n - k)[n - k]  # the k-th largest score: a linear pass, not a sort of every score
    above = np.flatnonzero(scores > kth)
    keep = np.concatenate([above, np.flatnonzero(scores == kth)[: k - above.size]])  # ties: lower indices first
    return keep[np.lexsort((keep, -scores[keep]))]  # lexsort: last key is primary → by -score, then by index


def _tokenizer(cfg: BM25Config):  # type: ignore[no-untyped-def]
    from bm25s.tokenization import Tokenizer

    stem = None
    if cfg.stemmer:
        import Stemmer

        stem = Stemmer.Stemmer(cfg.stemmer).stemWord
    return Tokenizer(stemmer=stem, stopwords=cfg.stopwords or [])


class BM25Index:
    """A BM25 index: build from objects, search, ``save(folder)`` / ``load(folder)``; changed in place with
    :meth:`add` / :meth:`delete` (:meth:`compact` for the tantivy engine's deleted documents).

    Scores are raw BM25 scores; only objects sharing at least one query term
    are returned. A query with no searchable term (only stop words, punctuation
    or one-letter words) returns no hits with a ``no_searchable_terms`` trace
    event; one whose terms occur nowhere in the corpus, with a ``no_match`` event.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> idx = BM25Index.build([Passage(id="x", text="graph neural networks")])
        >>> idx.search("neural", k=5)[0].score > 0
        True
    """

    def __init__(
        self, objects: list[DataObject], model: object, tokenizer: object, config: BM25Config, *, engine: Any = None
    ) -> None:
        self._objects = objects
        self.config = config
        self._model = model
        self._tokenizer = tokenizer
        self._engine: TantivyEngine | None = engine
        self._memo: tuple[str, object, np.ndarray] | None = None  # bm25s: the last query's scores, for its model
        self._positions: tuple[object, dict[str, int]] | None = None  # bm25s: id -> position, for its model

    @classmethod
    def build(
        cls,
        objects: Iterable[DataObject],
        config: BM25Config | None = None,
        *,
        folder: str | os.PathLike[str] | None = None,
    ) -> BM25Index:
        """Index objects (their ``index_text()``); with ``folder``, the index is written there (atomically) too.

        The tantivy engine reads ``objects`` one at a time (a generator, a JSONL reader): with ``folder`` it writes
        them straight into the folder's index, and the documents stay there, read per hit, so a build never holds
        the corpus in memory. The bm25s engine lists them first.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> len(BM25Index.build([Passage(id="a", text="x y")]))
            1
            >>> len(BM25Index.build([Passage(id="a", text="x y")], BM25Config(engine="tantivy")))
            1
            >>> import tempfile, pathlib
            >>> stream = (Passage(id=str(i), text=f"doc {i}") for i in range(5))
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "bm25"
            >>> len(BM25Index.build(stream, BM25Config(engine="tantivy"), folder=d)), BM25Index.load(d).folder == d
            (5, True)
            >>> BM25Index.build([Passage(id="a", text="x")], BM25Config(k1=1.5, engine="tantivy"))
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: BM25Config.k1=1.5 is not available with engine='tantivy' (it fixes k1=1.2); use engine='bm25s' for other settings
        """
        cfg = _check_config(config or BM25Config())
        if cfg.engine == "tantivy":
            return cls([], None, None, cfg, engine=TantivyEngine.build(objects, asdict(cfg), folder=folder))
        objs = check_corpus(objects)
        model, tok = _bm25s_model(objs, cfg)
        index = cls(objs, model, tok, cfg)
        if folder is not None:
            index.save(folder)
        return index

    @property
    def objects(self) -> list[DataObject]:
        """The indexed objects, in the order of :meth:`scores` (tantivy: read from its doc store, once a state).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> [o.id for o in BM25Index.build([Passage(id="a", text="x")]).objects]
            ['a']
        """
        return self._engine.objects() if self._engine is not None else self._objects

    @property
    def folder(self) -> Path | None:
        """The folder a tantivy index was opened from and changes in place; None in memory and for bm25s.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> BM25Index.build([Passage(id="a", text="x")], BM25Config(engine="tantivy")).folder is None
            True
        """
        return self._engine.folder if self._engine is not None else None

    def __len__(self) -> int:
        return len(self._engine) if self._engine is not None else len(self._objects)

    def query_terms(self, query: str) -> list[str]:
        """The terms BM25 would search for in ``query``: words of two or more characters, lower-cased, stop words
        removed (before stemming). Empty for a query of only stop words or punctuation.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> idx = BM25Index.build([Passage(id="a", text="x")])
            >>> idx.query_terms("The cats of Rome?"), idx.query_terms("the of and ?!.")
            (['cats', 'rome'], [])
        """
        q = check_query(query)
        if self._engine is not None:
            return analyze(q, stem=False)
        tok: Any = self._tokenizer or _tokenizer(self.config)
        text = q.lower() if getattr(tok, "lower", True) else q
        stop = set(getattr(tok, "stopwords", None) or ())
        return [str(w) for w in tok.splitter(text) if w not in stop]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every object for ``query`` (0 where no term matches), in the order of :attr:`objects`.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> BM25Index.build([Passage(id="a", text="x yy"), Passage(id="b", text="zz")]).scores("yy").tolist()[1]
            0.0
        """
        q = check_query(query)
        if self._engine is not None:  # every score: a search as deep as the index
            objs = self._engine.objects()
            pos = {o.id: i for i, o in enumerate(objs)}
            out = np.zeros(len(objs), dtype=np.float32)
            for obj, score in self._engine.search(analyze(q), len(objs)):
                out[pos[obj.id]] = score
            return out
        if self._model is None:  # every object deleted
            return np.zeros(0, dtype=np.float32)
        tokens = self._tokenizer.tokenize([q], update_vocab=False, return_as="ids", show_progress=False)[0]  # type: ignore[attr-defined]
        known = [t for t in tokens if t != 0]  # id 0 is bm25s' empty/unknown token
        if not known:
            return np.zeros(len(self._objects), dtype=np.float32)
        model: Any = self._model
        if getattr(model, "nonoccurrence_array", None) is not None:  # BM25L / BM25+: every document scores
            return np.asarray(model.get_scores(known), dtype=np.float32)
        # bm25s adds each term's postings with np.add.at (unbuffered); a term lists a document once, so a buffered
        # add gives the same sums in the same order, several times faster on a large corpus
        index = model.scores
        data, docs, starts = index["data"], index["indices"], index["indptr"]
        out = np.zeros(index["num_docs"], dtype=np.float32)
        for t in known:
            out[docs[starts[t] : starts[t + 1]]] += data[starts[t] : starts[t + 1]]
        return out

    def scores_of(self, query: str, ids: Iterable[str]) -> dict[str, float]:
        """The BM25 scores of the objects ``ids`` for ``query`` (0.0 where no term matches; ids not held are left
        out): what :meth:`scores` gives them, without scoring every object on the tantivy engine.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> docs = [Passage(id="a", text="x yy"), Passage(id="b", text="zz")]
            >>> for engine in ("bm25s", "tantivy"):
            ...     print(BM25Index.build(docs, BM25Config(engine=engine)).scores_of("yy", ["b", "nope"]))
            {'b': 0.0}
            {'b': 0.0}
        """
        q = check_query(query)
        if self._engine is not None:
            return self._engine.scores_of(analyze(q), ids)
        pos = self._id_positions()
        held = sorted({(pos[oid], oid) for oid in ids if oid in pos})
        if not held:
            return {}
        scores = self._scores_once(q)
        return {oid: float(scores[i]) for i, oid in held}

    def objects_of(self, ids: Iterable[str]) -> dict[str, DataObject]:
        """``id -> object`` for those of ``ids`` the index holds (ids it does not hold are left out), in id order: on
        the tantivy engine read from its document store for them alone, so a caller holds only what it asked for.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> docs = [Passage(id="b", text="x"), Passage(id="a", text="y")]
            >>> for engine in ("bm25s", "tantivy"):
            ...     print(list(BM25Index.build(docs, BM25Config(engine=engine)).objects_of(["zz", "b", "a"])))
            ['a', 'b']
            ['a', 'b']
        """
        if self._engine is not None:
            return self._engine.objects_of(ids)
        pos = self._id_positions()
        return {oid: self._objects[pos[oid]] for oid in sorted(set(ids)) if oid in pos}

    def _id_positions(self) -> dict[str, int]:
        """bm25s: ``id -> position`` in :attr:`objects`, made once per model."""
        if self._positions is None or self._positions[0] is not self._model:
            self._positions = (self._model, {o.id: i for i, o in enumerate(self._objects)})
        return self._positions[1]

    def _scores_once(self, query: str) -> np.ndarray:
        """bm25s: :meth:`scores`, kept for the last query of this model (a search then ``scores_of`` the same query,
        as ARM asks, score every object once)."""
        memo = self._memo
        if memo is not None and memo[0] == query and memo[1] is self._model:
            return memo[2]
        out = self.scores(query)
        self._memo = (query, self._model, out)
        return out

    def _top(self, query: str, k: int) -> list[ScoredHit]:
        if self._engine is not None:
            found = self._engine.search(analyze(check_query(query)), k)
            return [ScoredHit(obj=o, score=s, rank=r) for r, (o, s) in enumerate(found)]
        s = self._scores_once(query)
        idx = [int(i) for i in top_k_indices(s, k) if s[i] > 0]
        return [ScoredHit(obj=self._objects[i], score=float(s[i]), rank=r) for r, i in enumerate(idx)]

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top-``k`` objects by BM25 score (ties by corpus order; tantivy: by id).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> BM25Index.build([Passage(id="a", text="alpha")]).search("omega")
            []
            >>> t = Trace()
            >>> BM25Index.build([Passage(id="a", text="alpha")]).search("the of and ?!", trace=t), t.events[0].kind
            ([], 'no_searchable_terms')
        """
        check_k(k)
        trace = trace if trace is not None else Trace()
        with trace.stage("bm25"):
            hits = self._top(query, k)
            if not hits and not self.query_terms(query):  # the reason is looked up only when nothing matched
                trace.note(
                    "no_searchable_terms",
                    "the query has no searchable terms (only stop words, punctuation or one-letter words); "
                    "BM25 returns no hits",
                    query=query[:200],
                )
            elif not hits:
                trace.note("no_match", "no query term occurs in the BM25 vocabulary; returning no hits")
            return hits

    # ------------------------------------------------------------------ change in place
    def add(self, objects: Iterable[DataObject]) -> None:
        """Add ``objects`` (ids not in the index yet; :class:`InvalidInputError` otherwise). Scores then equal a fresh
        build's over the objects held (tantivy: a new segment, committed; bm25s: rebuilt in memory).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> idx = BM25Index.build([Passage(id="a", text="tea")], BM25Config(engine="tantivy"))
            >>> idx.add([Passage(id="b", text="green tea")]); [h.id for h in idx.search("green")]
            ['b']
        """
        if self._engine is not None:
            self._engine.add(objects)
            return
        objs = check_batch(objects)
        held = {o.id for o in self._objects}
        dup = next((o.id for o in objs if o.id in held), None)
        if dup is not None:
            raise InvalidInputError(f"add: id {dup!r} is already in the index; delete it first")
        if objs:
            self._rebuild([*self._objects, *objs])

    def delete(self, ids: Iterable[str], *, compact: bool | None = None) -> list[str]:
        """Remove ``ids`` (those not held are ignored); returns the ids removed. They leave the results at once and
        scores are a fresh build's over the objects held. tantivy: its own statistics count them until a merge or a
        compaction (meanwhile a search scores its candidates again over the live statistics), done now with
        ``compact=True``, never with ``False``, and with ``None`` (the default) when deleted documents exceed 10 % of
        those counted (:data:`~retrievekit.core.index.bm25_engine.COMPACT_ABOVE`); bm25s: rebuilt in memory.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> idx = BM25Index.build([Passage(id="a", text="tea"), Passage(id="b", text="tea")])
            >>> idx.delete(["a", "zz"]), [h.id for h in idx.search("tea")]
            (['a'], ['b'])
        """
        if self._engine is not None:
            return self._engine.delete(ids, compact=compact)
        wanted = check_ids(ids, where="delete")
        held = {o.id for o in self._objects}
        gone = [i for i in wanted if i in held]
        if gone:
            self._rebuild([o for o in self._objects if o.id not in set(gone)])
        return gone

    @property
    def pending_deletes(self) -> int:
        """Deleted documents tantivy's own statistics still count (until a merge or :meth:`compact`; searches
        score over the live ones meanwhile); 0 for bm25s.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> BM25Index.build([Passage(id="a", text="tea")]).pending_deletes
            0
        """
        return self._engine.pending_deletes if self._engine is not None else 0

    def compact(self) -> None:
        """Re-index the live objects (tantivy: a new generation, swapped in last), so that tantivy's own statistics
        count them only and searches need no second scoring; nothing to do for bm25s.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> BM25Index.build([Passage(id="a", text="tea")], BM25Config(engine="tantivy")).compact()
        """
        if self._engine is not None:
            self._engine.compact()

    def _rebuild(self, objects: list[DataObject]) -> None:
        """bm25s: index ``objects`` afresh (none with text: an empty index that matches nothing)."""
        self._objects = objects
        if any(o.index_text().strip() for o in objects):
            self._model, self._tokenizer = _bm25s_model(objects, self.config)
        else:
            self._model, self._tokenizer = None, None

    # ------------------------------------------------------------------ folders
    def save(self, folder: str | os.PathLike[str]) -> None:
        """Persist atomically to ``folder`` (replacing what was there only once fully written). A tantivy index
        opened from ``folder`` is already there: nothing to write.

        Examples:
            >>> import tempfile, pathlib
            >>> from retrievekit.core.types import Passage
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "bm25"
            >>> BM25Index.build([Passage(id="a", text="alpha")]).save(d)
            >>> BM25Index.load(d).search("alpha")[0].id
            'a'
        """
        if self._engine is not None:
            self._engine.save(folder)
            return
        if self._model is None:
            raise InvalidInputError("this BM25 index holds no object with text: nothing to save")
        with atomic_folder(folder) as tmp:
            self._model.save(str(tmp / "bm25s"), show_progress=False)  # type: ignore[attr-defined]
            self._tokenizer.save_vocab(str(tmp / "bm25s"))  # type: ignore[attr-defined]
            n = write_objects(tmp, self._objects)
            fields = {"n_objects": n, "config": asdict(self.config), RECORD_KEY: corpus_record(self._objects)}
            write_manifest(tmp, FORMAT, FORMAT_VERSION, fields)

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, corpus: Iterable[DataObject] | None = None) -> BM25Index:
        """Reopen a saved index (either engine: the folder says which); :class:`IndexFormatError` if the folder is
        not one. With ``corpus``, an index that holds another corpus (other ids, or the same ids with other texts)
        raises its subclass :class:`~retrievekit.core.errors.CorpusMismatchError` naming both sizes and an example id.

        Examples:
            >>> import tempfile, pathlib
            >>> BM25Index.load(tempfile.mkdtemp())
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
            >>> from retrievekit.core.types import Passage
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "bm25"
            >>> BM25Index.build([Passage(id="a", text="alpha")]).save(d)
            >>> BM25Index.load(d, corpus=[Passage(id="a", text="beta")])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.CorpusMismatchError: the BM25 index in ... holds another corpus: 1 objects, not this corpus of 1: 1 object has another text in the index (e.g. 'a')
        """
        if is_engine_folder(folder):
            return cls._load_engine(folder, corpus)
        import bm25s

        manifest = read_manifest(folder, FORMAT, FORMAT_VERSION)
        try:
            cfg = BM25Config(**{"engine": "bm25s", **manifest["config"]})
        except (KeyError, TypeError) as e:
            raise IndexFormatError(f"{folder}: manifest has no valid BM25 config ({e})") from e
        objs = read_objects(folder, expected=manifest.get("n_objects"))
        if corpus is not None:
            where = f"the BM25 index in {folder}"
            check_same_corpus(objs, corpus, where=where, recorded=manifest.get(RECORD_KEY))
        sub = Path(folder) / "bm25s"
        try:
            model = bm25s.BM25.load(str(sub), show_progress=False, verbosity=0)
            tok = _tokenizer(cfg)
            tok.load_vocab(str(sub))
        except Exception as e:  # bm25s raises assorted errors on damaged files
            raise IndexFormatError(f"{folder}: BM25 data is missing or corrupt ({type(e).__name__}: {e})") from e
        if getattr(model, "scores", {}).get("num_docs", len(objs)) != len(objs):
            raise IndexFormatError(f"{folder}: BM25 data covers a different number of objects than objects.jsonl")
        return cls(objs, model, tok, cfg)

    @classmethod
    def _load_engine(cls, folder: str | os.PathLike[str], corpus: Iterable[DataObject] | None) -> BM25Index:
        """Open a tantivy folder: its stored objects are read only when the corpus record differs."""
        engine = TantivyEngine.open(folder)
        try:
            cfg = _check_config(BM25Config(**engine.config))
        except (TypeError, InvalidInputError) as e:
            raise IndexFormatError(f"{folder}: manifest has no valid BM25 config ({e})") from e
        if corpus is not None:
            where = f"the BM25 index in {folder}"
            check_same_corpus(_lazy(engine), corpus, where=where, recorded=engine.record)
        return cls([], None, None, cfg, engine=engine)


def _bm25s_model(objs: list[DataObject], cfg: BM25Config) -> tuple[Any, Any]:
    """A bm25s model and its tokenizer over ``objs``."""
    import bm25s

    tok = _tokenizer(cfg)
    ids = tok.tokenize([o.index_text() for o in objs], return_as="tuple", show_progress=False)
    model = bm25s.BM25(k1=cfg.k1, b=cfg.b, method=cfg.method)
    model.index(ids, show_progress=False)
    return model, tok


def _lazy(engine: TantivyEngine) -> Iterator[DataObject]:
    """The engine's objects, read only if iterated (the corpus check reads them only when its record differs)."""
    yield from engine.objects()
