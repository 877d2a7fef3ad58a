"""Benchmark loaders: SciFact, OTT-QA, ObliQA, HotpotQA and MuSiQue in the layout of ``shared/data``.

:func:`load_dataset` reads any folder laid out like the public data folder
(one sub-folder per dataset, the same file names), so held-out parts with the
same names load unchanged. Nothing here hard-codes ids or counts.

=============  ============================================================  =========================================
dataset        files (under ``DATA_DIR/<folder>/``)                          splits
=============  ============================================================  =========================================
``scifact``    ``corpus.jsonl.gz``, ``queries.jsonl``, ``qrels/{split}.tsv``  every ``qrels/*.tsv`` (``dev``, ``train``)
``ott_qa``     ``tables_*.jsonl.gz``, ``passages_linked_from_*.jsonl.gz``,    every ``{split}.traced.json`` /
               ``{split}.traced.json`` or ``{split}.json``                    ``{split}.json`` (``dev``)
``obliqa``     ``passages.jsonl.gz``, ``documents_meta.json``,                every ``qrels_{split}.tsv`` (``dev``)
               ``{split}.json.gz``, ``qrels_{split}.tsv``
``hotpotqa``   ``multihop_qa/hotpotqa_*``                                     ``dev`` (= ``train``, ``distractor``),
                                                                             ``fullwiki``, ``dpr``, ``hard``
``musique``    ``multihop_qa/musique_train100_*``                             ``dev`` (= ``train``)
=============  ============================================================  =========================================

Examples:
    >>> import os
    >>> ds = load_dataset("scifact", os.environ["RETRIEVEKIT_DATA_DIR"], split="dev", limit=3)  # doctest: +SKIP
    >>> len(ds.queries), ds.name  # doctest: +SKIP
    (3, 'scifact')
"""

from __future__ import annotations

import ast
import csv
import gzip
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.types import DataObject, Passage, Table

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetNotFoundError",
    "Query",
    "load_dataset",
    "rebuild_documents",
    "stable_id",
    "supported_splits",
]

DATASETS: tuple[str, ...] = ("scifact", "ott_qa", "obliqa", "hotpotqa", "musique")
"""Names :func:`load_dataset` accepts."""

_HOTPOT_SPLITS: dict[str, str] = {
    "dev": "distractor",
    "train": "distractor",
    "distractor": "distractor",
    "fullwiki": "fullwiki",
    "dpr": "dpr",
    "hard": "hard",
}
_MUSIQUE_SPLITS: tuple[str, ...] = ("dev", "train")


class DatasetNotFoundError(InvalidInputError, FileNotFoundError):
    """A dataset file (or split) that is not where the layout says it should be.

    Examples:
        >>> e = DatasetNotFoundError("missing /x/corpus.jsonl.gz")
        >>> isinstance(e, FileNotFoundError), isinstance(e, InvalidInputError)
        (True, True)
    """


