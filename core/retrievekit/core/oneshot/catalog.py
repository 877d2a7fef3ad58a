"""The documents a pool's chunks come from: metadata keys, per-document information and the catalog that finds
documents named in a query (by title, number or alias)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_held
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.store import atomic_folder, read_manifest, write_manifest
from retrievekit.core.types import DataObject

__all__ = ["CATALOG_FORMAT", "DocumentCatalog", "DocumentInfo", "MetadataKeys"]

CATALOG_FORMAT = "oneshot_catalog"
"""The manifest format of a saved catalog folder (``retrievekit.oneshot_catalog``, version 1)."""
_CATALOG_VERSION = 1
_DOCUMENTS = "documents.json"
_NONE = object()  # "no such id" (None may be an id a check names)


@dataclass(frozen=True)
class MetadataKeys:
    """Which metadata keys carry the document id, order, date/version, title and entities of a chunk.

    Defaults match the ObliQA loader (``retrievekit.core.eval.datasets``).

    Examples:
        >>> MetadataKeys(document="doc_id").document
        'doc_id'
    """

    document: str = "DocumentID"
    order: str = "order"
    date: str = "version_date"
    title: str = "document_title"
    entities: str = "entities"


@dataclass(frozen=True)
class DocumentInfo:
    """A document the query may name: id, title, aliases and version date.

    Examples:
        >>> DocumentInfo(doc_id=3, title="Conduct of Business Rulebook", aliases=("COBS",)).names()
        ('Conduct of Business Rulebook', 'COBS')
    """

    doc_id: Any
    title: str = ""
    aliases: tuple[str, ...] = ()
    version_date: str | None = None

    def names(self) -> tuple[str, ...]:
        """Title and aliases, deduplicated, in order.

        Examples:
            >>> DocumentInfo(doc_id=1, title="A", aliases=("A", "B")).names()
            ('A', 'B')
        """
        out: list[str] = []
        for n in (self.title, *self.aliases):
            n = (n or "").strip()
            if n and n not in out:
                out.append(n)
        return tuple(out)


_PAREN_ABBR = re.compile(r"^(.*?)\s*\(([A-Z][A-Za-z]{1,9})\)\s*$")
_SHORT_ALIAS = 6


def _check_documents(documents: DocumentInfo | Iterable[DocumentInfo], *, where: str) -> list[DocumentInfo]:
    """A batch of documents to add or update: :class:`DocumentInfo` items with hashable, distinct ids."""
    if isinstance(documents, DocumentInfo):
        documents = [documents]
    if documents is None or isinstance(documents, (str, bytes, Mapping)) or not isinstance(documents, Iterable):
        raise InvalidInputError(f"{where}: documents must be a list of DocumentInfo, got {type(documents).__name__}")
    docs = list(documents)
    seen: set[Any] = set()
    for i, d in enumerate(docs):
        if not isinstance(d, DocumentInfo):
            raise InvalidInputError(f"{where}: documents[{i}] must be a DocumentInfo, got {type(d).__name__}")
        if d.doc_id is None or not isinstance(d.doc_id, Hashable):
            raise InvalidInputError(f"{where}: documents[{i}] has no usable doc_id ({d.doc_id!r})")
        if d.doc_id in seen:
            raise InvalidInputError(f"{where}: documents[{i}]: id {d.doc_id!r} appears twice in one batch")
        seen.add(d.doc_id)
    return docs


def _document_json(doc: DocumentInfo) -> dict[str, Any]:
    if isinstance(doc.doc_id, bool) or not isinstance(doc.doc_id, (str, int)):
        raise InvalidInputError(
            f"save: document id {doc.doc_id!r} is not a str or int; a saved catalog keeps only those"
        )
    return {"doc_id": doc.doc_id, "title": doc.title, "aliases": list(doc.aliases), "version_date": doc.version_date}


def _document_of(row: Any, where: str) -> DocumentInfo:
    ok = isinstance(row, dict) and isinstance(row.get("title"), str) and isinstance(row.get("aliases"), list)
    doc_id = row.get("doc_id") if isinstance(row, dict) else None
    if not ok or isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise IndexFormatError(f"{where} is corrupt: a bad document entry {str(row)[:200]}")
    vd = row.get("version_date")
    if not all(isinstance(a, str) for a in row["aliases"]) or not (vd is None or isinstance(vd, str)):
        raise IndexFormatError(f"{where} is corrupt: a bad document entry {str(row)[:200]}")
    return DocumentInfo(doc_id, row["title"], tuple(row["aliases"]), vd)


def _alias_pattern(alias: str) -> re.Pattern[str]:
    if len(alias) <= _SHORT_ALIAS:
        return re.compile(r"(?<![\w-])" + re.escape(alias) + r"(?![\w-])")
    return re.compile(r"(?<!\w)" + re.escape(alias) + r"(?!\w)", re.IGNORECASE)


class DocumentCatalog:
    """Titles and aliases of known documents, for finding which documents a query names.

    Build it from records (``documents_meta.json`` of ObliQA: ``DocumentID``, ``title``, ``aliases``,
    ``version_date``) and/or from chunk metadata (a title like ``"Fund Rules (FUNDS)"`` also yields ``"FUNDS"`` and
    ``"Fund Rules"``).

    Examples:
        >>> cat = DocumentCatalog.from_records([{"DocumentID": 6, "title": "Fund Rules (FUNDS)"}])
        >>> cat.find("Under FUNDS 2.1, who approves?")
        [(6, 'FUNDS')]
        >>> cat.find("funds in general")
        []
    """

    def __init__(self, documents: Iterable[DocumentInfo] = ()) -> None:
        self.documents: dict[Any, DocumentInfo] = {}
        # each document's compiled names, kept with the DocumentInfo they were compiled from
        self._compiled: dict[Any, tuple[DocumentInfo, list[tuple[str, re.Pattern[str]]]]] = {}
        for d in documents:
            self.merge(d)

    def merge(self, doc: DocumentInfo) -> None:
        """Add one document, or merge its aliases into the held document of the same id (title and date: the
        held ones first). What the builders use; :meth:`add` refuses a held id instead.

        Examples:
            >>> c = DocumentCatalog([DocumentInfo(doc_id=1, title="T")])
            >>> c.merge(DocumentInfo(doc_id=1, title="U", aliases=("X",))); c.documents[1].names()
            ('T', 'X', 'U')
        """
        old = self.documents.get(doc.doc_id)
        if old is None:
            self.documents[doc.doc_id] = doc
        else:
            aliases = tuple(dict.fromkeys((*old.aliases, *doc.aliases, doc.title)))
            self.documents[doc.doc_id] = DocumentInfo(
                doc.doc_id, old.title or doc.title, tuple(a for a in aliases if a), old.version_date or doc.version_date
            )

    # ------------------------------------------------------------------ change in place
    def add(self, documents: DocumentInfo | Iterable[DocumentInfo]) -> list[Any]:
        """Add ``documents`` (ids not held yet; one :class:`DocumentInfo` or several); returns their ids. A held id,
        an id twice in the batch, or an item that is not a :class:`DocumentInfo` is an :class:`InvalidInputError`
        naming it, and nothing is added. Costs the new documents only (their names are compiled at the next
        :meth:`find`); :meth:`find` then answers as a catalog built afresh over the documents held, in the order
        they were added.

        Examples:
            >>> c = DocumentCatalog([DocumentInfo(doc_id=1, title="Fund Rules")])
            >>> c.add([DocumentInfo(doc_id=2, aliases=("GEN",))]), c.find("GEN 2.1 and the Fund Rules")
            ([2], [(1, 'Fund Rules'), (2, 'GEN')])
            >>> c.add(DocumentInfo(doc_id=2, title="Other"))
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: add: document id 2 is already in the catalog; delete it first or use update
        """
        docs = _check_documents(documents, where="add")
        held = next((d.doc_id for d in docs if d.doc_id in self.documents), _NONE)
        if held is not _NONE:
            raise InvalidInputError(
                f"add: document id {held!r} is already in the catalog; delete it first or use update"
            )
        for d in docs:
            self.documents[d.doc_id] = d
        return [d.doc_id for d in docs]

    def delete(self, ids: Iterable[Any]) -> list[Any]:
        """Remove the documents ``ids`` (each held; listed once however often it is given); returns them in the order
        given. An id the catalog does not hold is an :class:`InvalidInputError` naming it, and nothing is removed.

        Examples:
            >>> c = DocumentCatalog([DocumentInfo(doc_id=1, title="Fund Rules"), DocumentInfo(doc_id=2, title="GEN")])
            >>> c.delete([2]), c.find("GEN and Fund Rules")
            ([2], [(1, 'Fund Rules')])
            >>> c.delete([7])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: delete: document id 7 is not in the catalog
        """
        if ids is None or isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise InvalidInputError(f"delete: ids must be a list of document ids, got {type(ids).__name__}")
        wanted = list(ids)
        for i, x in enumerate(wanted):
            if not isinstance(x, Hashable):
                raise InvalidInputError(f"delete: ids[{i}] must be a document id, got {type(x).__name__}")
        check_held(wanted, self.documents, "delete: document id {id!r} is not in the catalog")
        gone = list(dict.fromkeys(wanted))
        for x in gone:
            del self.documents[x]
            self._compiled.pop(x, None)
        return gone

    def update(self, documents: DocumentInfo | Iterable[DocumentInfo]) -> list[Any]:
        """Replace held documents: :meth:`delete` of their ids, then :meth:`add` (so each moves to the end of the
        catalog's order). An id not held is an :class:`InvalidInputError` naming it, and nothing changes.

        Examples:
            >>> c = DocumentCatalog([DocumentInfo(doc_id=1, title="Fund Rules"), DocumentInfo(doc_id=2, title="GEN")])
            >>> c.update([DocumentInfo(doc_id=1, title="Funds Rulebook")]), c.find("the Funds Rulebook or GEN")
            ([1], [(2, 'GEN'), (1, 'Funds Rulebook')])
        """
        docs = _check_documents(documents, where="update")
        ids = [d.doc_id for d in docs]
        check_held(ids, self.documents, "update: document id {id!r} is not in the catalog; add it")
        self.delete(ids)
        return self.add(docs)

    def __len__(self) -> int:
        return len(self.documents)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the catalog to the folder ``path`` atomically (``documents.json`` in the catalog's order, then a
        sealed ``manifest.json``; the folder is swapped in whole, so a reader sees the old catalog or the new one).
        Document ids must be ``str`` or ``int`` (:class:`InvalidInputError` otherwise). Returns the folder.

        Examples:
            >>> import tempfile, pathlib
            >>> folder = pathlib.Path(tempfile.mkdtemp()) / "catalog"
            >>> c = DocumentCatalog([DocumentInfo(doc_id=6, title="Fund Rules", aliases=("FUNDS",))])
            >>> DocumentCatalog.load(c.save(folder)).find("FUNDS 2.1")
            [(6, 'FUNDS')]
        """
        rows = [_document_json(d) for d in self.documents.values()]
        folder = Path(path)
        with atomic_folder(folder) as tmp:
            (tmp / _DOCUMENTS).write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
            write_manifest(tmp, CATALOG_FORMAT, _CATALOG_VERSION, {"count": len(rows)})
        return folder

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DocumentCatalog:
        """Read a folder written by :meth:`save` (its checksums checked first); :class:`IndexFormatError` for a
        missing, foreign, damaged or too new folder.

        Examples:
            >>> import tempfile, pathlib
            >>> folder = pathlib.Path(tempfile.mkdtemp()) / "catalog"
            >>> _ = DocumentCatalog([DocumentInfo(doc_id="f", title="Fund Rules")]).save(folder)
            >>> DocumentCatalog.load(folder).documents["f"].title
            'Fund Rules'
        """
        folder = Path(path)
        manifest = read_manifest(folder, CATALOG_FORMAT, _CATALOG_VERSION)
        where = str(folder / _DOCUMENTS)
        try:
            rows = json.loads((folder / _DOCUMENTS).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise IndexFormatError(f"{where} is corrupt: {e}") from e
        if not isinstance(rows, list) or len(rows) != manifest.get("count"):
            raise IndexFormatError(f"{where} is corrupt: not the {manifest.get('count')} documents its manifest lists")
        cat = cls()
        cat.add([_document_of(r, where) for r in rows])
        return cat

    @staticmethod
    def _expand(title: str) -> tuple[str, ...]:
        m = _PAREN_ABBR.match(title or "")
        return (m.group(1).strip(), m.group(2)) if m else ()

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> DocumentCatalog:
        """From dicts with ``DocumentID`` (or ``doc_id``), ``title``, ``aliases`` and ``version_date``.

        Examples:
            >>> len(DocumentCatalog.from_records([{"DocumentID": 1, "title": "X"}, {"title": "no id"}]))
            1
        """
        cat = cls()
        for r in records:
            doc_id = r.get("DocumentID", r.get("doc_id"))
            if doc_id is None:
                continue
            title = str(r.get("title") or "")
            aliases = tuple(str(a) for a in (r.get("aliases") or ()) if a) + cls._expand(title)
            vd = r.get("version_date")
            cat.merge(DocumentInfo(doc_id, title, aliases, str(vd) if vd is not None else None))
        return cat

    @classmethod
    def from_chunks(cls, chunks: Iterable[DataObject], keys: MetadataKeys | None = None) -> DocumentCatalog:
        """From chunk metadata (document id, title, date); titles ``"Name (ABBR)"`` give both names as aliases.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> c = DocumentCatalog.from_chunks([Passage(id="p", text="x", metadata={"DocumentID": 7, "document_title": "Market Rules (MKT)"})])
            >>> c.documents[7].aliases
            ('Market Rules', 'MKT')
        """
        keys = keys or MetadataKeys()
        cat = cls()
        for ch in chunks:
            meta = ch.metadata
            doc_id = meta.get(keys.document)
            if doc_id is None or doc_id in cat.documents:
                continue
            title = str(meta.get(keys.title) or "")
            vd = meta.get(keys.date)
            cat.merge(DocumentInfo(doc_id, title, cls._expand(title), str(vd) if vd is not None else None))
        return cat

    def find(self, text: str) -> list[tuple[Any, str]]:
        """``(doc_id, matched alias)`` for every document named in ``text`` (first match per document).

        Examples:
            >>> DocumentCatalog([DocumentInfo(doc_id=1, aliases=("GEN",))]).find("GEN 3.3 says")
            [(1, 'GEN')]
        """
        out: list[tuple[Any, str]] = []
        for doc_id, doc in self.documents.items():
            compiled = self._compiled.get(doc_id)
            if compiled is None or compiled[0] is not doc:  # new, replaced, or merged since the last find
                compiled = doc, [(n, _alias_pattern(n)) for n in doc.names()]
                self._compiled[doc_id] = compiled
            hit = next((name for name, pat in compiled[1] if pat.search(text)), None)
            if hit is not None:
                out.append((doc_id, hit))
        return out
