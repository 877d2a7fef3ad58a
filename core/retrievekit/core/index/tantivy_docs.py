"""How the tantivy BM25 engine sees text and objects: the analyzer, the schema, an object as a tantivy document,
and the one way documents go into a new index (:func:`fill`), streamed and checked as they come.

:func:`fill` reads its objects one at a time (a generator, a JSONL reader, a framework docstore), so a build never
holds the corpus in memory: each object is checked as :func:`~retrievekit.core.checks.check_corpus` checks a list
(its type, a unique id, some text in the corpus), then turned into a document (its JSON line stored, its content
digest kept) and handed to tantivy's writer. A failure rolls the writer back: nothing half-built is committed.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> index = new_index(None)
    >>> opstamp, digests = fill(index, iter([Passage(id="a", text="Cats sat."), Passage(id="b", text="Dogs.")]))
    >>> sorted(digests), index.searcher().num_docs
    (['a', 'b'], 2)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_object, empty_corpus_error
from retrievekit.core.errors import IndexFormatError, InvalidInputError, MissingDependencyError
from retrievekit.core.index.corpus_record import content_digest
from retrievekit.core.index.store import object_json
from retrievekit.core.index.tantivy_footers import check_segments
from retrievekit.core.types import DataObject, object_from_dict

__all__ = [
    "HEAP",
    "analyze",
    "digests_of",
    "fill",
    "fill_documents",
    "id_and_digest",
    "make_document",
    "new_index",
    "open_index",
    "reading",
    "stored_docs",
    "stored_object",
    "tantivy",
]

HEAP = 128_000_000
"""The writer's memory budget in bytes (one writer thread)."""
_TOKENIZER = "rk_en"
_INSTALL = "pip install 'tantivy>=0.27,<0.28'"


def tantivy() -> Any:
    """The ``tantivy`` module (:class:`MissingDependencyError` naming the install line if it is missing).

    Examples:
        >>> tantivy().__name__
        'tantivy'
    """
    try:
        import tantivy
    except ImportError as e:  # pragma: no cover - a core dependency
        raise MissingDependencyError("tantivy", _INSTALL) from e
    return tantivy


@lru_cache(maxsize=2)
def _analyzer(stem: bool) -> Any:
    from bm25s.stopwords import STOPWORDS_EN

    t = tantivy()
    builder = t.TextAnalyzerBuilder(t.Tokenizer.regex(r"\w\w+")).filter(t.Filter.lowercase())
    builder = builder.filter(t.Filter.custom_stopword(list(STOPWORDS_EN)))
    return (builder.filter(t.Filter.stemmer("english")) if stem else builder).build()


def analyze(text: str, *, stem: bool = True) -> list[str]:
    """The terms of ``text`` as the index sees them (``stem=False``: before stemming), duplicates kept.

    Examples:
        >>> analyze("The cats of Rome?"), analyze("The cats of Rome?", stem=False), analyze("the of ?!")
        (['cat', 'rome'], ['cats', 'rome'], [])
    """
    return [str(t) for t in _analyzer(stem).analyze(text)]


def _schema() -> Any:
    sb = tantivy().SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_bytes_field("obj", stored=True)  # the object's JSON line
    sb.add_bytes_field("digest", stored=True)  # its content digest (the corpus record without parsing it)
    sb.add_text_field("all", tokenizer_name="raw", index_option="basic")  # "1": counts documents as BM25 does
    sb.add_text_field("text", tokenizer_name=_TOKENIZER, index_option="freq")
    return sb.build()


def _index(path: Path | None, *, create: bool) -> Any:
    t = tantivy()
    if create and path is not None:
        path.mkdir(parents=True, exist_ok=True)
    with reading(path):  # a damaged folder: tantivy's ValueError, or a Rust panic while it opens the segments
        index = t.Index(_schema(), path=None if path is None else str(path)) if create else t.Index.open(str(path))
    index.register_tokenizer(_TOKENIZER, _analyzer(True))
    index.config_reader(reload_policy="Manual")  # a searcher sees a commit when the engine says so (``reload``)
    return index


@contextmanager
def reading(where: object) -> Iterator[None]:
    """Tantivy's failures while reading a damaged index (a ``ValueError``, or a Rust panic, which Python sees as a
    ``BaseException``) as :class:`IndexFormatError` naming ``where``.

    Examples:
        >>> with reading("my index"):
        ...     raise ValueError("bad block")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: my index: the tantivy index is missing, cannot be read or is of another version (bad block); rebuild it
    """
    try:
        yield
    except (ValueError, OSError) as e:
        if isinstance(e, (IndexFormatError, InvalidInputError)):
            raise
        raise IndexFormatError(
            f"{where}: the tantivy index is missing, cannot be read or is of another version ({e}); rebuild it"
        ) from e
    except BaseException as e:
        if type(e).__name__ != "PanicException":
            raise
        raise IndexFormatError(f"{where}: the tantivy index is damaged ({str(e)[:200]}); rebuild it") from e


