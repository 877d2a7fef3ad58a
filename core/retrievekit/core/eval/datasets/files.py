"""Reading a dataset's files with errors that name the file, the line or item, and what it should hold."""

from __future__ import annotations

import ast
import gzip
import json
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrievekit.core.errors import DatasetError, DatasetFormatError, DatasetNotFoundError, InvalidInputError
from retrievekit.core.eval.datasets.dataset import Dataset, Query
from retrievekit.core.types import DataObject

_SEE = "see docs/datasets.md"

__all__ = []


class _Files:
    """The files one load reads: checks they exist (in layout order) before any is parsed, and names them.

    ``layout`` is the dataset's one-line list of files (its ``DatasetSpec.layout``), quoted by every missing-file
    error.
    """

    def __init__(self, name: str, root: Path, layout: str) -> None:
        self.name = name
        self.root = root
        self.layout = layout
        self.used: list[str] = []
        self._first: dict[tuple[Path, str], str] = {}

    def folder(self, sub: str) -> Path:
        folder = self.root / sub
        if not folder.is_dir():
            raise DatasetNotFoundError(
                f"{self.name}: missing folder {folder} ({self.name} expects {self.layout} under {self.root}; "
                f"is --data-dir the folder that holds '{sub}/'? {_SEE})",
                path=folder,
            )
        return folder

    def need(self, path: Path, what: str) -> Path:
        if not path.is_file():
            raise DatasetNotFoundError(
                f"{self.name}: missing file {path} (the {what}; {self.name} expects {self.layout} "
                f"under {self.root}; {_SEE})",
                path=path,
            )
        self.used.append(path.relative_to(self.root).as_posix())
        return path

    def bad(self, path: Path, problem: str, *, line: int | None = None, item: int | None = None) -> DatasetFormatError:
        where = f" line {line}" if line is not None else f" item {item}" if item is not None else ""
        return DatasetFormatError(f"{self.name}: {path}{where}: {problem}; {_SEE}", path=path, line=line)

    def query_id(self, path: Path, qid: str, *, line: int | None = None, item: int | None = None) -> str:
        """``qid``, refused when an earlier line (or item) of ``path`` holds the same id: the later question would
        silently replace the earlier one in the qrels and the records."""
        where = f"line {line}" if line is not None else f"item {item}"
        first = self._first.setdefault((path, qid), where)
        if first != where:
            again = f"first on {first}" if line is not None else f"first as {first}"
            raise self.bad(
                path, f"query id {qid!r} appears again ({again}); query ids must be unique", line=line, item=item
            )
        return qid

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
            except (ValueError, OverflowError):  # "inf" overflows int()
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
