"""Dataset loaders: synthetic folders in every format, plus the real public data when present."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from _paths import REPO as REPO_ROOT

from retrievekit.core.errors import DatasetError, DatasetFormatError, InvalidInputError
from retrievekit.core.eval.datasets import (
    DATASETS,
    LAYOUTS,
    Dataset,
    DatasetNotFoundError,
    load_dataset,
    rebuild_documents,
    stable_id,
    supported_splits,
)
from retrievekit.core.types import Passage, Table


def _real_data_dir() -> Path | None:
    env = os.environ.get("RETRIEVEKIT_DATA_DIR")
    path = Path(env) if env else REPO_ROOT / ".." / "shared" / "data"
    return path.resolve() if (path / "scifact").is_dir() else None


REAL = _real_data_dir()
# Exact counts are those of the public dev folder (its README says so); a held-out folder with the
# same layout gets only the structural checks.
PUBLIC = bool(
    REAL is not None
    and (REAL / "README.md").is_file()
    and "public dev parts" in (REAL / "README.md").read_text(encoding="utf-8", errors="replace")
)
needs_real = pytest.mark.skipif(REAL is None, reason="real data folder not found (set RETRIEVEKIT_DATA_DIR)")
needs_public = pytest.mark.skipif(not PUBLIC, reason="exact counts apply to the public dev data folder only")


# --------------------------------------------------------------------------- synthetic writers


def _jsonl_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _json_gz(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)


def write_scifact(root: Path) -> Path:
    d = root / "scifact"
    _jsonl_gz(
        d / "corpus.jsonl.gz",
        [
            {"_id": "10", "title": "Aspirin", "text": "Aspirin reduces fever.", "metadata": {"structured": False}},
            {"_id": "20", "title": "Statins", "text": "Statins lower cholesterol.", "metadata": {}},
            {"_id": "30", "title": "Vitamin", "text": "Vitamin D and bones.", "metadata": {}},
        ],
    )
    (d / "qrels").mkdir(parents=True)
    with open(d / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, text, split in [
            ("1", "aspirin fever", "dev"),
            ("2", "cholesterol statins", "dev"),
            ("3", "vitamin bones", "train"),
            ("4", "unjudged dev claim", "dev"),
        ]:
            f.write(json.dumps({"_id": qid, "text": text, "metadata": {"scifact_split": split}}) + "\n")
    (d / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n2\t20\t1\n2\t30\t2\n")
    (d / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n3\t30\t1\n")
    return root


def write_ott_qa(root: Path, stringified: bool = True) -> Path:
    d = root / "ott_qa"
    header = [["Year", []], ["Film", []]]
    data = [[["1999", []], ["The Matrix", ["/wiki/The_Matrix"]]], [["2003", []], ["Reloaded", []]]]
    table = {
        "table_id": "Keanu_1",
        "title": "Keanu Reeves",
        "header": str(header) if stringified else header,
        "data": str(data) if stringified else data,
        "section_title": "Filmography",
        "section_text": "",
        "intro": "Keanu is an actor.",
        "url": "https://en.wikipedia.org/wiki/Keanu",
    }
    table2 = {"table_id": "Other_1", "title": "Other", "header": [["A", []]], "data": [[["x", []]], [["y", []]]]}
    _jsonl_gz(d / "tables_traindev.jsonl.gz", [table, table2])
    _jsonl_gz(
        d / "passages_linked_from_dev_tables.jsonl.gz",
        [{"id": "/wiki/The_Matrix", "title": "The Matrix", "text": "The Matrix is a 1999 film by the Wachowskis."}],
    )
    qs = [
        {
            "question_id": "q1",
            "question": "Who directed the 1999 film?",
            "table_id": "Keanu_1",
            "answer-text": "the Wachowskis",
        },
        {"question_id": "q2", "question": "Which film in 2003?", "table_id": "Keanu_1", "answer-text": "Reloaded"},
    ]
    traced = [
        {**qs[0], "answer-node": [["The Matrix", [0, 1], "/wiki/The_Matrix", "passage"]]},
        {**qs[1], "answer-node": [["Reloaded", [1, 1], None, "table"]]},
    ]
    (d / "dev.json").write_text(json.dumps(qs))
    (d / "dev.traced.json").write_text(json.dumps(traced))
    return root


def write_obliqa(root: Path) -> Path:
    d = root / "obliqa"
    _jsonl_gz(
        d / "passages.jsonl.gz",
        [
            {"id": "p2", "DocumentID": 1, "PassageID": "1.2", "order": 1, "text": "Second clause."},
            {"id": "p1", "DocumentID": 1, "PassageID": "1.1", "order": 0, "text": "First clause."},
            {"id": "p3", "DocumentID": 2, "PassageID": "1", "order": 0, "text": "Other rulebook."},
            {"id": "p4", "DocumentID": 2, "PassageID": "2", "order": 1, "text": ""},
        ],
    )
    (d / "documents_meta.json").write_text(
        json.dumps(
            [
                {
                    "DocumentID": 1,
                    "title": "Rules A",
                    "version": 3,
                    "version_date": "2023-01-02",
                    "source_file": "A_VER03",
                },
                {"DocumentID": 2, "title": "Rules B", "version": 1, "version_date": None, "source_file": "B"},
            ]
        )
    )
    _json_gz(
        d / "dev.json.gz",
        [
            {
                "QuestionID": "u1",
                "Question": "What is the first clause?",
                "Passages": [{"DocumentID": 1, "PassageID": "1.1", "Passage": "First clause."}],
                "Group": 1,
            },
            {"QuestionID": "u2", "Question": "Other?", "Passages": [], "Group": 2},
        ],
    )
    (d / "qrels_dev.tsv").write_text("query-id\tcorpus-id\tscore\nu1\tp1\t1\nu2\tp3\t1\nu2\tp2\t1\n")
    return root


def write_multihop(root: Path) -> Path:
    d = root / "multihop_qa"
    pool = {"Alpha": ["Alpha is a letter.", " It comes first."], "Beta": ["Beta is second."], "Gamma": ["Gamma."]}
    _json_gz(d / "hotpotqa_train100_distractor_corpus.json.gz", pool)
    _json_gz(
        d / "hotpotqa_train100_distractor_questions.json.gz",
        [
            {
                "_id": "h1",
                "question": "Which letter comes before Beta?",
                "answer": "Alpha",
                "supporting_facts": [["Alpha", 1], ["Beta", 0], ["Alpha", 0]],
                "context": [[t, s] for t, s in pool.items()],
                "type": "bridge",
                "level": "easy",
            }
        ],
    )
    _json_gz(
        d / "musique_train100_corpus.json.gz",
        [{"title": "X", "text": "x one"}, {"title": "X", "text": "x two"}, {"title": "Y", "text": "y"}],
    )
    _json_gz(
        d / "musique_train100_questions.json.gz",
        [
            {
                "id": "2hop__1_2",
                "question": "What about x two and y?",
                "answer": "y",
                "answer_aliases": [],
                "answerable": True,
                "question_decomposition": [],
                "paragraphs": [
                    {"idx": 0, "title": "X", "paragraph_text": "x one", "is_supporting": False},
                    {"idx": 1, "title": "X", "paragraph_text": "x two", "is_supporting": True},
                    {"idx": 2, "title": "Y", "paragraph_text": "y", "is_supporting": True},
                ],
            }
        ],
    )
    _json_gz(
        d / "hotpotqa_dev_fullwiki500.json.gz",
        [
            {
                "_id": "f1",
                "question": "q?",
                "answer": "a",
                "supporting_facts": [["Alpha", 0], ["Missing", 0]],
                "context": [["Alpha", ["A."]], ["Zeta", ["Z."]]],
            }
        ],
    )
    _json_gz(
        d / "hotpotqa_dev100_gold_dpr_passages.json.gz",
        [
            {
                "_id": "d1",
                "question": "q?",
                "answer": "a",
                "context": [],
                "supporting_facts": [
                    ["Alpha", [0], ["A."], {"id": "123", "title": "Alpha", "text": "Alpha A.", "score": "1.0"}],
                    ["Beta", [0], ["B."], None],
                ],
            }
        ],
    )
    _json_gz(
        d / "hotpotqa_dev_hard1000_gold_evidence.json.gz",
        [
            {
                "question": "q?",
                "answer": "a",
                "evidence": ["Alpha | Alpha is first.", "Beta | Beta is second."],
                "type": "bridge",
                "level": "hard",
                "idx": 0,
            }
        ],
    )
    return root


# --------------------------------------------------------------------------- synthetic tests


def test_scifact_synthetic(tmp_path: Path) -> None:
    ds = load_dataset("scifact", write_scifact(tmp_path), split="dev")
    assert isinstance(ds, Dataset) and ds.name == "scifact" and ds.split == "dev"
    assert [q.id for q in ds.queries] == ["1", "2"]  # query 4 has no qrels, query 3 is train
    assert ds.qrels == {"1": {"10": 1}, "2": {"20": 1, "30": 2}}
    p = ds.object("10")
    assert isinstance(p, Passage) and p.title == "Aspirin" and p.metadata["structured"] is False
    train = load_dataset("scifact", tmp_path, split="train")
    assert [q.id for q in train.queries] == ["3"]
    assert supported_splits("scifact", tmp_path) == ["dev", "train"]
    assert [q.id for q in load_dataset("scifact", tmp_path, limit=1).queries] == ["1"]
    assert list(load_dataset("scifact", tmp_path, limit=1).qrels) == ["1"]


def test_scifact_split_without_scifact_split_metadata(tmp_path: Path) -> None:
    write_scifact(tmp_path)
    with open(tmp_path / "scifact" / "queries.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "9", "text": "held-out claim", "metadata": {}}) + "\n")
    (tmp_path / "scifact" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n9\t10\t1\n")
    ds = load_dataset("scifact", tmp_path, split="test")
    assert [q.id for q in ds.queries] == ["9"]


def test_scifact_unknown_split_and_missing_files(tmp_path: Path) -> None:
    write_scifact(tmp_path)
    with pytest.raises(InvalidInputError, match="supported splits here: dev, train"):
        load_dataset("scifact", tmp_path, split="test")
    (tmp_path / "scifact" / "corpus.jsonl.gz").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"corpus\.jsonl\.gz"):
        load_dataset("scifact", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="ott_qa"):
        load_dataset("ott_qa", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        load_dataset("scifact", tmp_path / "nope")
    with pytest.raises(InvalidInputError, match="unknown dataset"):
        load_dataset("msmarco", tmp_path)


@pytest.mark.parametrize("stringified", [True, False])
def test_ott_qa_synthetic(tmp_path: Path, stringified: bool) -> None:
    ds = load_dataset("ott_qa", write_ott_qa(tmp_path, stringified=stringified))
    table = ds.object("Keanu_1")
    assert isinstance(table, Table)
    assert table.header == ("Year", "Film") and table.rows == (("1999", "The Matrix"), ("2003", "Reloaded"))
    assert table.metadata["section_title"] == "Filmography" and table.metadata["intro"].startswith("Keanu")
    assert (0, 1, "/wiki/The_Matrix") in [tuple(x) for x in table.metadata["cell_links"]]
    assert isinstance(ds.object("/wiki/The_Matrix"), Passage)
    assert ds.qrels == {"q1": {"Keanu_1": 1, "/wiki/The_Matrix": 1}, "q2": {"Keanu_1": 1}}
    q1 = ds.queries[0]
    assert q1.metadata["gold_table_id"] == "Keanu_1" and q1.metadata["gold_passages"] == ["/wiki/The_Matrix"]
    assert ds.metadata["questions_file"] == "dev.traced.json"


def test_ott_qa_falls_back_to_untraced_questions(tmp_path: Path) -> None:
    write_ott_qa(tmp_path)
    (tmp_path / "ott_qa" / "dev.traced.json").unlink()
    ds = load_dataset("ott_qa", tmp_path)
    assert ds.qrels["q1"] == {"Keanu_1": 1} and ds.metadata["questions_file"] == "dev.json"
    with pytest.raises(InvalidInputError, match="supported splits here: dev"):
        load_dataset("ott_qa", tmp_path, split="test")


def test_obliqa_synthetic_and_rebuild(tmp_path: Path) -> None:
    ds = load_dataset("obliqa", write_obliqa(tmp_path))
    assert [q.id for q in ds.queries] == ["u1", "u2"]
    assert ds.qrels == {"u1": {"p1": 1}, "u2": {"p3": 1, "p2": 1}}
    p1 = ds.object("p1")
    assert p1.metadata["DocumentID"] == 1 and p1.metadata["PassageID"] == "1.1"
    assert p1.metadata["document_title"] == "Rules A" and p1.metadata["version_date"] == "2023-01-02"
    docs = rebuild_documents(ds.corpus)
    assert list(docs) == [1, 2]
    assert [p.id for p in docs[1]] == ["p1", "p2"] and [p.id for p in docs[2]] == ["p3", "p4"]
    assert ds.queries[0].metadata["gold_passages"] == [{"DocumentID": 1, "PassageID": "1.1"}]
    with pytest.raises(InvalidInputError, match="supported splits here: dev"):
        load_dataset("obliqa", tmp_path, split="test")


def test_hotpotqa_synthetic_variants(tmp_path: Path) -> None:
    write_multihop(tmp_path)
    ds = load_dataset("hotpotqa", tmp_path)
    assert {o.id for o in ds.corpus} == {"Alpha", "Beta", "Gamma"}
    assert ds.object("Alpha").text == "Alpha is a letter. It comes first."
    assert ds.qrels == {"h1": {"Alpha": 1, "Beta": 1}}
    assert ds.queries[0].metadata["gold_titles"] == ["Alpha", "Beta"]
    assert load_dataset("hotpotqa", tmp_path, split="train").qrels == ds.qrels
    fw = load_dataset("hotpotqa", tmp_path, split="fullwiki")
    assert fw.qrels == {"f1": {"Alpha": 1, "Missing": 1}} and fw.metadata["qrels_missing_from_corpus"] == 1
    dpr = load_dataset("hotpotqa", tmp_path, split="dpr")
    assert dpr.qrels == {"d1": {"123": 1}} and dpr.metadata["unmapped_supporting_facts"] == 1
    hard = load_dataset("hotpotqa", tmp_path, split="hard")
    assert len(hard.corpus) == 2 and hard.qrels["0"] == {
        stable_id("Alpha", "Alpha is first."): 1,
        stable_id("Beta", "Beta is second."): 1,
    }
    with pytest.raises(InvalidInputError, match="supported splits here: dev, train"):
        load_dataset("hotpotqa", tmp_path, split="test")


def test_musique_synthetic_stable_ids(tmp_path: Path) -> None:
    write_multihop(tmp_path)
    ds = load_dataset("musique", tmp_path)
    ids = [o.id for o in ds.corpus]
    assert ids == [stable_id("X", "x one"), stable_id("X", "x two"), stable_id("Y", "y")]
    assert all(len(i) == 12 for i in ids) and len(set(ids)) == 3
    assert ds.qrels == {"2hop__1_2": {stable_id("X", "x two"): 1, stable_id("Y", "y"): 1}}
    assert load_dataset("musique", tmp_path).corpus == ds.corpus  # deterministic
    with pytest.raises(InvalidInputError, match="supported splits here: dev, train"):
        load_dataset("musique", tmp_path, split="validation")


def test_limit_validation(tmp_path: Path) -> None:
    write_scifact(tmp_path)
    assert load_dataset("scifact", tmp_path, limit=0).queries == []
    with pytest.raises(InvalidInputError):
        load_dataset("scifact", tmp_path, limit=-1)


# --------------------------------------------------------------------------- missing and malformed files
# Each case breaks one file of a valid synthetic folder; the error must be typed and name the file (and the line or
# list item where one is to blame), so a user can fix the folder without reading the loader.


def _bytes_gz(path: Path, data: bytes) -> None:
    with gzip.open(path, "wb") as f:
        f.write(data)


def _noisy_scifact_corpus(path: Path, n: int = 3000) -> None:
    """A corpus that compresses poorly, so a truncated copy still decodes many whole lines first."""
    rows = [
        {"_id": str(i), "title": f"t{i}", "text": " ".join(stable_id(str(i), str(j)) for j in range(8))}
        for i in range(n)
    ]
    rows[:1] = [{"_id": "10", "title": "Aspirin", "text": "Aspirin reduces fever.", "metadata": {}}]
    _jsonl_gz(path, rows)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corpus_line_without_text(root: Path) -> None:
    rows = [{"_id": "10", "title": "Aspirin", "text": "Aspirin."}, {"_id": "20", "title": "Statins"}]
    _jsonl_gz(root / "scifact" / "corpus.jsonl.gz", rows)


def _corpus_line_without_id(root: Path) -> None:
    _jsonl_gz(root / "scifact" / "corpus.jsonl.gz", [{"title": "Aspirin", "text": "Aspirin."}])


def _bad_json_line(root: Path) -> None:
    path = root / "scifact" / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = '{"_id": "3", "text": "vitamin bones"'  # unterminated object on line 3
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _non_utf8_qrels(root: Path) -> None:
    (root / "scifact" / "qrels" / "dev.tsv").write_bytes(b"query-id\tcorpus-id\tscore\n1\t10\t1\n2\t2\xff0\t1\n")


def _truncated_corpus(root: Path) -> None:
    path = root / "scifact" / "corpus.jsonl.gz"
    _noisy_scifact_corpus(path)
    _truncate(path)


def _not_gzip(root: Path) -> None:
    (root / "scifact" / "corpus.jsonl.gz").write_text('{"_id": "10", "text": "plain text, not gzip"}\n')


def _qrels_two_columns(root: Path) -> None:
    (root / "scifact" / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n2 20 1\n")


def _qrels_infinite(root: Path) -> None:
    (root / "scifact" / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n2\t20\tinf\n")


def _qrels_empty(root: Path) -> None:
    (root / "scifact" / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n")


def _query_line_is_a_list(root: Path) -> None:
    with open(root / "scifact" / "queries.jsonl", "a", encoding="utf-8") as f:
        f.write('["5", "a list, not an object"]\n')


# (case, dataset, break the folder, error type, file relative to the data folder, line, text in the message)
BROKEN = [
    (
        "missing corpus",
        "scifact",
        lambda r: (r / "scifact/corpus.jsonl.gz").unlink(),
        DatasetNotFoundError,
        "scifact/corpus.jsonl.gz",
        None,
        "missing file",
    ),
    (
        "missing queries",
        "scifact",
        lambda r: (r / "scifact/queries.jsonl").unlink(),
        DatasetNotFoundError,
        "scifact/queries.jsonl",
        None,
        "missing file",
    ),
    (
        "missing qrels folder",
        "scifact",
        lambda r: [p.unlink() for p in (r / "scifact/qrels").iterdir()],
        DatasetNotFoundError,
        "scifact/qrels/dev.tsv",
        None,
        "missing file",
    ),
    (
        "truncated gzip",
        "scifact",
        _truncated_corpus,
        DatasetFormatError,
        "scifact/corpus.jsonl.gz",
        None,
        "truncated or corrupt",
    ),
    ("not gzip", "scifact", _not_gzip, DatasetFormatError, "scifact/corpus.jsonl.gz", None, "truncated or corrupt"),
    (
        "corpus line without text",
        "scifact",
        _corpus_line_without_text,
        DatasetFormatError,
        "scifact/corpus.jsonl.gz",
        2,
        "missing field 'text'",
    ),
    (
        "corpus line without _id",
        "scifact",
        _corpus_line_without_id,
        DatasetFormatError,
        "scifact/corpus.jsonl.gz",
        1,
        "missing field '_id'",
    ),
    ("bad JSON line", "scifact", _bad_json_line, DatasetFormatError, "scifact/queries.jsonl", 3, "invalid JSON"),
    (
        "query line not an object",
        "scifact",
        _query_line_is_a_list,
        DatasetFormatError,
        "scifact/queries.jsonl",
        5,
        "expected a JSON object",
    ),
    ("non-UTF-8 qrels", "scifact", _non_utf8_qrels, DatasetFormatError, "scifact/qrels/dev.tsv", 3, "not UTF-8"),
    (
        "qrels with two columns",
        "scifact",
        _qrels_two_columns,
        DatasetFormatError,
        "scifact/qrels/dev.tsv",
        3,
        "tab-separated column",
    ),
    ("infinite qrels score", "scifact", _qrels_infinite, DatasetFormatError, "scifact/qrels/dev.tsv", 3, "'inf'"),
    ("empty qrels", "scifact", _qrels_empty, DatasetFormatError, "scifact/qrels/dev.tsv", None, "no judgements"),
    (
        "ott_qa missing passages",
        "ott_qa",
        lambda r: (r / "ott_qa/passages_linked_from_dev_tables.jsonl.gz").unlink(),
        DatasetNotFoundError,
        "ott_qa/passages_linked_from_dev_tables.jsonl.gz",
        None,
        "missing file",
    ),
    (
        "ott_qa table line without table_id",
        "ott_qa",
        lambda r: _jsonl_gz(r / "ott_qa/tables_traindev.jsonl.gz", [{"table_id": "T"}, {"title": "no id"}]),
        DatasetFormatError,
        "ott_qa/tables_traindev.jsonl.gz",
        2,
        "missing field 'table_id'",
    ),
    (
        "ott_qa questions invalid JSON",
        "ott_qa",
        lambda r: (r / "ott_qa/dev.traced.json").write_text('[\n{"question_id": "q1",\n "question": }\n]'),
        DatasetFormatError,
        "ott_qa/dev.traced.json",
        3,
        "invalid JSON",
    ),
    (
        "obliqa question without text",
        "obliqa",
        lambda r: _json_gz(r / "obliqa/dev.json.gz", [{"QuestionID": "u1", "Question": "q?"}, {"QuestionID": "u2"}]),
        DatasetFormatError,
        "obliqa/dev.json.gz",
        None,
        "item 2: missing field 'Question'",
    ),
    (
        "obliqa truncated passages",
        "obliqa",
        lambda r: _truncate(r / "obliqa/passages.jsonl.gz"),
        DatasetFormatError,
        "obliqa/passages.jsonl.gz",
        None,
        "truncated or corrupt",
    ),
    (
        "obliqa documents_meta not UTF-8",
        "obliqa",
        lambda r: (r / "obliqa/documents_meta.json").write_bytes(b'[\n{"DocumentID": 1,\n "title": "R\xe9gles"}]'),
        DatasetFormatError,
        "obliqa/documents_meta.json",
        3,
        "not UTF-8",
    ),
    (
        "hotpotqa questions not a list",
        "hotpotqa",
        lambda r: _json_gz(r / "multihop_qa/hotpotqa_train100_distractor_questions.json.gz", {"_id": "h1"}),
        DatasetFormatError,
        "multihop_qa/hotpotqa_train100_distractor_questions.json.gz",
        None,
        "expected a JSON list",
    ),
    (
        "hotpotqa bad supporting fact",
        "hotpotqa",
        lambda r: _json_gz(
            r / "multihop_qa/hotpotqa_train100_distractor_questions.json.gz",
            [{"_id": "h1", "question": "q?", "supporting_facts": [["Alpha"]]}],
        ),
        DatasetFormatError,
        "multihop_qa/hotpotqa_train100_distractor_questions.json.gz",
        None,
        "item 1",
    ),
    (
        "musique missing questions",
        "musique",
        lambda r: (r / "multihop_qa/musique_train100_questions.json.gz").unlink(),
        DatasetNotFoundError,
        "multihop_qa/musique_train100_questions.json.gz",
        None,
        "missing file",
    ),
    (
        "musique pool item without text",
        "musique",
        lambda r: _json_gz(r / "multihop_qa/musique_train100_corpus.json.gz", [{"title": "X"}]),
        DatasetFormatError,
        "multihop_qa/musique_train100_corpus.json.gz",
        None,
        "item 1: missing field 'text'",
    ),
]


def write_all(root: Path) -> Path:
    """A valid folder with every dataset (the synthetic writers above)."""
    for write in (write_scifact, write_ott_qa, write_obliqa, write_multihop):
        write(root)
    return root


@pytest.mark.parametrize(
    ("case", "name", "breaks", "error", "relpath", "line", "text"), BROKEN, ids=[b[0] for b in BROKEN]
)
def test_broken_file_is_named(
    tmp_path: Path, case: str, name: str, breaks: Any, error: type, relpath: str, line: int | None, text: str
) -> None:
    root = write_all(tmp_path)
    load_dataset(name, root)  # valid before the break
    breaks(root)
    with pytest.raises(error) as info:
        load_dataset(name, root)
    e = info.value
    msg = str(e)
    assert isinstance(e, DatasetError) and isinstance(e, InvalidInputError)
    assert msg.startswith(f"{name}: ") and str(root / relpath) in msg and text in msg, msg
    assert e.path == str(root / relpath) and "docs/datasets.md" in msg
    if line is not None:
        assert f" line {line}:" in msg and e.line == line, msg
    if error is DatasetNotFoundError:
        assert isinstance(e, FileNotFoundError) and LAYOUTS[name] in msg


def test_truncated_gzip_reports_how_far_it_got(tmp_path: Path) -> None:
    root = write_all(tmp_path)
    _truncated_corpus(root)
    with pytest.raises(DatasetFormatError, match=r"unreadable after line \d+ \(") as info:
        load_dataset("scifact", root)
    assert info.value.line is not None and info.value.line > 1  # whole lines before the cut were read


def test_first_missing_file_in_layout_order(tmp_path: Path) -> None:
    """Existence is checked before anything is parsed: with two files gone, the first in layout order is named."""
    root = write_all(tmp_path)
    (root / "obliqa" / "dev.json.gz").unlink()
    (root / "obliqa" / "qrels_dev.tsv").write_bytes(b"\xff")  # malformed, but never read
    (root / "obliqa" / "passages.jsonl.gz").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"missing file \S+passages\.jsonl\.gz"):
        load_dataset("obliqa", root)


def test_missing_dataset_folder_and_data_dir(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"scifact: missing folder \S+scifact .*docs/datasets\.md"):
        load_dataset("scifact", tmp_path)
    with pytest.raises(DatasetNotFoundError, match=r"hotpotqa: missing folder \S+multihop_qa"):
        load_dataset("hotpotqa", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="no data folder given"):
        load_dataset("scifact", None)


def test_loaded_files_are_listed(tmp_path: Path) -> None:
    root = write_all(tmp_path)
    assert load_dataset("scifact", root).metadata["files"] == [
        "scifact/corpus.jsonl.gz",
        "scifact/queries.jsonl",
        "scifact/qrels/dev.tsv",
    ]
    assert load_dataset("ott_qa", root).metadata["files"][-1] == "ott_qa/dev.traced.json"
    assert load_dataset("obliqa", root).metadata["files"][-1] == "obliqa/documents_meta.json"


def test_scifact_plain_corpus_as_beir_ships_it(tmp_path: Path) -> None:
    root = write_all(tmp_path)
    gz = root / "scifact" / "corpus.jsonl.gz"
    with gzip.open(gz, "rb") as f:
        (root / "scifact" / "corpus.jsonl").write_bytes(f.read())
    gz.unlink()
    ds = load_dataset("scifact", root)
    assert ds.object("10").title == "Aspirin" and ds.metadata["files"][0] == "scifact/corpus.jsonl"


def test_utf8_bom_and_blank_lines_are_accepted(tmp_path: Path) -> None:
    root = write_all(tmp_path)
    path = root / "scifact" / "queries.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\n\n", 1))
    assert [q.id for q in load_dataset("scifact", root).queries] == ["1", "2"]


# --------------------------------------------------------------------------- real data


@needs_real
@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("scifact", "dev"),
        ("scifact", "train"),
        ("ott_qa", "dev"),
        ("obliqa", "dev"),
        ("hotpotqa", "dev"),
        ("hotpotqa", "dpr"),
        ("hotpotqa", "hard"),
        ("musique", "dev"),
    ],
)
def test_real_data_structure(name: str, split: str) -> None:
    assert REAL is not None
    ds = load_dataset(name, REAL, split=split)
    ids = [o.id for o in ds.corpus]
    assert ds.queries and len(ids) == len(set(ids))
    assert all(ds.qrels.get(q.id) for q in ds.queries), "every loaded query is judged"
    assert ds.metadata["qrels_missing_from_corpus"] == 0, ds.metadata.get("qrels_missing_examples")
    assert len({q.id for q in ds.queries}) == len(ds.queries)
    head = load_dataset(name, REAL, split=split, limit=5)
    assert [q.id for q in head.queries] == [q.id for q in ds.queries[:5]]


@needs_public
def test_real_public_counts() -> None:
    assert REAL is not None
    sf = load_dataset("scifact", REAL, "dev")
    assert (len(sf.corpus), len(sf.queries), sum(map(len, sf.qrels.values()))) == (5183, 215, 248)
    assert len(load_dataset("scifact", REAL, "train").queries) == 809
    ott = load_dataset("ott_qa", REAL)
    assert sum(isinstance(o, Table) for o in ott.corpus) == 8891
    assert sum(isinstance(o, Passage) for o in ott.corpus) == 17841
    assert len(ott.queries) == 1495
    assert all(q.metadata["gold_table_id"] in ott.qrels[q.id] for q in ott.queries)
    assert sum(1 for q in ott.queries if q.metadata["gold_passages"]) == 1244
    ob = load_dataset("obliqa", REAL)
    assert (len(ob.corpus), len(ob.queries), sum(map(len, ob.qrels.values()))) == (13732, 2788, 3677)
    assert len(rebuild_documents(ob.corpus)) == 40
    assert all(1 <= len(v) <= 6 for v in ob.qrels.values())
    hp = load_dataset("hotpotqa", REAL)
    assert (len(hp.corpus), len(hp.queries)) == (994, 70)
    assert len(load_dataset("hotpotqa", REAL, "fullwiki").queries) == 350
    assert len(load_dataset("hotpotqa", REAL, "dpr").queries) == 70
    assert len(load_dataset("hotpotqa", REAL, "hard").queries) == 700
    mu = load_dataset("musique", REAL)
    assert (len(mu.corpus), len(mu.queries)) == (1890, 70)
    assert all(2 <= len(v) <= 4 for v in mu.qrels.values())


def test_datasets_constant() -> None:
    assert DATASETS[:5] == ("scifact", "ott_qa", "obliqa", "hotpotqa", "musique")  # new built-ins are appended
