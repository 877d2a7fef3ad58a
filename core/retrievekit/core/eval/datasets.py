"""Benchmark loaders: SciFact, OTT-QA, ObliQA, HotpotQA and MuSiQue from one data folder.

:func:`load_dataset` reads a folder with one sub-folder per dataset and fixed file names (the layout, the file
formats and where to get each dataset: ``docs/datasets.md``), so other parts with the same names load unchanged.
Nothing here hard-codes ids or counts. A missing file raises :class:`DatasetNotFoundError`, a malformed one
:class:`DatasetFormatError`; both name the file (and the line or list item) and are checked before any work
(``retrievekit data check`` runs the same checks and prints what it found).

=============  ============================================================  =========================================
dataset        files (under ``DATA_DIR/<folder>/``)                          splits
=============  ============================================================  =========================================
``scifact``    ``corpus.jsonl.gz`` (or ``.jsonl``), ``queries.jsonl``,        every ``qrels/*.tsv`` (``dev``, ``train``)
               ``qrels/{split}.tsv``
``ott_qa``     ``tables_*.jsonl.gz``, ``passages_linked_from_*.jsonl.gz``,    every ``{split}.traced.json`` /
               ``{split}.traced.json`` or ``{split}.json``                    ``{split}.json`` (``dev``)
``obliqa``     ``passages.jsonl.gz``, ``documents_meta.json``,                every ``qrels_{split}.tsv`` (``dev``)
               ``{split}.json.gz``, ``qrels_{split}.tsv``
``hotpotqa``   ``multihop_qa/hotpotqa_*``                                     ``dev`` (= ``train``, ``distractor``),
                                                                             ``fullwiki``, ``dpr``, ``hard``
``musique``    ``multihop_qa/musique_train100_*``                             ``dev`` (= ``train``)
=============  ============================================================  =========================================

Examples:
    >>> import json, pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())  # a one-document SciFact in the layout above
    >>> (root / "scifact" / "qrels").mkdir(parents=True)
    >>> doc = {"_id": "d1", "title": "Aspirin", "text": "Aspirin thins the blood."}
    >>> _ = (root / "scifact" / "corpus.jsonl").write_text(json.dumps(doc) + "\\n")
    >>> _ = (root / "scifact" / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "What thins blood?"}))
    >>> _ = (root / "scifact" / "qrels" / "dev.tsv").write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\n")
    >>> ds = load_dataset("scifact", root, split="dev")
    >>> ds.name, len(ds.corpus), ds.qrels
    ('scifact', 1, {'q1': {'d1': 1}})
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import random
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrievekit.core.errors import DatasetError as DatasetError
from retrievekit.core.errors import DatasetFormatError as DatasetFormatError
from retrievekit.core.errors import DatasetNotFoundError as DatasetNotFoundError
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.types import DataObject, Passage, Table

__all__ = [
    "DATASETS",
    "LAYOUTS",
    "Dataset",
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

LAYOUTS: dict[str, str] = {
    "scifact": "scifact/corpus.jsonl.gz (or corpus.jsonl), scifact/queries.jsonl and scifact/qrels/<split>.tsv",
    "ott_qa": "ott_qa/tables_*.jsonl.gz, ott_qa/passages_linked_from_*.jsonl.gz and "
    "ott_qa/<split>.traced.json (or ott_qa/<split>.json)",
    "obliqa": "obliqa/passages.jsonl.gz, obliqa/<split>.json.gz and obliqa/qrels_<split>.tsv "
    "(obliqa/documents_meta.json optional)",
    "hotpotqa": "multihop_qa/hotpotqa_train100_distractor_corpus.json.gz and "
    "multihop_qa/hotpotqa_train100_distractor_questions.json.gz (dev, train, distractor), "
    "multihop_qa/hotpotqa_dev_fullwiki500.json.gz (fullwiki), multihop_qa/hotpotqa_dev100_gold_dpr_passages.json.gz "
    "(dpr), multihop_qa/hotpotqa_dev_hard1000_gold_evidence.json.gz (hard)",
    "musique": "multihop_qa/musique_train100_corpus.json.gz and multihop_qa/musique_train100_questions.json.gz",
}
"""The files each dataset needs, relative to the data folder (the details: ``docs/datasets.md``)."""


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
        metadata: loader notes: ``n_corpus``, ``files`` (the files read, relative to the data folder),
            ``qrels_missing_from_corpus`` (gold ids the pool lacks), ...

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

    def restrict_corpus(self, size: int | None, *, seed: int = 0, keep: Sequence[str] = ()) -> Dataset:
        """The same queries over a smaller pool: every gold object of the loaded queries, the ids in ``keep``, and
        seeded random distractors up to ``size`` objects in all (corpus order kept; ``None`` keeps everything).

        A smaller pool makes an expensive method (a LATTICE tree build, ARM's compatibility) affordable on a CPU while
        every query can still find its gold objects. ``metadata["restricted"]`` records the size and seed.

        Raises:
            InvalidInputError: ``size`` is below 1.

        Examples:
            >>> docs = [Passage(id=str(i), text=f"doc {i}") for i in range(10)]
            >>> ds = Dataset("t", "dev", docs, [Query("q", "?")], {"q": {"7": 1}})
            >>> small = ds.restrict_corpus(3, seed=0)
            >>> len(small.corpus), "7" in {o.id for o in small.corpus}
            (3, True)
        """
        if size is None or size >= len(self.corpus):
            return self
        wanted = [oid for q in self.queries for oid, grade in self.qrels.get(q.id, {}).items() if grade > 0]
        pool = restrict_objects(self.corpus, [*wanted, *keep], size, seed=seed)
        meta = {**self.metadata, "restricted": {"size": len(pool), "seed": seed, "n_corpus_full": len(self.corpus)}}
        return Dataset(self.name, self.split, pool, self.queries, self.qrels, meta)

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


def restrict_objects(
    objects: Sequence[DataObject], must: Iterable[str], size: int | None, *, seed: int = 0
) -> list[DataObject]:
    """The objects whose ids are in ``must`` plus seeded random others, ``size`` objects in all, in input order.

    The others are drawn with ``random.Random(seed).sample`` from the remaining objects in input order, so a seed
    always gives the same pool. ``None`` (or a size of at least ``len(objects)``) keeps everything.

    Raises:
        InvalidInputError: ``size`` is below 1.

    Examples:
        >>> docs = [Passage(id=str(i), text="x") for i in range(10)]
        >>> len(restrict_objects(docs, ["3"], 3, seed=0)), "3" in [o.id for o in restrict_objects(docs, ["3"], 3)]
        (3, True)
    """
    if size is None or size >= len(objects):
        return list(objects)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInputError(f"corpus size must be a positive integer, got {size!r}")
    ids = {o.id for o in objects}
    keep = {oid for oid in must if oid in ids}
    rest = [o.id for o in objects if o.id not in keep]
    keep |= set(random.Random(seed).sample(rest, max(0, min(len(rest), size - len(keep)))))
    return [o for o in objects if o.id in keep]


def stable_id(*parts: str, length: int = 12) -> str:
    """Deterministic short id: the first ``length`` hex digits of sha1 over the parts joined by newlines.

    Examples:
        >>> stable_id("Title", "Some text")
        '8085dcd07404'
    """
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()[:length]


_SEE = "see docs/datasets.md"


class _Files:
    """The files one load reads: checks they exist (in layout order) before any is parsed, and names them."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.used: list[str] = []

    def folder(self, sub: str) -> Path:
        folder = self.root / sub
        if not folder.is_dir():
            raise DatasetNotFoundError(
                f"{self.name}: missing folder {folder} ({self.name} expects {LAYOUTS[self.name]} under {self.root}; "
                f"is --data-dir the folder that holds '{sub}/'? {_SEE})",
                path=folder,
            )
        return folder

    def need(self, path: Path, what: str) -> Path:
        if not path.is_file():
            raise DatasetNotFoundError(
                f"{self.name}: missing file {path} (the {what}; {self.name} expects {LAYOUTS[self.name]} "
                f"under {self.root}; {_SEE})",
                path=path,
            )
        self.used.append(path.relative_to(self.root).as_posix())
        return path

    def bad(self, path: Path, problem: str, *, line: int | None = None, item: int | None = None) -> DatasetFormatError:
        where = f" line {line}" if line is not None else f" item {item}" if item is not None else ""
        return DatasetFormatError(f"{self.name}: {path}{where}: {problem}; {_SEE}", path=path, line=line)

    @contextmanager
    def record(self, path: Path, *, line: int | None = None, item: int | None = None) -> Iterator[None]:
        """Turn a structural surprise while reading one record into an error that names the file and record."""
        try:
            yield
        except DatasetError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            detail = f"missing field {e}" if isinstance(e, KeyError) else f"{type(e).__name__}: {e}"
            raise self.bad(path, f"unexpected record structure ({detail})", line=line, item=item) from e

    # ------------------------------------------------------------------ readers

    def _open(self, path: Path) -> Any:
        return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")

    def lines(self, path: Path) -> Iterator[tuple[int, str]]:
        """``(line number, text)`` of each line, decoded strictly as UTF-8 (a leading BOM is ignored)."""
        lineno = 0
        try:
            with self._open(path) as f:
                for lineno, raw in enumerate(f, 1):
                    try:
                        text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                    except UnicodeDecodeError as e:
                        raise self.bad(
                            path, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1})", line=lineno
                        ) from None
                    yield lineno, text
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetFormatError(
                f"{self.name}: {path}: unreadable {f'after line {lineno}' if lineno else 'from the start'} "
                f"({e}; truncated or corrupt file?); {_SEE}",
                path=path,
                line=lineno + 1,
            ) from e

    def _check_fields(
        self,
        path: Path,
        row: Any,
        fields: Sequence[str],
        what: str,
        *,
        line: int | None = None,
        item: int | None = None,
    ) -> dict[str, Any]:
        if not isinstance(row, dict):
            raise self.bad(path, f"expected a JSON object ({what}), got {type(row).__name__}", line=line, item=item)
        for name in fields:
            if row.get(name) is None:
                raise self.bad(
                    path, f"missing field {name!r} (each {what} needs {', '.join(fields)})", line=line, item=item
                )
        return row

    def jsonl(self, path: Path, fields: Sequence[str], what: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(line number, object)`` of each non-blank line; each object must carry ``fields``."""
        for lineno, text in self.lines(path):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except ValueError as e:
                msg = getattr(e, "msg", str(e))
                col = getattr(e, "colno", None)
                raise self.bad(path, f"invalid JSON ({msg}{f' at column {col}' if col else ''})", line=lineno) from None
            yield lineno, self._check_fields(path, row, fields, what, line=lineno)

    def json(self, path: Path) -> Any:
        """The whole file as one JSON value (``.gz`` decompressed)."""
        try:
            with self._open(path) as f:
                raw = f.read()
        except (OSError, EOFError, zlib.error) as e:
            raise DatasetFormatError(
                f"{self.name}: {path}: unreadable ({e}; truncated or corrupt file?); {_SEE}", path=path
            ) from e
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            raise self.bad(path, f"not UTF-8 text (byte 0x{raw[e.start]:02x})", line=line) from None
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise self.bad(path, f"invalid JSON ({e.msg} at column {e.colno})", line=e.lineno) from None

    def json_list(self, path: Path, fields: Sequence[str], what: str) -> list[tuple[int, dict[str, Any]]]:
        """``(item number, object)`` of a JSON list of objects that each carry ``fields`` (items count from 1)."""
        data = self.json(path)
        if not isinstance(data, list):
            raise self.bad(path, f"expected a JSON list of {what} objects, got {type(data).__name__}")
        return [(i, self._check_fields(path, row, fields, what, item=i)) for i, row in enumerate(data, 1)]

    def qrels(self, path: Path) -> dict[str, dict[str, int]]:
        """BEIR TSV qrels (``query-id<TAB>corpus-id<TAB>score``), header optional; at least one judgement."""
        qrels: dict[str, dict[str, int]] = {}
        first = True
        for lineno, text in self.lines(path):
            row = text.rstrip("\r\n").split("\t")
            if not "".join(row).strip():
                continue
            if len(row) < 3:
                raise self.bad(
                    path,
                    f"{len(row)} tab-separated column(s), expected 'query-id<TAB>corpus-id<TAB>score'",
                    line=lineno,
                )
            try:
                grade = int(float(row[2]))
            except ValueError:
                if first:  # header
                    first = False
                    continue
                raise self.bad(path, f"score {row[2]!r} is not a number", line=lineno) from None
            first = False
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = grade
        if not qrels:
            raise self.bad(path, "no judgements (expected lines 'query-id<TAB>corpus-id<TAB>score')")
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
    files: _Files,
    split: str,
    corpus: list[DataObject],
    queries: list[Query],
    qrels: dict[str, dict[str, int]],
    limit: int | None,
    metadata: dict[str, Any] | None = None,
) -> Dataset:
    if limit is not None:
        queries = queries[:limit]
    keep = {q.id for q in queries}
    qrels = {q: dict(d) for q, d in qrels.items() if q in keep}
    ids = {o.id for o in corpus}
    missing = sorted({d for docs in qrels.values() for d, g in docs.items() if g > 0 and d not in ids})
    meta = dict(metadata or {})
    meta["n_corpus"] = len(corpus)
    meta["files"] = list(files.used)
    meta["qrels_missing_from_corpus"] = len(missing)
    if missing:
        meta["qrels_missing_examples"] = missing[:10]
    return Dataset(name=files.name, split=split, corpus=corpus, queries=queries, qrels=qrels, metadata=meta)


# --------------------------------------------------------------------------- scifact


def _load_scifact(root: Path, split: str, limit: int | None) -> Dataset:
    files = _Files("scifact", root)
    folder = files.folder("scifact")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = _splits_from_glob(folder / "qrels", "*.tsv", "", ".tsv")
        if splits:
            raise _bad_split("scifact", split, splits)
    corpus_path = folder / "corpus.jsonl.gz"
    if not corpus_path.is_file() and (folder / "corpus.jsonl").is_file():  # as BEIR ships it
        corpus_path = folder / "corpus.jsonl"
    files.need(corpus_path, "corpus: one JSON object a line with _id, title, text")
    queries_path = files.need(folder / "queries.jsonl", "queries: one JSON object a line with _id, text")
    files.need(qrels_path, f"{split} qrels: query-id<TAB>corpus-id<TAB>score")
    qrels = files.qrels(qrels_path)
    corpus: list[DataObject] = []
    for line, row in files.jsonl(corpus_path, ("_id", "text"), "corpus line"):
        with files.record(corpus_path, line=line):
            meta = _maybe_literal(row.get("metadata") or {})
            corpus.append(
                Passage(
                    id=str(row["_id"]),
                    text=str(row["text"]),
                    title=str(row.get("title") or ""),
                    metadata=meta if isinstance(meta, dict) else {"raw": meta},
                )
            )
    queries: list[Query] = []
    for line, row in files.jsonl(queries_path, ("_id", "text"), "query line"):
        with files.record(queries_path, line=line):
            qid = str(row["_id"])
            meta = row.get("metadata") or {}
            # BEIR files for other splits may carry no scifact_split: then membership in the qrels decides.
            qsplit = meta.get("scifact_split") if isinstance(meta, dict) else None
            if qid in qrels and (qsplit is None or qsplit == split):
                queries.append(
                    Query(id=qid, text=str(row["text"]), metadata=dict(meta) if isinstance(meta, dict) else {})
                )
    return _finish(files, split, corpus, queries, qrels, limit)


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
    files = _Files("ott_qa", root)
    folder = files.folder("ott_qa")
    qpath = folder / f"{split}.traced.json"
    if not qpath.is_file():
        qpath = folder / f"{split}.json"
    if not qpath.is_file():
        splits = sorted({p.name.split(".")[0] for p in folder.glob("*.json")})
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
            queries.append(Query(id=qid, text=str(q["question"]), metadata=meta))
    return _finish(files, split, corpus, queries, qrels, limit, {"questions_file": qpath.name})


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
    files = _Files("obliqa", root)
    folder = files.folder("obliqa")
    qrels_path = folder / f"qrels_{split}.tsv"
    if not qrels_path.is_file():
        splits = _splits_from_glob(folder, "qrels_*.tsv", "qrels_", ".tsv")
        if splits:
            raise _bad_split("obliqa", split, splits)
    passages_path = files.need(
        folder / "passages.jsonl.gz", "passages: one JSON object a line with id, DocumentID, PassageID, order, text"
    )
    qpath = folder / f"{split}.json.gz"
    if not qpath.is_file() and (folder / f"{split}.json").is_file():
        qpath = folder / f"{split}.json"
    files.need(qpath, f"{split} questions: a JSON list with QuestionID, Question, Passages")
    files.need(qrels_path, f"{split} qrels: query-id<TAB>corpus-id<TAB>score")
    doc_meta: dict[Any, dict[str, Any]] = {}
    meta_path = folder / "documents_meta.json"
    if meta_path.is_file():
        files.need(meta_path, "document metadata")
        raw_meta = files.json(meta_path)
        if not isinstance(raw_meta, (dict, list)):
            raise files.bad(meta_path, f"expected a JSON list of document objects, got {type(raw_meta).__name__}")
        items = raw_meta.values() if isinstance(raw_meta, dict) else raw_meta
        for d in items:
            if isinstance(d, dict) and "DocumentID" in d:
                doc_meta[d["DocumentID"]] = d
    corpus: list[DataObject] = []
    for line, row in files.jsonl(passages_path, ("id", "DocumentID", "text"), "passage line"):
        with files.record(passages_path, line=line):
            dm = doc_meta.get(row["DocumentID"], {})
            meta = {
                "DocumentID": row["DocumentID"],
                "PassageID": row.get("PassageID"),
                "order": row.get("order", 0),
                "document_title": dm.get("title"),
                "source_file": dm.get("source_file"),
                "version": dm.get("version"),
                "version_date": dm.get("version_date"),
            }
            corpus.append(Passage(id=str(row["id"]), text=str(row["text"]), metadata=meta))
    qrels = files.qrels(qrels_path)
    queries: list[Query] = []
    for item, q in files.json_list(qpath, ("QuestionID", "Question"), "question"):
        with files.record(qpath, item=item):
            gold = [
                {"DocumentID": p.get("DocumentID"), "PassageID": p.get("PassageID")}
                for p in q.get("Passages") or []
                if isinstance(p, dict)
            ]
            meta = {"group": q.get("Group"), "gold_passages": gold}
            queries.append(Query(id=str(q["QuestionID"]), text=str(q["Question"]), metadata=meta))
    return _finish(files, split, corpus, queries, qrels, limit, {"n_documents": len(doc_meta)})


# --------------------------------------------------------------------------- multihop


def _hotpot_passage(title: str, sentences: Any) -> Passage:
    sents = [str(s) for s in sentences] if isinstance(sentences, list) else [str(sentences)]
    return Passage(id=title, title=title, text="".join(sents).strip(), metadata={"sentences": sents})


def _hotpot_query(q: dict[str, Any], qid: str, gold: list[str]) -> Query:
    meta: dict[str, Any] = {k: q[k] for k in ("answer", "type", "level", "supporting_facts") if k in q}
    meta["gold_titles"] = gold
    return Query(id=qid, text=str(q["question"]), metadata=meta)


def _ordered_unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


_HOTPOT_FILES: dict[str, tuple[str, ...]] = {
    "distractor": ("hotpotqa_train100_distractor_corpus.json.gz", "hotpotqa_train100_distractor_questions.json.gz"),
    "fullwiki": ("hotpotqa_dev_fullwiki500.json.gz",),
    "dpr": ("hotpotqa_dev100_gold_dpr_passages.json.gz",),
    "hard": ("hotpotqa_dev_hard1000_gold_evidence.json.gz",),
}


_HotpotParts = tuple[list[DataObject], list[Query], dict[str, dict[str, int]]]
"""``(corpus, queries, qrels)`` of one HotpotQA variant."""


def _hotpot_gold_titles(q: dict[str, Any]) -> list[str]:
    return _ordered_unique([str(t) for t, _ in q.get("supporting_facts") or []])


def _hotpot_distractor(files: _Files, pool_path: Path, qpath: Path) -> _HotpotParts:
    """Pool = the distractor corpus file (title -> sentences); gold = the supporting-fact titles."""
    pool = files.json(pool_path)
    if not isinstance(pool, dict):
        raise files.bad(
            pool_path, f"expected a JSON object mapping title -> list of sentences, got {type(pool).__name__}"
        )
    corpus: list[DataObject] = [_hotpot_passage(str(t), s) for t, s in pool.items()]
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for item, q in files.json_list(qpath, ("_id", "question"), "question"):
        with files.record(qpath, item=item):
            gold = _hotpot_gold_titles(q)
            qid = str(q["_id"])
            qrels[qid] = dict.fromkeys(gold, 1)
            queries.append(_hotpot_query(q, qid, gold))
    return corpus, queries, qrels


def _hotpot_fullwiki(files: _Files, path: Path) -> _HotpotParts:
    """Pool = the union of the questions' retrieved contexts; some gold titles are not in it.

    They are counted in ``metadata['qrels_missing_from_corpus']``: the recall ceiling is below 1.
    """
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for item, q in files.json_list(path, ("_id", "question"), "question"):
        with files.record(path, item=item):
            for title, sents in q.get("context") or []:
                if title not in seen:
                    seen.add(title)
                    corpus.append(_hotpot_passage(str(title), sents))
            gold = _hotpot_gold_titles(q)
            qid = str(q["_id"])
            qrels[qid] = dict.fromkeys(gold, 1)
            queries.append(_hotpot_query(q, qid, gold))
    return corpus, queries, qrels


def _hotpot_dpr(files: _Files, path: Path) -> tuple[list[DataObject], list[Query], dict[str, dict[str, int]], int]:
    """Pool = the DPR Wikipedia passages the supporting facts were mapped to; gold = those passage ids.

    Also returns the number of supporting facts without a DPR passage.
    """
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    unmapped = 0
    for item, q in files.json_list(path, ("_id", "question"), "question"):
        with files.record(path, item=item):
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
    return corpus, queries, qrels, unmapped


def _hotpot_hard(files: _Files, path: Path) -> _HotpotParts:
    """Gold evidence sentences ``"Title | sentence"`` as the pool (no distractors); gold = their passages."""
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for item, q in files.json_list(path, ("question",), "question"):
        with files.record(path, item=item):
            gold_ids: list[str] = []
            titles: list[str] = []
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
            qid = str(q.get("_id", q.get("idx", item - 1)))
            qrels[qid] = dict.fromkeys(_ordered_unique(gold_ids), 1)
            query = _hotpot_query(q, qid, _ordered_unique(titles))
            queries.append(
                Query(query.id, query.text, {**query.metadata, "gold_evidence_ids": _ordered_unique(gold_ids)})
            )
    return corpus, queries, qrels


def _load_hotpotqa(root: Path, split: str, limit: int | None) -> Dataset:
    if split not in _HOTPOT_SPLITS:
        raise _bad_split("hotpotqa", split, list(_HOTPOT_SPLITS))
    variant = _HOTPOT_SPLITS[split]
    files = _Files("hotpotqa", root)
    folder = files.folder("multihop_qa")
    paths = [files.need(folder / f, f"{variant} questions") for f in _HOTPOT_FILES[variant]]
    meta: dict[str, Any] = {"variant": variant}
    if variant == "distractor":
        pool_path, qpath = paths
        corpus, queries, qrels = _hotpot_distractor(files, pool_path, qpath)
    elif variant == "fullwiki":
        corpus, queries, qrels = _hotpot_fullwiki(files, paths[0])
    elif variant == "dpr":
        corpus, queries, qrels, unmapped = _hotpot_dpr(files, paths[0])
        meta["unmapped_supporting_facts"] = unmapped
    else:  # hard: gold evidence sentences "Title | sentence", no distractors
        corpus, queries, qrels = _hotpot_hard(files, paths[0])
    return _finish(files, split, corpus, queries, qrels, limit, meta)


def _load_musique(root: Path, split: str, limit: int | None) -> Dataset:
    if split not in _MUSIQUE_SPLITS:
        raise _bad_split("musique", split, list(_MUSIQUE_SPLITS))
    files = _Files("musique", root)
    folder = files.folder("multihop_qa")
    pool_path = files.need(folder / "musique_train100_corpus.json.gz", "paragraph pool: a JSON list of {title, text}")
    qpath = files.need(
        folder / "musique_train100_questions.json.gz", "questions: a JSON list with id, question, paragraphs"
    )
    pool = files.json_list(pool_path, ("text",), "paragraph")
    corpus: list[DataObject] = []
    by_content: dict[tuple[str, str], str] = {}
    for _, row in pool:
        title, text = str(row.get("title") or ""), str(row["text"])
        _musique_id(by_content, title, text, corpus)
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for item, q in files.json_list(qpath, ("id", "question"), "question"):
        with files.record(qpath, item=item):
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
            meta: dict[str, Any] = {
                k: q[k] for k in ("answer", "answer_aliases", "answerable", "question_decomposition") if k in q
            }
            meta["gold_titles"] = _ordered_unique(titles)
            queries.append(Query(id=qid, text=str(q["question"]), metadata=meta))
    return _finish(files, split, corpus, queries, qrels, limit, {"n_pool_file": len(pool)})


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


def load_dataset(
    name: str,
    data_dir: str | Path | None,
    split: str = "dev",
    limit: int | None = None,
    *,
    corpus_size: int | None = None,
    seed: int = 0,
) -> Dataset:
    """Load a benchmark from a data folder laid out as ``docs/datasets.md`` describes.

    Every file the split needs is checked to exist (in the order of :data:`LAYOUTS`) before any is read, so the
    first missing one is named at once.

    Args:
        name: one of :data:`DATASETS`.
        data_dir: the folder holding ``scifact/``, ``ott_qa/``, ``obliqa/``, ``multihop_qa/`` (``~`` expanded).
        split: which questions (see the module table for each dataset's splits).
        limit: keep only the first ``limit`` queries in file order (qrels follow).
        corpus_size: restrict the pool to the loaded queries' gold objects plus seeded distractors, this many
            objects in all (:meth:`Dataset.restrict_corpus`); ``None`` keeps the whole pool.
        seed: the distractors' seed.

    Raises:
        DatasetNotFoundError: the data folder, the dataset's folder or a required file is missing (the message
            names the expected path and the files the dataset needs).
        DatasetFormatError: a file is malformed: truncated or corrupt gzip, not UTF-8, invalid JSON, a record
            without a required field (the message names the file and the line or list item).
        InvalidInputError: unknown dataset or split, or a bad ``limit``.

    Examples:
        >>> load_dataset("nope", "/tmp")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown dataset 'nope'; choose one of: scifact, ott_qa, obliqa, hotpotqa, musique
        >>> load_dataset("scifact", "/nonexistent/data")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent/data does not exist (set --data-dir or RETRIEVEKIT_DATA_DIR; see docs/datasets.md)
    """
    loader = _LOADERS.get(name)
    if loader is None:
        raise InvalidInputError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    if data_dir is None or str(data_dir) == "":
        raise DatasetNotFoundError(f"no data folder given (pass --data-dir or set RETRIEVEKIT_DATA_DIR; {_SEE})")
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"data folder {root} does not exist (set --data-dir or RETRIEVEKIT_DATA_DIR; {_SEE})", path=root
        )
    if not isinstance(split, str) or not split:
        raise InvalidInputError(f"split must be a non-empty string, got {split!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidInputError(f"limit must be a non-negative integer or None, got {limit!r}")
    return loader(root, split, limit).restrict_corpus(corpus_size, seed=seed)
