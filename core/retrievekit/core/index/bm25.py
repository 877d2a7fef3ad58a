"""BM25 lexical index over data objects (bm25s underneath), persisted to a folder.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> idx = BM25Index.build([Passage(id="a", text="The cat sat."), Passage(id="b", text="Dogs bark loudly.")])
    >>> [h.id for h in idx.search("barking dogs", k=2)]
    ['b']
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.corpus_record import RECORD_KEY, check_same_corpus, corpus_record
from retrievekit.core.index.store import atomic_folder, read_manifest, read_objects, write_manifest, write_objects
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["BM25Config", "BM25Index", "top_k_indices"]

FORMAT = "bm25"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class BM25Config:
    """BM25 settings.

    Attributes:
        k1: term-frequency saturation; 1.2 is the Lucene/Elasticsearch default that BEIR's BM25 numbers use.
        b: length normalisation; 0.75 is the Lucene/Elasticsearch default.
        method: bm25s scoring variant; "lucene" matches Lucene's IDF.
        stemmer: Snowball stemmer language (PyStemmer), or "" for none.
        stopwords: bm25s stopword list name ("en") or "" for none.

    Examples:
        >>> BM25Config().k1
        1.2
    """

    k1: float = 1.2
    b: float = 0.75
    method: str = "lucene"
    stemmer: str = "english"
    stopwords: str = "en"


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
    """A BM25 index: build from objects, search, ``save(folder)`` / ``load(folder)``.

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

    def __init__(self, objects: list[DataObject], model: object, tokenizer: object, config: BM25Config) -> None:
        self.objects = objects
        self.config = config
        self._model = model
        self._tokenizer = tokenizer

    @classmethod
    def build(cls, objects: Iterable[DataObject], config: BM25Config | None = None) -> BM25Index:
        """Index objects (their ``index_text()``).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> len(BM25Index.build([Passage(id="a", text="x y")]))
            1
        """
        import bm25s

        cfg = config or BM25Config()
        objs = check_corpus(objects)
        tok = _tokenizer(cfg)
        ids = tok.tokenize([o.index_text() for o in objs], return_as="tuple", show_progress=False)
        model = bm25s.BM25(k1=cfg.k1, b=cfg.b, method=cfg.method)
        model.index(ids, show_progress=False)
        return cls(objs, model, tok, cfg)

    def __len__(self) -> int:
        return len(self.objects)

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
        tok = self._tokenizer
        text = q.lower() if getattr(tok, "lower", True) else q
        stop = set(getattr(tok, "stopwords", None) or ())
        return [str(w) for w in tok.splitter(text) if w not in stop]  # type: ignore[attr-defined]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every object for ``query`` (0 where no term matches).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> BM25Index.build([Passage(id="a", text="x yy"), Passage(id="b", text="zz")]).scores("yy").tolist()[1]
            0.0
        """
        q = check_query(query)
        tokens = self._tokenizer.tokenize([q], update_vocab=False, return_as="ids", show_progress=False)[0]  # type: ignore[attr-defined]
        known = [t for t in tokens if t != 0]  # id 0 is bm25s' empty/unknown token
        if not known:
            return np.zeros(len(self.objects), dtype=np.float32)
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

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top-``k`` objects by BM25 score (ties by corpus order).

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
            s = self.scores(query)
            idx = [int(i) for i in top_k_indices(s, k) if s[i] > 0]
            if not idx and not self.query_terms(query):  # the reason is looked up only when nothing matched
                trace.note(
                    "no_searchable_terms",
                    "the query has no searchable terms (only stop words, punctuation or one-letter words); "
                    "BM25 returns no hits",
                    query=query[:200],
                )
            elif not idx:
                trace.note("no_match", "no query term occurs in the BM25 vocabulary; returning no hits")
            return [ScoredHit(obj=self.objects[i], score=float(s[i]), rank=r) for r, i in enumerate(idx)]

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Persist atomically to ``folder`` (replacing what was there only once fully written).

        Examples:
            >>> import tempfile, pathlib
            >>> from retrievekit.core.types import Passage
            >>> d = pathlib.Path(tempfile.mkdtemp()) / "bm25"
            >>> BM25Index.build([Passage(id="a", text="alpha")]).save(d)
            >>> BM25Index.load(d).search("alpha")[0].id
            'a'
        """
        with atomic_folder(folder) as tmp:
            self._model.save(str(tmp / "bm25s"), show_progress=False)  # type: ignore[attr-defined]
            self._tokenizer.save_vocab(str(tmp / "bm25s"))  # type: ignore[attr-defined]
            n = write_objects(tmp, self.objects)
            fields = {"n_objects": n, "config": asdict(self.config), RECORD_KEY: corpus_record(self.objects)}
            write_manifest(tmp, FORMAT, FORMAT_VERSION, fields)

    @classmethod
    def load(cls, folder: str | os.PathLike[str], *, corpus: Iterable[DataObject] | None = None) -> BM25Index:
        """Reopen a saved index; :class:`IndexFormatError` if the folder is not one. With ``corpus``, an index that
        holds another corpus (other ids, or the same ids with other texts) raises its subclass
        :class:`~retrievekit.core.errors.CorpusMismatchError` naming both sizes and an example id.

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
        import bm25s

        manifest = read_manifest(folder, FORMAT, FORMAT_VERSION)
        try:
            cfg = BM25Config(**manifest["config"])
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