def make_document(obj: DataObject) -> tuple[Any, str]:
    """``obj`` as a tantivy document (its JSON line stored, its text analyzed), and its content digest.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> doc, digest = make_document(Passage(id="a", text="x"))
        >>> doc["id"], len(digest)
        (['a'], 64)
    """
    digest = content_digest(obj)
    doc = tantivy().Document(
        id=obj.id, obj=object_json(obj).encode("utf-8"), digest=digest.encode(), all="1", text=obj.index_text()
    )
    return doc, digest


def new_index(path: Path | None) -> Any:
    """A new, empty tantivy index with this schema and analyzer: in memory (``path`` None) or in ``path``.

    Examples:
        >>> new_index(None).searcher().num_docs
        0
    """
    return _index(path, create=True)


def open_index(path: Path) -> Any:
    """The tantivy index in ``path`` (:class:`IndexFormatError` if it is missing or damaged: its segments' files are
    checked first, :func:`~retrievekit.core.index.tantivy_footers.check_segments`).

    Examples:
        >>> import tempfile, pathlib
        >>> open_index(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...: tantivy's meta.json is missing or corrupt (...); rebuild the index
    """
    check_segments(path)
    return _index(path, create=False)


def fill(index: Any, objects: Iterable[DataObject]) -> tuple[int, dict[str, str]]:
    """Add ``objects`` to the empty ``index`` as they come (one writer thread), each checked, then commit: the
    commit's opstamp and the objects' content digests (``id -> digest``). A bad object, a repeated id, an empty
    corpus or a corpus without text raise the errors :func:`~retrievekit.core.checks.check_corpus` raises, and the
    writer is rolled back (nothing committed).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> fill(new_index(None), [Passage(id="a", text="x"), Passage(id="a", text="y")])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: duplicate object id 'a' in the corpus (ids must be unique)
    """
    writer = index.writer(heap_size=HEAP, num_threads=1)
    digests: dict[str, str] = {}
    texted = False
    try:
        for obj in objects:
            check_object(obj)
            if obj.id in digests:
                raise InvalidInputError(f"duplicate object id {obj.id!r} in the corpus (ids must be unique)")
            doc, digests[obj.id] = make_document(obj)
            texted = texted or bool(obj.index_text().strip())
            writer.add_document(doc)
        if not texted:
            raise empty_corpus_error(len(digests))
    except BaseException:
        writer.rollback()
        writer.wait_merging_threads()
        raise
    opstamp = int(writer.commit())
    writer.wait_merging_threads()  # releases the writer (and its lock)
    index.reload()
    return opstamp, digests


def fill_documents(index: Any, docs: Iterable[Any]) -> int:
    """Add already-made documents (an index's own live documents) to the empty ``index``, commit; the opstamp.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> index = new_index(None)
        >>> _ = fill_documents(index, [make_document(Passage(id="a", text="x"))[0]])
        >>> index.searcher().num_docs
        1
    """
    writer = index.writer(heap_size=HEAP, num_threads=1)
    for doc in docs:
        writer.add_document(doc)
    opstamp = int(writer.commit())
    writer.wait_merging_threads()
    index.reload()
    return opstamp


def id_and_digest(doc: Any) -> tuple[str, str]:
    """A stored document's id and content digest (:func:`make_document` stores both).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> doc, digest = make_document(Passage(id="a", text="x"))
        >>> id_and_digest(doc) == ("a", digest)
        True
    """
    return str(doc.get_first("id")), bytes(doc.get_first("digest")).decode()


def digests_of(index: Any, ids: Sequence[str], where: object) -> dict[str, str]:
    """``id -> content digest`` of those of ``ids`` that ``index``'s current reader holds, read for them alone (a
    lookup of their id terms: the cost is theirs, not the index's); ``where`` names the index in a read error.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> index = new_index(None)
        >>> _ = fill(index, [Passage(id="a", text="x"), Passage(id="b", text="y")])
        >>> index.reload()
        >>> list(digests_of(index, ["b", "zz"], "demo"))
        ['b']
    """
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    searcher = index.searcher()
    query = tantivy().Query.term_set_query(index.schema, "id", wanted)
    with reading(where):
        return dict(id_and_digest(searcher.doc(addr)) for _, addr in searcher.search(query, len(wanted)).hits)


def stored_object(doc: Any) -> DataObject:
    """The object a stored document holds (its JSON line); :class:`IndexFormatError` if it is corrupt.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> stored_object(make_document(Passage(id="a", text="x"))[0]).text
        'x'
    """
    try:
        return object_from_dict(json.loads(bytes(doc.get_first("obj")).decode("utf-8")))
    except (ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"a stored object of the tantivy BM25 index is corrupt ({e}); rebuild it") from e


def stored_docs(searcher: Any, where: object) -> Iterator[Any]:
    """The live stored documents ``searcher`` reads, in address order (``where`` names the index in a read error).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> index = new_index(None)
        >>> _ = fill(index, [Passage(id="b", text="x"), Passage(id="a", text="y")])
        >>> [d["id"][0] for d in stored_docs(index.searcher(), "demo")]
        ['b', 'a']
    """
    n = int(searcher.num_docs)
    if n == 0:
        return
    with reading(where or "the in-memory BM25 index"):
        hits = searcher.search(tantivy().Query.all_query(), n, count=False).hits
        for _, addr in sorted(hits, key=lambda h: (h[1].segment_ord, h[1].doc)):
            yield searcher.doc(addr)
