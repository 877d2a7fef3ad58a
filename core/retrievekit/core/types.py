"""Data objects shared by every method: passages, tables, table rows and scored hits.

Objects are frozen dataclasses with a stable ``id``, the ``text`` a retriever
indexes, and free ``metadata``. Tables serialise themselves to text (title,
header, one line per row) so lexical and dense indexes treat every object
alike.

Examples:
    >>> p = Passage(id="p1", text="Aspirin thins the blood.", title="Aspirin")
    >>> p.index_text()
    'Aspirin\\nAspirin thins the blood.'
    >>> t = Table(id="t1", title="Scores", header=("team", "pts"), rows=(("A", "3"), ("B", "1")))
    >>> print(t.text)
    team | pts
    A | 3
    B | 1
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from retrievekit.core.errors import InvalidInputError, InvalidTextError

__all__ = [
    "DataObject",
    "Passage",
    "ScoredHit",
    "Table",
    "TableRow",
    "ensure_text",
    "object_from_dict",
    "object_to_dict",
]


def ensure_text(value: object, *, field_name: str = "text") -> str:
    """Return ``value`` as a ``str``, decoding bytes strictly as UTF-8.

    Raises :class:`InvalidTextError` for bytes that are not UTF-8 (with the
    offending offset) and for values that are neither ``str`` nor bytes.

    Examples:
        >>> ensure_text(b"caf\\xc3\\xa9")
        'café'
        >>> ensure_text(b"\\xff\\xfe")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidTextError: text is not valid UTF-8: byte 0xff at offset 0 ...
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidTextError(
                f"{field_name} contains an unpaired surrogate at offset {e.start} (undecodable bytes read "
                "with errors='surrogateescape'?); decode your input as UTF-8 before indexing"
            ) from e
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidTextError(
                f"{field_name} is not valid UTF-8: byte 0x{raw[e.start]:02x} at offset {e.start} "
                "(decode it with the right codec, e.g. bytes.decode('latin-1'), before indexing)"
            ) from e
    raise InvalidTextError(f"{field_name} must be str or UTF-8 bytes, got {type(value).__name__}")


def _check_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"object id must be a non-empty string, got {value!r}")
    return ensure_text(value, field_name=f"object id {value!r}")  # no lone surrogate: no index could store it


def _check_metadata(value: object, oid: str) -> Mapping[str, Any]:
    """``metadata`` as given, ``{}`` for None, or :class:`InvalidInputError` for anything that is not a mapping."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"metadata of {oid} must be a mapping (dict) or None, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Passage:
    """A unit of text: a chunk, an abstract, a clause.

    Attributes:
        id: stable identifier, unique within a corpus.
        text: the passage body.
        title: optional title (document or section), prepended for indexing.
        metadata: free key/values (document id, order, date, ...).

    Examples:
        >>> Passage(id="d1", text="Water boils at 100 C.").kind
        'passage'
    """

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    kind: Literal["passage"] = field(default="passage", init=False)

    def __post_init__(self) -> None:
        _check_id(self.id)
        object.__setattr__(self, "text", ensure_text(self.text, field_name=f"text of {self.id}"))
        object.__setattr__(self, "title", ensure_text(self.title, field_name=f"title of {self.id}"))
        object.__setattr__(self, "metadata", _check_metadata(self.metadata, self.id))

    def index_text(self) -> str:
        """Text that indexes see: title and body on two lines.

        Examples:
            >>> Passage(id="a", text="body").index_text()
            'body'
        """
        return f"{self.title}\n{self.text}" if self.title else self.text


def _cells(row: Iterable[object], where: str) -> tuple[str, ...]:
    return tuple(
        ensure_text("" if c is None else (c if isinstance(c, (str, bytes)) else str(c)), field_name=where) for c in row
    )


@dataclass(frozen=True)
class Table:
    """A table with a header and rows of cells; ragged rows are padded (never silently cut).

    A row longer than the header raises :class:`InvalidInputError`, because
    there is no column to put the extra cells in; a shorter row is padded
    with empty cells and the padding is counted in ``metadata['padded_rows']``.

    Examples:
        >>> t = Table(id="t", header=("a", "b"), rows=(("1",),))
        >>> t.rows, t.metadata["padded_rows"]
        ((('1', ''),), 1)
    """

    id: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    kind: Literal["table"] = field(default="table", init=False)

    def __post_init__(self) -> None:
        _check_id(self.id)
        header = _cells(self.header, f"header of {self.id}")
        if not header:
            raise InvalidInputError(f"table {self.id} has an empty header")
        rows: list[tuple[str, ...]] = []
        padded = 0
        for i, row in enumerate(self.rows):
            cells = _cells(row, f"row {i} of {self.id}")
            if len(cells) > len(header):
                raise InvalidInputError(
                    f"table {self.id}: row {i} has {len(cells)} cells but the header has {len(header)} columns"
                )
            if len(cells) < len(header):
                padded += 1
                cells = cells + ("",) * (len(header) - len(cells))
            rows.append(cells)
        object.__setattr__(self, "header", header)
        object.__setattr__(self, "rows", tuple(rows))
        object.__setattr__(self, "title", ensure_text(self.title, field_name=f"title of {self.id}"))
        meta = dict(_check_metadata(self.metadata, self.id))
        if padded:
            meta["padded_rows"] = padded
        object.__setattr__(self, "metadata", meta)

    @property
    def text(self) -> str:
        """Header and rows serialised as ``a | b`` lines.

        Examples:
            >>> Table(id="t", header=("x",), rows=(("1",),)).text
            'x\\n1'
        """
        lines = [" | ".join(self.header)] + [" | ".join(r) for r in self.rows]
        return "\n".join(lines)

    def index_text(self) -> str:
        """Title plus serialised table.

        Examples:
            >>> Table(id="t", title="T", header=("x",), rows=()).index_text()
            'T\\nx'
        """
        return f"{self.title}\n{self.text}" if self.title else self.text

    def row_objects(self) -> list[TableRow]:
        """One :class:`TableRow` per row, ids ``{table id}#r{i}``.

        Examples:
            >>> [r.id for r in Table(id="t", header=("x",), rows=(("1",), ("2",))).row_objects()]
            ['t#r0', 't#r1']
        """
        return [
            TableRow(id=f"{self.id}#r{i}", table_id=self.id, header=self.header, cells=r, title=self.title, row_index=i)
            for i, r in enumerate(self.rows)
        ]


@dataclass(frozen=True)
class TableRow:
    """One row of a table, serialised with its header (``col: value`` pairs).

    Examples:
        >>> TableRow(id="t#r0", table_id="t", header=("a", "b"), cells=("1", "2")).text
        'a: 1 | b: 2'
    """

    id: str
    table_id: str
    header: Sequence[str]
    cells: Sequence[str]
    title: str = ""
    row_index: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    kind: Literal["table_row"] = field(default="table_row", init=False)

    def __post_init__(self) -> None:
        _check_id(self.id)
        header = _cells(self.header, f"header of {self.id}")
        cells = _cells(self.cells, f"cells of {self.id}")
        if len(cells) > len(header):
            raise InvalidInputError(f"row {self.id} has more cells ({len(cells)}) than columns ({len(header)})")
        cells = cells + ("",) * (len(header) - len(cells))
        object.__setattr__(self, "header", header)
        object.__setattr__(self, "cells", cells)
        object.__setattr__(self, "metadata", _check_metadata(self.metadata, self.id))

    @property
    def text(self) -> str:
        """``column: value`` pairs joined by `` | ``."""
        return " | ".join(f"{h}: {c}" for h, c in zip(self.header, self.cells, strict=True))

    def index_text(self) -> str:
        """Title plus serialised row.

        Examples:
            >>> TableRow(id="r", table_id="t", header=("a",), cells=("1",), title="T").index_text()
            'T\\na: 1'
        """
        return f"{self.title}\n{self.text}" if self.title else self.text


DataObject = Passage | Table | TableRow
"""Any object a retriever can index and return."""


@dataclass(frozen=True)
class ScoredHit:
    """A retrieved object with its score (higher is better) and rank (0-based).

    Examples:
        >>> h = ScoredHit(obj=Passage(id="a", text="x"), score=1.5, rank=0)
        >>> h.id
        'a'
    """

    obj: DataObject
    score: float
    rank: int = 0

    @property
    def id(self) -> str:
        """The object's id."""
        return self.obj.id


