"""A questions file with one query id twice is refused by the loader, ``retrievekit data check`` and ``bench``,
naming the file, the line (or list item) and the id; before, the second question silently replaced the first."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core.cli import main
from retrievekit.core.errors import DatasetFormatError
from retrievekit.core.eval.datasets import load_dataset


def _scifact_with_a_repeated_id(tmp_path: Path) -> tuple[Path, Path]:
    """The three-claim SciFact with a fourth line reusing claim 2's id for another question."""
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    queries = data / "scifact" / "queries.jsonl"
    with open(queries, "a", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "2", "text": "a different question", "metadata": {"scifact_split": "dev"}}) + "\n")
    return data, queries


def test_the_loader_names_the_file_the_line_and_the_id(tmp_path: Path) -> None:
    data, queries = _scifact_with_a_repeated_id(tmp_path)
    with pytest.raises(DatasetFormatError) as e:
        load_dataset("scifact", data)
    assert (e.value.path, e.value.line) == (str(queries), 4)
    assert f"{queries} line 4: query id '2' appears again (first on line 2)" in str(e.value)


def test_data_check_and_bench_refuse_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, queries = _scifact_with_a_repeated_id(tmp_path)
    assert main(["data", "check", "--dataset", "scifact", "--data-dir", str(data)]) == 2
    check = capsys.readouterr()
    assert "scifact dev: FAILED" in check.out and f"{queries} line 4: query id '2'" in check.err
    out = tmp_path / "r.json"
    argv = ["--dataset=scifact", f"--data-dir={data}", "--method=bm25", f"--out={out}", "--no-progress"]
    assert main(["bench", *argv]) == 2
    assert f"{queries} line 4: query id '2' appears again" in capsys.readouterr().err and not out.exists()


def test_a_repeated_id_in_a_json_list_names_the_item(tmp_path: Path) -> None:
    folder = tmp_path / "multihop_qa"
    folder.mkdir()
    paras = [{"title": "A", "text": "alpha"}, {"title": "B", "text": "beta"}]
    question = {
        "id": "m1",
        "question": "alpha?",
        "paragraphs": [{"title": "A", "paragraph_text": "alpha", "is_supporting": True}],
    }
    with gzip.open(folder / "musique_train100_corpus.json.gz", "wt", encoding="utf-8") as f:
        json.dump(paras, f)
    with gzip.open(folder / "musique_train100_questions.json.gz", "wt", encoding="utf-8") as f:
        json.dump([question, {**question, "question": "beta?"}], f)
    with pytest.raises(
        DatasetFormatError,
        match=r"musique_train100_questions\.json\.gz item 2: query id 'm1' appears again \(first as item 1\)",
    ):
        load_dataset("musique", tmp_path)
