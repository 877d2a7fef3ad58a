"""OTT-QA: tables and the passages they link, questions with their gold table and answer passages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrievekit.core.eval.datasets.dataset import Dataset, Query
from retrievekit.core.eval.datasets.files import _bad_split, _Files, _finish, _maybe_literal
from retrievekit.core.eval.datasets.spec import DatasetSpec
from retrievekit.core.types import DataObject, Passage, Table

__all__ = ["OTT_QA"]

_LAYOUT = (
    "ott_qa/tables_*.jsonl.gz, ott_qa/passages_linked_from_*.jsonl.gz and "
    "ott_qa/<split>.traced.json (or ott_qa/<split>.json)"
)


def _ott_qa_splits(folder: Path) -> list[str]:
    """The splits an OTT-QA folder has (its ``*.json`` question files)."""
    return sorted({p.name.split(".")[0] for p in folder.glob("*.json")})


def _cell_text(cell: Any) -> tuple[str, list[str]]:
    cell = _maybe_literal(cell)
    if isinstance(cell, (list, tuple)):
        text = cell[0] if cell else ""
        links = cell[1] if len(cell) > 1 and isinstance(cell[1], (list, tuple)) else []
        return ("" if text is None else str(text)), [str(x) for x in links]
    return ("" if cell is None else str(cell)), []


def _ott_table(row: dict[str, Any]) -> Table:
    header_raw = _maybe_literal(row.get("header") or [])
    data_raw = _maybe_literal(row.get("data") or [])
    header = [_cell_text(c)[0] for c in header_raw]
    rows: list[list[str]] = []
    links: list[tuple[int, int, str]] = []
    for r, raw in enumerate(data_raw):
        cells = []
        for c, cell in enumerate(_maybe_literal(raw)):
            text, cell_links = _cell_text(cell)
            cells.append(text)
            links.extend((r, c, link) for link in cell_links)
        if len(cells) > len(header):  # ragged: widen the header rather than drop cells
            header = header + [""] * (len(cells) - len(header))
        rows.append(cells)
    meta: dict[str, Any] = {k: row[k] for k in ("section_title", "section_text", "intro", "url", "uid") if k in row}
    meta["cell_links"] = links
    return Table(id=str(row["table_id"]), header=header or [""], rows=rows, title=row.get("title") or "", metadata=meta)


def _load_ott_qa(root: Path, split: str, limit: int | None) -> Dataset:
    files = _Files("ott_qa", root, _LAYOUT)
    folder = files.folder("ott_qa")
    qpath = folder / f"{split}.traced.json"
    if not qpath.is_file():
        qpath = folder / f"{split}.json"
    if not qpath.is_file():
        splits = _ott_qa_splits(folder)
        if splits:
            raise _bad_split("ott_qa", split, splits)
    table_files = sorted(folder.glob("tables_*.jsonl.gz")) or [folder / "tables_traindev.jsonl.gz"]
    for path in table_files:
        files.need(path, "tables: one JSON object a line with table_id, title, header, data")
    own = folder / f"passages_linked_from_{split}_tables.jsonl.gz"
    passage_files = [own] if own.is_file() else (sorted(folder.glob("passages_linked_from_*.jsonl.gz")) or [own])
    for path in passage_files:
        files.need(path, "linked passages: one JSON object a line with id, title, text")
    files.need(qpath, f"{split} questions: a JSON list with question_id, question, table_id")
    corpus: list[DataObject] = []
    seen: set[str] = set()
    for path in table_files:
        for line, row in files.jsonl(path, ("table_id",), "table line"):
            with files.record(path, line=line):
                if str(row["table_id"]) not in seen:
                    seen.add(str(row["table_id"]))
                    corpus.append(_ott_table(row))
    for path in passage_files:
        for line, row in files.jsonl(path, ("id", "text"), "passage line"):
            with files.record(path, line=line):
                if str(row["id"]) not in seen:
                    seen.add(str(row["id"]))
                    corpus.append(Passage(id=str(row["id"]), text=str(row["text"]), title=row.get("title") or ""))
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for item, q in files.json_list(qpath, ("question_id", "question"), "question"):
        with files.record(qpath, item=item):
            qid = files.query_id(qpath, str(q["question_id"]), item=item)
            nodes = q.get("answer-node") or []
            gold_passages = []
            for node in nodes:
                if len(node) >= 4 and node[3] == "passage" and node[2] and node[2] not in gold_passages:
                    gold_passages.append(str(node[2]))
            gold_table = str(q["table_id"]) if q.get("table_id") else None
            rel: dict[str, int] = {}
            if gold_table:
                rel[gold_table] = 1
            for p in gold_passages:
                rel[p] = 1
            qrels[qid] = rel
            meta = {
                "gold_table_id": gold_table,
                "gold_passages": gold_passages,
                "answer_text": q.get("answer-text"),
                "answer_nodes": nodes,
                "traced": "answer-node" in q,
            }
            queries.append(Query(id=qid, text=str(q["question"]), metadata=meta))
    return _finish(files, split, corpus, queries, qrels, limit, {"questions_file": qpath.name})


OTT_QA = DatasetSpec(
    name="ott_qa", load=_load_ott_qa, layout=_LAYOUT, splits=lambda root: _ott_qa_splits(root / "ott_qa")
)
"""OTT-QA: every ``{split}.traced.json`` / ``{split}.json`` is a split (``dev``)."""
