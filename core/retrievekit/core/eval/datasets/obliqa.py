"""ObliQA: regulatory passages with their documents' metadata, questions and graded qrels."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.eval.datasets.dataset import Dataset, Query
from retrievekit.core.eval.datasets.files import _bad_split, _Files, _finish, _splits_from_glob
from retrievekit.core.eval.datasets.spec import DatasetSpec
from retrievekit.core.types import DataObject, Passage

__all__ = ["OBLIQA", "rebuild_documents"]

_LAYOUT = "obliqa/passages.jsonl.gz, obliqa/<split>.json.gz and obliqa/qrels_<split>.tsv (obliqa/documents_meta.json optional)"


def _obliqa_splits(folder: Path) -> list[str]:
    """The splits an ObliQA folder has (its ``qrels_*.tsv``)."""
    return _splits_from_glob(folder, "qrels_*.tsv", "qrels_", ".tsv")


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
    files = _Files("obliqa", root, _LAYOUT)
    folder = files.folder("obliqa")
    qrels_path = folder / f"qrels_{split}.tsv"
    if not qrels_path.is_file():
        splits = _obliqa_splits(folder)
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
            queries.append(
                Query(id=files.query_id(qpath, str(q["QuestionID"]), item=item), text=str(q["Question"]), metadata=meta)
            )
    return _finish(files, split, corpus, queries, qrels, limit, {"n_documents": len(doc_meta)})


OBLIQA = DatasetSpec(
    name="obliqa", load=_load_obliqa, layout=_LAYOUT, splits=lambda root: _obliqa_splits(root / "obliqa")
)
"""ObliQA: every ``qrels_{split}.tsv`` is a split (``dev``)."""
