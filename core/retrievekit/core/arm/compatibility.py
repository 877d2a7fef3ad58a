"""Object-object compatibility ``C_ij`` for ARM's structure alignment (as reference ``align_structure_expand.py``).

* **table-passage**: max over the table's cells of ``0.2 * overlap(cell, passage title) + 0.8 * cos(cell,
  passage)``; cells are the row-level view's cells plus every cell whose hyperlink points at the passage (OTT-QA
  ``cell_links``); a hyperlink counts as a full title overlap.
* **table-table**: max over column pairs of ``uniqueness x (0.5 * Jaccard(values) + 0.5 * name similarity)``,
  name similarity ``= 0.5 * exact (word Jaccard of the headers) + 0.5 * cos(headers)``.
* **passage-passage**: ``mention x cos(i, j)``, where ``mention`` is 1 when one passage's title occurs in the
  other's text.

Cosines are clipped at 0. ``C`` is symmetric; :class:`Compatibility` also keeps, for each pair, the human-readable
*link* behind its score (``"cell 'X' in table T links to passage P"``), which ARM returns in hit metadata.

Examples:
    >>> import numpy as np
    >>> overlap_coefficient("Prime Suspect", "prime suspect (TV series)")
    1.0
    >>> round(jaccard({"a", "b"}, {"b", "c"}), 3)
    0.333
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from retrievekit.core.arm.serialize import MAX_SCAN_ROWS, object_name, table_cells, words
from retrievekit.core.types import DataObject, Table

__all__ = ["Compatibility", "compatibility", "jaccard", "overlap_coefficient"]

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors (rows)."""