def object_to_dict(obj: DataObject) -> dict[str, Any]:
    """Serialise a data object to a JSON-safe dict (round-trips with :func:`object_from_dict`).

    Examples:
        >>> object_from_dict(object_to_dict(Passage(id="a", text="x"))) == Passage(id="a", text="x")
        True
    """
    if isinstance(obj, Passage):
        return {"kind": "passage", "id": obj.id, "text": obj.text, "title": obj.title, "metadata": dict(obj.metadata)}
    if isinstance(obj, Table):
        return {
            "kind": "table",
            "id": obj.id,
            "title": obj.title,
            "header": list(obj.header),
            "rows": [list(r) for r in obj.rows],
            "metadata": dict(obj.metadata),
        }
    if isinstance(obj, TableRow):
        return {
            "kind": "table_row",
            "id": obj.id,
            "table_id": obj.table_id,
            "title": obj.title,
            "header": list(obj.header),
            "cells": list(obj.cells),
            "row_index": obj.row_index,
            "metadata": dict(obj.metadata),
        }
    raise InvalidInputError(f"not a retrievekit data object: {type(obj).__name__}")


def object_from_dict(d: Mapping[str, Any]) -> DataObject:
    """Inverse of :func:`object_to_dict`.

    Examples:
        >>> object_from_dict({"kind": "passage", "id": "a", "text": "x"}).text
        'x'
    """
    kind = d.get("kind", "passage")
    meta = dict(d.get("metadata") or {})
    if kind == "passage":
        return Passage(id=d["id"], text=d["text"], title=d.get("title", ""), metadata=meta)
    if kind == "table":
        return Table(id=d["id"], header=d["header"], rows=d["rows"], title=d.get("title", ""), metadata=meta)
    if kind == "table_row":
        return TableRow(
            id=d["id"],
            table_id=d["table_id"],
            header=d["header"],
            cells=d["cells"],
            title=d.get("title", ""),
            row_index=int(d.get("row_index", 0)),
            metadata=meta,
        )
    raise InvalidInputError(f"unknown object kind {kind!r}")


def dumps_objects(objs: Iterable[DataObject]) -> str:
    """Serialise objects as JSON lines.

    Examples:
        >>> dumps_objects([Passage(id="a", text="x")]).count("\\n")
        1
    """
    return "".join(json.dumps(object_to_dict(o), ensure_ascii=False) + "\n" for o in objs)
