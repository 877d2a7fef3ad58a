"""SciFact in the BEIR layout: corpus, queries and one qrels file per split."""

from __future__ import annotations

from pathlib import Path

from retrievekit.core.eval.datasets.dataset import Dataset, Query
from retrievekit.core.eval.datasets.files import _bad_split, _Files, _finish, _maybe_literal, _splits_from_glob
from retrievekit.core.eval.datasets.spec import DatasetSpec
from retrievekit.core.types import DataObject, Passage

__all__ = ["SCIFACT"]

_LAYOUT = "scifact/corpus.jsonl.gz (or corpus.jsonl), scifact/queries.jsonl and scifact/qrels/<split>.tsv"


def _scifact_splits(folder: Path) -> list[str]:
    """The splits a SciFact folder has (its ``qrels/*.tsv``)."""
    return _splits_from_glob(folder / "qrels", "*.tsv", "", ".tsv")


def _load_scifact(root: Path, split: str, limit: int | None) -> Dataset:
    files = _Files("scifact", root, _LAYOUT)
    folder = files.folder("scifact")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = _scifact_splits(folder)
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
            qid = files.query_id(queries_path, str(row["_id"]), line=line)
            meta = row.get("metadata") or {}
            # BEIR files for other splits may carry no scifact_split: then membership in the qrels decides.
            qsplit = meta.get("scifact_split") if isinstance(meta, dict) else None
            if qid in qrels and (qsplit is None or qsplit == split):
                queries.append(
                    Query(id=qid, text=str(row["text"]), metadata=dict(meta) if isinstance(meta, dict) else {})
                )
    return _finish(files, split, corpus, queries, qrels, limit)


SCIFACT = DatasetSpec(
    name="scifact", load=_load_scifact, layout=_LAYOUT, splits=lambda root: _scifact_splits(root / "scifact")
)
"""SciFact: every ``qrels/*.tsv`` is a split (``dev``, ``train``)."""
