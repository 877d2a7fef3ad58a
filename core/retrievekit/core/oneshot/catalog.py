"""The documents a pool's chunks come from: metadata keys, per-document information and the catalog that finds
documents named in a query (by title, number or alias)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from retrievekit.core.types import DataObject

__all__ = ["DocumentCatalog", "DocumentInfo", "MetadataKeys"]


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
        self._patterns: list[tuple[Any, str, re.Pattern[str]]] | None = None
        for d in documents:
            self.add(d)

    def add(self, doc: DocumentInfo) -> None:
        """Add (or merge the aliases of) one document.

        Examples:
            >>> c = DocumentCatalog(); c.add(DocumentInfo(doc_id=1, title="T")); len(c)
            1
        """
        old = self.documents.get(doc.doc_id)
        if old is None:
            self.documents[doc.doc_id] = doc
        else:
            aliases = tuple(dict.fromkeys((*old.aliases, *doc.aliases, doc.title)))
            self.documents[doc.doc_id] = DocumentInfo(
                doc.doc_id, old.title or doc.title, tuple(a for a in aliases if a), old.version_date or doc.version_date
            )
        self._patterns = None

    def __len__(self) -> int:
        return len(self.documents)

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
            cat.add(DocumentInfo(doc_id, title, aliases, str(vd) if vd is not None else None))
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
            cat.add(DocumentInfo(doc_id, title, cls._expand(title), str(vd) if vd is not None else None))
        return cat

    def find(self, text: str) -> list[tuple[Any, str]]:
        """``(doc_id, matched alias)`` for every document named in ``text`` (first match per document).

        Examples:
            >>> DocumentCatalog([DocumentInfo(doc_id=1, aliases=("GEN",))]).find("GEN 3.3 says")
            [(1, 'GEN')]
        """
        if self._patterns is None:
            pats = []
            for d in self.documents.values():
                for n in d.names():
                    pats.append((d.doc_id, n, _alias_pattern(n)))
            self._patterns = pats
        out: list[tuple[Any, str]] = []
        seen: set[Any] = set()
        for doc_id, name, pat in self._patterns:
            if doc_id not in seen and pat.search(text):
                out.append((doc_id, name))
                seen.add(doc_id)
        return out
