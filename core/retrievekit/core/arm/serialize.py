"""Object text for ARM: display names, the row-level view of a table, and prompt serialisations.

A table is serialised with its title, header and rows (``a | b`` lines); the *row-level view* keeps only the rows
most similar to the query (word overlap with the query, ties by row order), so huge tables stay small in prompts
and in compatibility. Ragged rows are padded by :class:`~retrievekit.core.types.Table` itself; empty cells
serialise as empty strings; a table without rows serialises to its header.

Examples:
    >>> from retrievekit.core.types import Passage, Table
    >>> t = Table(id="t", title="Films", header=("Year", "Film"), rows=(("1999", "Matrix"), ("2003", "Reloaded")))
    >>> [r for r, _ in row_view(t, "the 2003 film", 1)]
    [1]
    >>> print(serialize_object(t, "the 2003 film", rows=1))
    Films
    Year | Film
    2003 | Reloaded
    (1 more rows)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrievekit.core.llm.untrusted import label
from retrievekit.core.types import DataObject, Passage, Table  # noqa: F401  (used by the examples)

__all__ = [
    "MAX_CELLS",
    "MAX_SCAN_ROWS",
    "object_name",
    "row_view",
    "serialize_object",
    "table_cells",
    "unique_names",
    "words",
]

MAX_SCAN_ROWS = 5000
"""Rows of a huge table scored by the row-level view (the rest are ignored and the view says so)."""

CELL_CHARS = 40
"""Characters of a table cell shown in prompts (longer cells are cut with "...")."""

MAX_CELLS = 200
"""Distinct cells of a table used for compatibility (from its row-level view)."""

_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her his in is it its of on or she that the their they this to "
    "was were what when where which who whom whose why with how did does do".split()
)


def words(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """Lower-cased word tokens of ``text`` (``\\w+``), optionally without English stopwords.

    Examples:
        >>> words("The Dock of the Bay!")
        ['the', 'dock', 'of', 'the', 'bay']
        >>> words("The Dock of the Bay!", drop_stopwords=True)
        ['dock', 'bay']
    """
    out = [w.lower() for w in _WORD.findall(text)]
    return [w for w in out if w not in STOPWORDS] if drop_stopwords else out


def object_name(obj: DataObject, max_chars: int = 60) -> str:
    """A short display name: the title (plus the section for OTT-QA tables), else the id; at most ``max_chars``.

    Examples:
        >>> object_name(Passage(id="/wiki/X", text="...", title="X"))
        'X'
        >>> object_name(Passage(id="p7", text="no title"))
        'p7'
    """
    name = obj.title.strip()
    section = str(obj.metadata.get("section_title") or "").strip() if isinstance(obj, Table) else ""
    if name and section and section.lower() != name.lower():
        name = f"{name} - {section}"
    name = " ".join((name or obj.id).split())
    return name[:max_chars].strip() or obj.id


def unique_names(objs: Sequence[DataObject], max_chars: int = 60) -> list[str]:
    """Display names made unique within ``objs`` (a repeat gets `` #2``, `` #3`` ...), as safe data-block ids
    (:func:`~retrievekit.core.llm.untrusted.label`: no quote, angle bracket, brace or ``[n]`` marker a title could
    use to break out of its block).

    Examples:
        >>> unique_names([Passage(id="a", text="x", title="T"), Passage(id="b", text="y", title="T")])
        ['T', 'T #2']
    """
    out: list[str] = []
    taken: set[str] = set()
    for o in objs:
        base = label(object_name(o, max_chars))
        name, n = base, 2
        while name.lower() in taken:
            name, n = f"{base} #{n}", n + 1
        taken.add(name.lower())
        out.append(name)
    return out


def row_view(table: Table, query: str, n: int) -> list[tuple[int, tuple[str, ...]]]:
    """The ``n`` rows most similar to ``query`` as ``(row index, cells)``, in table order.

    Similarity is the number of distinct non-stopword query words in the row (ties: earlier rows first). Only the
    first :data:`MAX_SCAN_ROWS` rows of a huge table are scored. A table without rows gives ``[]``.

    Examples:
        >>> t = Table(id="t", header=("a",), rows=(("x",), ("y",), ("x y",)))
        >>> row_view(t, "y", 2)
        [(1, ('y',)), (2, ('x y',))]
        >>> row_view(Table(id="e", header=("a",), rows=()), "y", 3)
        []
    """
    rows = list(table.rows[:MAX_SCAN_ROWS])
    if not rows or n < 1:
        return []
    q = set(words(query, drop_stopwords=True))
    scored = [(-len(q & set(words(" ".join(r)))), i) for i, r in enumerate(rows)]
    keep = sorted(i for _, i in sorted(scored)[:n])
    return [(i, tuple(rows[i])) for i in keep]


def table_cells(table: Table, query: str, n_rows: int) -> list[tuple[int, int, str]]:
    """Distinct non-empty cells ``(row, column, text)`` of the row-level view (at most :data:`MAX_CELLS`).

    Examples:
        >>> t = Table(id="t", header=("a", "b"), rows=(("x", ""), ("x", "z")))
        >>> table_cells(t, "x z", 2)
        [(0, 0, 'x'), (1, 1, 'z')]
    """
    out: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    for r, cells in row_view(table, query, n_rows):
        for c, cell in enumerate(cells):
            text = " ".join(cell.split())
            if text and text.lower() not in seen:
                seen.add(text.lower())
                out.append((r, c, text))
                if len(out) >= MAX_CELLS:
                    return out
    return out


def _cut(cell: str, n: int = CELL_CHARS) -> str:
    cell = " ".join(cell.split())
    return cell if len(cell) <= n else cell[: n - 3].rstrip() + "..."


def serialize_object(obj: DataObject, query: str = "", *, rows: int = 5, chars: int = 300) -> str:
    """Prompt text of an object: a table as title + header + its ``rows`` most query-similar rows (cells cut to
    :data:`CELL_CHARS`; a note says how many rows were left out), a passage as title + its first ``chars``
    characters.

    Examples:
        >>> from retrievekit.core.types import Table
        >>> print(serialize_object(Table(id="t", header=("a", "b"), rows=(("1",), ("2", "3"))), rows=1))
        a | b
        1 |
        (1 more rows)
        >>> serialize_object(Passage(id="p", text="x" * 10, title="P"), chars=4)
        'P\\nxxxx...'
    """
    if isinstance(obj, Table):
        lines = [obj.title] if obj.title else []
        lines.append(" | ".join(obj.header))
        view = row_view(obj, query, rows)
        lines.extend(" | ".join(_cut(c) for c in cells).rstrip() for _, cells in view)
        if len(obj.rows) > len(view):
            lines.append(f"({len(obj.rows) - len(view)} more rows)")
        return "\n".join(lines)
    text = " ".join(obj.text.split())
    if len(text) > chars:
        text = text[:chars].rstrip() + "..."
    return f"{obj.title}\n{text}" if obj.title else text