@dataclass(frozen=True)
class Query:
    """One benchmark question.

    Attributes:
        id: the question id from the file.
        text: the question text.
        metadata: gold ids, answers and anything else the file carries.

    Examples:
        >>> Query(id="q1", text="Who?").metadata
        {}
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    """A loaded benchmark: corpus objects, queries and graded qrels.

    Attributes:
        name: dataset name (``scifact``, ``ott_qa``, ...).
        split: the split loaded.
        corpus: passages / tables to index, in file order.
        queries: questions in file order (after ``limit``).
        qrels: ``{query_id: {object_id: grade}}``, restricted to the loaded queries.
        metadata: loader notes, e.g. ``qrels_missing_from_corpus`` (gold ids the pool lacks).

    Examples:
        >>> ds = Dataset("toy", "dev", [Passage(id="a", text="x")], [Query("q", "x?")], {"q": {"a": 1}})
        >>> ds.object("a").text, len(ds)
        ('x', 1)
    """

    name: str
    split: str
    corpus: list[DataObject]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        """Number of queries."""
        return len(self.queries)

    def objects_by_id(self) -> dict[str, DataObject]:
        """Map of object id to object.

        Examples:
            >>> Dataset("t", "dev", [Passage(id="a", text="x")], [], {}).objects_by_id()["a"].id
            'a'
        """
        return {o.id: o for o in self.corpus}

    def object(self, object_id: str) -> DataObject:
        """The corpus object with this id (``KeyError`` if absent).

        Examples:
            >>> Dataset("t", "dev", [Passage(id="a", text="x")], [], {}).object("a").id
            'a'
        """
        for o in self.corpus:
            if o.id == object_id:
                return o
        raise KeyError(object_id)


# --------------------------------------------------------------------------- helpers


def stable_id(*parts: str, length: int = 12) -> str:
    """Deterministic short id: the first ``length`` hex digits of sha1 over the parts joined by newlines.

    Examples:
        >>> stable_id("Title", "Some text")
        '8085dcd07404'
    """
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()[:length]


def _need(path: Path, what: str) -> Path:
    if not path.is_file():
        raise DatasetNotFoundError(
            f"{what}: expected the file {path} (is --data-dir the folder that holds '{path.parent.name}/'?)"
        )
    return path


def _read_json(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"cannot read JSON from {path}: {e}") from e


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except ValueError as e:
                    raise InvalidInputError(f"{path}:{lineno}: not a JSON line ({e})") from e
    except OSError as e:
        raise InvalidInputError(f"cannot read {path}: {e}") from e


def _read_qrels_tsv(path: Path) -> dict[str, dict[str, int]]:
    """BEIR TSV qrels (``query-id corpus-id score``), header optional."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for i, row in enumerate(csv.reader(f, delimiter="\t")):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise InvalidInputError(
                    f"{path}: line {i + 1} has {len(row)} columns, expected 'query-id corpus-id score'"
                )
            try:
                grade = int(float(row[2]))
            except ValueError:
                if i == 0:  # header
                    continue
                raise InvalidInputError(f"{path}: line {i + 1}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = grade
    return qrels


def _maybe_literal(value: Any) -> Any:
    """Parse a stringified Python/JSON literal (``"[['a', []]]"``); return other values unchanged."""
    if isinstance(value, str) and value[:1] in "[{(":
        try:
            return json.loads(value)
        except ValueError:
            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return value
    return value


def _splits_from_glob(folder: Path, pattern: str, prefix: str, suffix: str) -> list[str]:
    return sorted({p.name[len(prefix) : len(p.name) - len(suffix)] for p in folder.glob(pattern)})


def _bad_split(name: str, split: str, supported: Sequence[str]) -> InvalidInputError:
    return InvalidInputError(
        f"dataset {name!r} has no split {split!r}; supported splits here: {', '.join(supported) or '(none found)'}"
    )


def _finish(
    name: str,
    split: str,
    corpus: list[DataObject],
    queries: list[Query],
    qrels: dict[str, dict[str, int]],
    limit: int | None,
    metadata: dict[str, Any] | None = None,
) -> Dataset:
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError(f"limit must be a non-negative integer or None, got {limit!r}")
        queries = queries[:limit]
    keep = {q.id for q in queries}
    qrels = {q: dict(d) for q, d in qrels.items() if q in keep}
    ids = {o.id for o in corpus}
    missing = sorted({d for docs in qrels.values() for d, g in docs.items() if g > 0 and d not in ids})
    meta = dict(metadata or {})
    meta["n_corpus"] = len(corpus)
    meta["qrels_missing_from_corpus"] = len(missing)
    if missing:
        meta["qrels_missing_examples"] = missing[:10]
    return Dataset(name=name, split=split, corpus=corpus, queries=queries, qrels=qrels, metadata=meta)


# --------------------------------------------------------------------------- scifact


def _load_scifact(root: Path, split: str, limit: int | None) -> Dataset:
    folder = root / "scifact"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = _splits_from_glob(folder / "qrels", "*.tsv", "", ".tsv")
        if not folder.is_dir():
            _need(qrels_path, "scifact qrels")
        raise _bad_split("scifact", split, splits)
    qrels = _read_qrels_tsv(qrels_path)
    corpus: list[DataObject] = []
    for row in _iter_jsonl(_need(folder / "corpus.jsonl.gz", "scifact corpus")):
        meta = _maybe_literal(row.get("metadata") or {})
        corpus.append(
            Passage(
                id=str(row["_id"]),
                text=row.get("text") or "",
                title=row.get("title") or "",
                metadata=meta if isinstance(meta, dict) else {"raw": meta},
            )
        )
    queries: list[Query] = []
    for row in _iter_jsonl(_need(folder / "queries.jsonl", "scifact queries")):
        qid = str(row["_id"])
        meta = row.get("metadata") or {}
        # BEIR files for other splits may carry no scifact_split: then membership in the qrels decides.
        qsplit = meta.get("scifact_split") if isinstance(meta, dict) else None
        if qid in qrels and (qsplit is None or qsplit == split):
            queries.append(Query(id=qid, text=row["text"], metadata=dict(meta) if isinstance(meta, dict) else {}))
    return _finish("scifact", split, corpus, queries, qrels, limit)


# --------------------------------------------------------------------------- ott_qa


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
    folder = root / "ott_qa"
    qpath = folder / f"{split}.traced.json"
    if not qpath.is_file():
        qpath = folder / f"{split}.json"
    if not qpath.is_file():
        if not folder.is_dir():
            _need(qpath, "ott_qa questions")
        splits = sorted({p.name.split(".")[0] for p in folder.glob("*.json")})
        raise _bad_split("ott_qa", split, splits)
    table_files = sorted(folder.glob("tables_*.jsonl.gz"))
    if not table_files:
        _need(folder / "tables_traindev.jsonl.gz", "ott_qa tables")
    own = folder / f"passages_linked_from_{split}_tables.jsonl.gz"
    passage_files = [own] if own.is_file() else sorted(folder.glob("passages_linked_from_*.jsonl.gz"))
    if not passage_files:
        _need(own, "ott_qa passages")
    corpus: list[DataObject] = []
    seen: set[str] = set()
    for path in table_files:
        for row in _iter_jsonl(path):
            if str(row["table_id"]) not in seen:
                seen.add(str(row["table_id"]))
                corpus.append(_ott_table(row))
    for path in passage_files:
        for row in _iter_jsonl(path):
            if str(row["id"]) not in seen:
                seen.add(str(row["id"]))
                corpus.append(Passage(id=str(row["id"]), text=row.get("text") or "", title=row.get("title") or ""))
    raw = _read_json(qpath)
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for q in raw:
        qid = str(q["question_id"])
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
        queries.append(Query(id=qid, text=q["question"], metadata=meta))
    return _finish("ott_qa", split, corpus, queries, qrels, limit, {"questions_file": qpath.name})


# --------------------------------------------------------------------------- obliqa


def rebuild_documents(corpus: Sequence[DataObject]) -> dict[Any, list[Passage]]:
    """Group ObliQA passages by ``metadata['DocumentID']`` and sort each group on ``metadata['order']``.

    Objects without a ``DocumentID`` are skipped. Keys come out sorted.

    Examples:
        >>> ps = [Passage(id="b", text="2", metadata={"DocumentID": 1, "order": 1}),
        ...       Passage(id="a", text="1", metadata={"DocumentID": 1, "order": 0})]
        >>> [p.id for p in rebuild_documents(ps)[1]]
        ['a', 'b']
    """
    docs: dict[Any, list[Passage]] = {}
    for obj in corpus:
        if isinstance(obj, Passage) and "DocumentID" in obj.metadata:
            docs.setdefault(obj.metadata["DocumentID"], []).append(obj)
    out: dict[Any, list[Passage]] = {}
    for key in sorted(docs, key=lambda k: (str(type(k)), k)):
        out[key] = sorted(docs[key], key=lambda p: (p.metadata.get("order", 0), p.id))
    return out


def _load_obliqa(root: Path, split: str, limit: int | None) -> Dataset:
    folder = root / "obliqa"
    qrels_path = folder / f"qrels_{split}.tsv"
    if not qrels_path.is_file():
        if not folder.is_dir():
            _need(qrels_path, "obliqa qrels")
        raise _bad_split("obliqa", split, _splits_from_glob(folder, "qrels_*.tsv", "qrels_", ".tsv"))
    qpath = folder / f"{split}.json.gz"
    if not qpath.is_file() and (folder / f"{split}.json").is_file():
        qpath = folder / f"{split}.json"
    _need(qpath, "obliqa questions")
    doc_meta: dict[Any, dict[str, Any]] = {}
    meta_path = folder / "documents_meta.json"
    if meta_path.is_file():
        raw_meta = _read_json(meta_path)
        items = raw_meta.values() if isinstance(raw_meta, dict) else raw_meta
        for d in items:
            if isinstance(d, dict) and "DocumentID" in d:
                doc_meta[d["DocumentID"]] = d
    corpus: list[DataObject] = []
    for row in _iter_jsonl(_need(folder / "passages.jsonl.gz", "obliqa passages")):
        dm = doc_meta.get(row.get("DocumentID"), {})
        meta = {
            "DocumentID": row.get("DocumentID"),
            "PassageID": row.get("PassageID"),
            "order": row.get("order", 0),
            "document_title": dm.get("title"),
            "source_file": dm.get("source_file"),
            "version": dm.get("version"),
            "version_date": dm.get("version_date"),
        }
        corpus.append(Passage(id=str(row["id"]), text=row.get("text") or "", metadata=meta))
    qrels = _read_qrels_tsv(qrels_path)
    queries: list[Query] = []
    for q in _read_json(qpath):
        gold = [
            {"DocumentID": p.get("DocumentID"), "PassageID": p.get("PassageID")}
            for p in q.get("Passages") or []
            if isinstance(p, dict)
        ]
        meta = {"group": q.get("Group"), "gold_passages": gold}
        queries.append(Query(id=str(q["QuestionID"]), text=q["Question"], metadata=meta))
    return _finish("obliqa", split, corpus, queries, qrels, limit, {"n_documents": len(doc_meta)})


# --------------------------------------------------------------------------- multihop


def _hotpot_passage(title: str, sentences: Any) -> Passage:
    sents = [str(s) for s in sentences] if isinstance(sentences, list) else [str(sentences)]
    return Passage(id=title, title=title, text="".join(sents).strip(), metadata={"sentences": sents})


def _hotpot_query(q: dict[str, Any], qid: str, gold: list[str]) -> Query:
    meta: dict[str, Any] = {k: q[k] for k in ("answer", "type", "level", "supporting_facts") if k in q}
    meta["gold_titles"] = gold
    return Query(id=qid, text=q["question"], metadata=meta)


def _ordered_unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _load_hotpotqa(root: Path, split: str, limit: int | None) -> Dataset:
    if split not in _HOTPOT_SPLITS:
        raise _bad_split("hotpotqa", split, list(_HOTPOT_SPLITS))
    variant = _HOTPOT_SPLITS[split]
    folder = root / "multihop_qa"
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    meta: dict[str, Any] = {"variant": variant}
    if variant == "distractor":
        pool = _read_json(_need(folder / "hotpotqa_train100_distractor_corpus.json.gz", "hotpotqa distractor pool"))
        if not isinstance(pool, dict):
            raise InvalidInputError("hotpotqa_train100_distractor_corpus.json.gz must map title -> list of sentences")
        corpus = [_hotpot_passage(str(t), s) for t, s in pool.items()]
        raw = _read_json(_need(folder / "hotpotqa_train100_distractor_questions.json.gz", "hotpotqa questions"))
        for q in raw:
            gold = _ordered_unique([str(t) for t, _ in q.get("supporting_facts") or []])
            qid = str(q["_id"])
            qrels[qid] = dict.fromkeys(gold, 1)
            queries.append(_hotpot_query(q, qid, gold))
    elif variant == "fullwiki":
        # Pool = the union of the questions' retrieved contexts; some gold titles are not in it
        # (counted in metadata['qrels_missing_from_corpus']): the recall ceiling is below 1.
        raw = _read_json(_need(folder / "hotpotqa_dev_fullwiki500.json.gz", "hotpotqa fullwiki"))
        seen: set[str] = set()
        for q in raw:
            for title, sents in q.get("context") or []:
                if title not in seen:
                    seen.add(title)
                    corpus.append(_hotpot_passage(str(title), sents))
            gold = _ordered_unique([str(t) for t, _ in q.get("supporting_facts") or []])
            qid = str(q["_id"])
            qrels[qid] = dict.fromkeys(gold, 1)
            queries.append(_hotpot_query(q, qid, gold))
    elif variant == "dpr":
        # Pool = the DPR Wikipedia passages the supporting facts were mapped to; gold = those passage ids.
        raw = _read_json(_need(folder / "hotpotqa_dev100_gold_dpr_passages.json.gz", "hotpotqa dpr"))
        seen = set()
        unmapped = 0
        for q in raw:
            gold_ids: list[str] = []
            titles: list[str] = []
            for sf in q.get("supporting_facts") or []:
                titles.append(str(sf[0]))
                dpr = sf[3] if len(sf) > 3 else None
                if not isinstance(dpr, dict):
                    unmapped += 1
                    continue
                pid = str(dpr["id"])
                if pid not in seen:
                    seen.add(pid)
                    corpus.append(Passage(id=pid, title=dpr.get("title") or "", text=dpr.get("text") or ""))
                gold_ids.append(pid)
            qid = str(q["_id"])
            qrels[qid] = dict.fromkeys(_ordered_unique(gold_ids), 1)
            query = _hotpot_query(q, qid, _ordered_unique(titles))
            queries.append(Query(query.id, query.text, {**query.metadata, "gold_dpr_ids": _ordered_unique(gold_ids)}))
        meta["unmapped_supporting_facts"] = unmapped
    else:  # hard: gold evidence sentences "Title | sentence", no distractors
        raw = _read_json(_need(folder / "hotpotqa_dev_hard1000_gold_evidence.json.gz", "hotpotqa hard"))
        seen = set()
        for i, q in enumerate(raw):
            gold_ids = []
            titles = []
            for ev in q.get("evidence") or []:
                title, sep, sentence = str(ev).partition(" | ")
                if not sep:
                    title, sentence = "", str(ev)
                pid = stable_id(title, sentence)
                if pid not in seen:
                    seen.add(pid)
                    corpus.append(Passage(id=pid, title=title, text=sentence))
                gold_ids.append(pid)
                titles.append(title)
            qid = str(q.get("_id", q.get("idx", i)))
            qrels[qid] = dict.fromkeys(_ordered_unique(gold_ids), 1)
            query = _hotpot_query(q, qid, _ordered_unique(titles))
            queries.append(
                Query(query.id, query.text, {**query.metadata, "gold_evidence_ids": _ordered_unique(gold_ids)})
            )
    return _finish("hotpotqa", split, corpus, queries, qrels, limit, meta)


def _load_musique(root: Path, split: str, limit: int | None) -> Dataset:
    if split not in _MUSIQUE_SPLITS:
        raise _bad_split("musique", split, list(_MUSIQUE_SPLITS))
    folder = root / "multihop_qa"
    pool = _read_json(_need(folder / "musique_train100_corpus.json.gz", "musique pool"))
    corpus: list[DataObject] = []
    by_content: dict[tuple[str, str], str] = {}
    for row in pool:
        title, text = str(row.get("title") or ""), str(row.get("text") or "")
        _musique_id(by_content, title, text, corpus)
    raw = _read_json(_need(folder / "musique_train100_questions.json.gz", "musique questions"))
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for q in raw:
        gold: list[str] = []
        titles: list[str] = []
        for p in q.get("paragraphs") or []:
            if p.get("is_supporting"):
                title, text = str(p.get("title") or ""), str(p.get("paragraph_text") or "")
                # a gold paragraph missing from the pool is added, so the gold stays retrievable and consistent
                gold.append(_musique_id(by_content, title, text, corpus))
                titles.append(title)
        qid = str(q["id"])
        qrels[qid] = dict.fromkeys(_ordered_unique(gold), 1)
        meta = {k: q[k] for k in ("answer", "answer_aliases", "answerable", "question_decomposition") if k in q}
        meta["gold_titles"] = _ordered_unique(titles)
        queries.append(Query(id=qid, text=q["question"], metadata=meta))
    return _finish("musique", split, corpus, queries, qrels, limit, {"n_pool_file": len(pool)})


def _musique_id(by_content: dict[tuple[str, str], str], title: str, text: str, corpus: list[DataObject]) -> str:
    key = (title, text)
    if key in by_content:
        return by_content[key]
    base = stable_id(title, text)
    used = set(by_content.values())
    pid, n = base, 1
    while pid in used:  # sha1 prefix collision between different contents: suffix deterministically
        pid = f"{base}-{n}"
        n += 1
    by_content[key] = pid
    corpus.append(Passage(id=pid, title=title, text=text))
    return pid


# --------------------------------------------------------------------------- entry point


_LOADERS = {
    "scifact": _load_scifact,
    "ott_qa": _load_ott_qa,
    "obliqa": _load_obliqa,
    "hotpotqa": _load_hotpotqa,
    "musique": _load_musique,
}


def supported_splits(name: str, data_dir: str | Path) -> list[str]:
    """Splits of ``name`` that the files in ``data_dir`` support.

    Examples:
        >>> supported_splits("musique", "/anywhere")
        ['dev', 'train']
    """
    root = Path(data_dir)
    if name == "scifact":
        return _splits_from_glob(root / "scifact" / "qrels", "*.tsv", "", ".tsv")
    if name == "ott_qa":
        return sorted({p.name.split(".")[0] for p in (root / "ott_qa").glob("*.json")})
    if name == "obliqa":
        return _splits_from_glob(root / "obliqa", "qrels_*.tsv", "qrels_", ".tsv")
    if name == "hotpotqa":
        return list(_HOTPOT_SPLITS)
    if name == "musique":
        return list(_MUSIQUE_SPLITS)
    raise InvalidInputError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")


def load_dataset(name: str, data_dir: str | Path, split: str = "dev", limit: int | None = None) -> Dataset:
    """Load a benchmark from a folder laid out like ``shared/data``.

    Args:
        name: one of :data:`DATASETS`.
        data_dir: the folder holding ``scifact/``, ``ott_qa/``, ``obliqa/``, ``multihop_qa/``.
        split: which questions (see the module table for each dataset's splits).
        limit: keep only the first ``limit`` queries in file order (qrels follow).

    Raises:
        DatasetNotFoundError: a required file is missing (the message names the expected path).
        InvalidInputError: unknown dataset or split, or a malformed file.

    Examples:
        >>> load_dataset("nope", "/tmp")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown dataset 'nope'; choose one of: scifact, ott_qa, obliqa, hotpotqa, musique
    """
    loader = _LOADERS.get(name)
    if loader is None:
        raise InvalidInputError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DatasetNotFoundError(f"data folder {root} does not exist (set --data-dir or RETRIEVEKIT_DATA_DIR)")
    if not isinstance(split, str) or not split:
        raise InvalidInputError(f"split must be a non-empty string, got {split!r}")
    return loader(root, split, limit)