def overlap_coefficient(a: str, b: str) -> float:
    """``|A & B| / min(|A|, |B|)`` over lower-cased word sets (0 when either is empty).

    Examples:
        >>> overlap_coefficient("", "x")
        0.0
    """
    wa, wb = set(words(a)), set(words(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def jaccard(a: set[str], b: set[str]) -> float:
    """Jaccard similarity of two sets (0 when both are empty).

    Examples:
        >>> jaccard(set(), set())
        0.0
    """
    union = a | b
    return len(a & b) / len(union) if union else 0.0


@dataclass
class Compatibility:
    """Pairwise compatibility of a candidate list.

    Attributes:
        matrix: ``n x n`` symmetric scores in [0, 1] (zero diagonal).
        links: ``{(i, j): description}`` for ``i < j`` with a positive score.

    Examples:
        >>> c = Compatibility(np.zeros((2, 2)), {})
        >>> c.link(1, 0)
        ''
    """

    matrix: np.ndarray
    links: dict[tuple[int, int], str] = field(default_factory=dict)

    def link(self, i: int, j: int) -> str:
        """The description of pair ``(i, j)`` in either order (``""`` when none).

        Examples:
            >>> Compatibility(np.zeros((2, 2)), {(0, 1): "x"}).link(1, 0)
            'x'
        """
        return self.links.get((min(i, j), max(i, j)), "")


def _columns(t: Table) -> list[set[str]]:
    cols: list[set[str]] = [set() for _ in t.header]
    for row in t.rows[:MAX_SCAN_ROWS]:
        for c, cell in enumerate(row):
            v = " ".join(cell.lower().split())
            if v:
                cols[c].add(v)
    return cols


def _uniqueness(t: Table, col: int) -> float:
    values = [" ".join(r[col].lower().split()) for r in t.rows[:MAX_SCAN_ROWS] if r[col].strip()]
    return len(set(values)) / len(values) if values else 0.0


def _table_table(a: Table, b: Table, embed: Embed, cache: dict[str, np.ndarray]) -> tuple[float, str]:
    ca, cb = _columns(a), _columns(b)
    heads = list(dict.fromkeys(h for h in (*a.header, *b.header) if h.strip() and h not in cache))
    if heads:
        for h, v in zip(heads, embed(heads), strict=True):
            cache[h] = np.asarray(v, dtype=float)
    best, why = 0.0, ""
    for i, ha in enumerate(a.header):
        for j, hb in enumerate(b.header):
            if not ca[i] or not cb[j]:
                continue
            exact = jaccard(set(words(ha)), set(words(hb)))
            sem = float(max(0.0, cache[ha] @ cache[hb])) if ha.strip() and hb.strip() else 0.0
            name = 0.5 * exact + 0.5 * sem
            uniq = max(_uniqueness(a, i), _uniqueness(b, j))
            score = uniq * (0.5 * jaccard(ca[i], cb[j]) + 0.5 * name)
            if score > best:
                best = score
                why = f"column '{ha}' in table {object_name(a)!r} joins column '{hb}' in table {object_name(b)!r}"
    return best, why


_Scored = tuple[int, int, float, str]
"""``(i, j, score, link)`` of one pair, ``i < j``."""


@dataclass(frozen=True)
class _Objects:
    """The candidates split by kind: normalised ``vectors``, table and text positions, text ids and titles."""

    objs: Sequence[DataObject]
    vectors: np.ndarray
    tables: list[int]
    texts: list[int]
    by_id: dict[str, int]
    titles: dict[int, str]


def _split_objects(objs: Sequence[DataObject], vectors: np.ndarray) -> _Objects:
    """Index the candidates by kind (tables vs passages)."""
    tables = [i for i, o in enumerate(objs) if isinstance(o, Table)]
    texts = [i for i, o in enumerate(objs) if not isinstance(o, Table)]
    by_id = {objs[i].id: i for i in texts}
    titles = {i: objs[i].title or "" for i in texts}
    return _Objects(objs, np.asarray(vectors, dtype=float), tables, texts, by_id, titles)


def _linked_cells(table: Table, by_id: dict[str, int]) -> dict[int, list[tuple[int, int, str]]]:
    """``{passage position: [(row, col, cell text), ...]}`` of the table's valid ``cell_links`` to candidates."""
    linked: dict[int, list[tuple[int, int, str]]] = {}
    for link in table.metadata.get("cell_links") or ():
        try:
            r, c, target = int(link[0]), int(link[1]), str(link[2])
        except (TypeError, ValueError, IndexError):
            continue
        p = by_id.get(target)
        if p is not None and 0 <= r < len(table.rows) and 0 <= c < len(table.header):
            text = " ".join(table.rows[r][c].split())
            if text:
                linked.setdefault(p, []).append((r, c, text))
    return linked


def _cell_vectors(cells: list[str], embed: Embed, cache: dict[str, np.ndarray]) -> np.ndarray:
    """The cells' vectors (rows), embedding the ones ``cache`` lacks and adding them to it (read into this call's own
    result: a search running at once may empty the cache meanwhile)."""
    got = {x: v for x in cells if (v := cache.get(x)) is not None}
    todo = [x for x in dict.fromkeys(cells) if x not in got]
    if todo:
        got |= {x: np.asarray(v, dtype=float) for x, v in zip(todo, embed(todo), strict=True)}
        cache.update((x, got[x]) for x in todo)
    return np.stack([got[x] for x in cells])


def _best_cell(
    table: Table, passage: DataObject, title: str, cells: list[str], sims: np.ndarray, link_cells: set[str]
) -> tuple[float, str]:
    """Max over ``cells`` of ``0.2 * overlap(cell, title) + 0.8 * sim`` (a link is a full overlap), and its link."""
    best, why = 0.0, ""
    for k, x in enumerate(cells):
        ov = 1.0 if x in link_cells else overlap_coefficient(x, title)
        s = 0.2 * ov + 0.8 * float(sims[k])
        if s > best:
            best = s
            verb = "links to" if x in link_cells else "matches"
            why = f"cell '{x}' in table {object_name(table)!r} {verb} passage {object_name(passage)!r}"
    return best, why


def _table_passage(
    t: int, ob: _Objects, query: str, view_rows: int, embed: Embed, cache: dict[str, np.ndarray]
) -> list[_Scored]:
    """Table ``t`` against every passage: its row-level view's cells plus its hyperlinked cells."""
    table = ob.objs[t]
    assert isinstance(table, Table)
    cells = table_cells(table, query, view_rows)
    linked = _linked_cells(table, ob.by_id)
    all_cells = list(dict.fromkeys([x[2] for x in cells] + [x[2] for v in linked.values() for x in v]))
    if not all_cells or not ob.texts:
        return []
    sims = np.clip(_cell_vectors(all_cells, embed, cache) @ ob.vectors[ob.texts].T, 0.0, None)  # cells x passages
    out: list[_Scored] = []
    for col, p in enumerate(ob.texts):
        link_cells = {x[2] for x in linked.get(p, [])}
        best, why = _best_cell(table, ob.objs[p], ob.titles[p], all_cells, sims[:, col], link_cells)
        out.append((min(t, p), max(t, p), best, why))
    return out


def _table_tables(ob: _Objects, embed: Embed, cache: dict[str, np.ndarray]) -> list[_Scored]:
    """Every pair of tables (:func:`_table_table`)."""
    out: list[_Scored] = []
    for a_pos, a in enumerate(ob.tables):
        for b in ob.tables[a_pos + 1 :]:
            ta, tb = ob.objs[a], ob.objs[b]
            assert isinstance(ta, Table) and isinstance(tb, Table)
            out.append((a, b, *_table_table(ta, tb, embed, cache)))
    return out


def _passage_passages(ob: _Objects) -> list[_Scored]:
    """Pairs of passages where one's title occurs in the other's text, scored by their cosine."""
    objs, vec, titles = ob.objs, ob.vectors, ob.titles
    low = {i: " ".join(objs[i].text.lower().split()) for i in ob.texts}
    out: list[_Scored] = []
    for a_pos, a in enumerate(ob.texts):
        for b in ob.texts[a_pos + 1 :]:
            title_a, title_b = titles[a].strip().lower(), titles[b].strip().lower()
            mention = ""
            if len(title_b) >= 3 and title_b in low[a]:
                mention = f"passage {object_name(objs[a])!r} mentions {object_name(objs[b])!r}"
            elif len(title_a) >= 3 and title_a in low[b]:
                mention = f"passage {object_name(objs[b])!r} mentions {object_name(objs[a])!r}"
            if mention:
                out.append((a, b, float(max(0.0, vec[a] @ vec[b])), mention))
    return out


def compatibility(
    objs: Sequence[DataObject],
    vectors: np.ndarray,
    query: str,
    embed: Embed,
    *,
    view_rows: int = 10,
    cell_cache: dict[str, np.ndarray] | None = None,
) -> Compatibility:
    """``C_ij`` for every pair of ``objs`` (module docstring); ``vectors`` are the objects' normalised embeddings.

    ``cell_cache`` (text -> vector) is reused across calls to avoid re-embedding cells and headers.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> objs = [Table(id="t", header=("Show",), rows=(("Prime Suspect",),), metadata={"cell_links": [(0, 0,
        ...         "/wiki/Prime_Suspect")]}), Passage(id="/wiki/Prime_Suspect", title="Prime Suspect", text="A show.")]
        >>> fake = lambda texts: np.ones((len(texts), 2)) / np.sqrt(2)
        >>> c = compatibility(objs, fake(["t", "p"]), "prime suspect", fake)
        >>> round(float(c.matrix[0, 1]), 2), c.link(0, 1)
        (1.0, "cell 'Prime Suspect' in table 't' links to passage 'Prime Suspect'")
    """
    n = len(objs)
    mat = np.zeros((n, n), dtype=float)
    links: dict[tuple[int, int], str] = {}
    if n < 2:
        return Compatibility(mat, links)
    cache = cell_cache if cell_cache is not None else {}
    ob = _split_objects(objs, vectors)
    scored = [x for t in ob.tables for x in _table_passage(t, ob, query, view_rows, embed, cache)]
    scored += _table_tables(ob, embed, cache)
    scored += _passage_passages(ob)
    for i, j, s, why in scored:
        mat[i, j] = mat[j, i] = s
        if s > 0:
            links[(i, j)] = why
    np.fill_diagonal(mat, 0.0)
    return Compatibility(np.clip(mat, 0.0, 1.0), links)
