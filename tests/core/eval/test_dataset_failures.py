"""A dataset whose own code raises, or whose data ``bench`` would refuse, fails in ``retrievekit data check`` and in
``bench`` with one typed error naming the dataset, never a raw traceback or an "ok" (issue #62 item 6)."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _toy_dataset import TOY, write_toy

from retrievekit.core.cli import main
from retrievekit.core.errors import DatasetError, DatasetFormatError
from retrievekit.core.eval.datasets import DATASET_ENTRY_POINT_GROUP, Dataset, DatasetSpec, load_dataset, registry


@pytest.fixture
def register() -> Iterator[object]:
    names: list[str] = []

    def add(spec: DatasetSpec) -> None:
        registry.register_dataset(spec)
        names.append(spec.name)

    yield add
    for name in names:
        registry._REGISTRY.pop(name, None)


def _check(data: Path, name: str) -> int:
    return main(["data", "check", "--dataset", name, "--data-dir", str(data)])


def _bench(data: Path, name: str, tmp_path: Path) -> int:
    out = tmp_path / "r.json"
    return main(["bench", f"--dataset={name}", f"--data-dir={data}", "--method=bm25", f"--out={out}", "--no-progress"])


def _broken_loader(root: Path, split: str, limit: int | None) -> Dataset:
    return json.loads("{not json")  # a plugin's own bug: a raw JSONDecodeError


def _broken_splits(root: Path) -> list[str]:
    raise OSError("the splits callable cannot list its folder")


@pytest.mark.parametrize("broken", ["loader", "splits"])
def test_a_registered_dataset_whose_code_raises_is_a_typed_error_naming_it(
    register, tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    data = write_toy(tmp_path / "data")
    if broken == "loader":
        register(DatasetSpec("boom", _broken_loader, "toy/", splits=TOY.splits, present=lambda root: True))
    else:
        register(DatasetSpec("boom", TOY.load, "toy/", splits=_broken_splits, present=lambda root: True))
    if broken == "loader":
        with pytest.raises(DatasetError, match="dataset 'boom': its loader failed on .*JSONDecodeError") as e:
            load_dataset("boom", data)
        assert isinstance(e.value.__cause__, json.JSONDecodeError)
    capsys.readouterr()
    assert _check(data, "boom") == 2
    captured = capsys.readouterr()
    assert "boom" in captured.out and "FAILED" in captured.out
    assert f"dataset 'boom': its {broken} failed" in captured.err and "Traceback" not in captured.err
    # every dataset present: the broken one fails, the others are still checked
    assert main(["data", "check", "--data-dir", str(data)]) == 2
    captured = capsys.readouterr()
    assert "FAILED" in captured.out and "not present: scifact" in captured.out
    if broken == "loader":
        assert _bench(data, "boom", tmp_path) == 2
        assert "dataset 'boom': its loader failed" in capsys.readouterr().err


def test_an_installed_dataset_whose_module_raises_on_import_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "raising_dataset.py").write_text("raise RuntimeError('this module needs a config file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "raising_dataset", raising=False)
    real = importlib.metadata.entry_points
    declared = [importlib.metadata.EntryPoint("raising", "raising_dataset:SPEC", DATASET_ENTRY_POINT_GROUP)]
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda **kw: declared if kw.get("group") == DATASET_ENTRY_POINT_GROUP else real(**kw),
    )
    with pytest.raises(DatasetError, match="entry point raising .* failed to import .*RuntimeError"):
        load_dataset("raising", tmp_path)
    (tmp_path / "toy").mkdir()
    assert main(["data", "check", "--data-dir", str(tmp_path)]) == 2  # listed with the others, failed, not raised
    captured = capsys.readouterr()
    assert "raising: FAILED" in captured.out and "failed to import" in captured.err


def test_a_duplicate_document_id_fails_data_check_as_it_fails_bench(
    register, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register(TOY)
    data = write_toy(tmp_path / "data")
    with (data / "toy" / "docs.jsonl").open("a") as f:
        f.write(json.dumps({"id": "d2", "text": "another text under the same id"}) + "\n")
    with pytest.raises(DatasetFormatError, match=r"toy: 1 corpus object id\(s\) appear more than once .*'d2'"):
        load_dataset("toy", data)
    assert _check(data, "toy") == 2
    captured = capsys.readouterr()
    assert "toy dev: FAILED" in captured.out and "ok" not in captured.out
    assert "corpus object id(s) appear more than once" in captured.err
    assert _bench(data, "toy", tmp_path) == 2
    assert "corpus object id(s) appear more than once" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("corpus", "message"),
    [([], "the corpus under .* is empty"), ([{"id": "d1", "text": "  "}], "has no text in any of its 1 objects")],
)
def test_a_corpus_bench_cannot_index_fails_data_check(
    register, tmp_path: Path, capsys: pytest.CaptureFixture[str], corpus: list[dict[str, str]], message: str
) -> None:
    register(TOY)
    data = write_toy(tmp_path / "data")
    (data / "toy" / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    assert _check(data, "toy") == 2
    captured = capsys.readouterr()
    assert "toy dev: FAILED" in captured.out
    with pytest.raises(DatasetFormatError, match=message):
        load_dataset("toy", data)


def test_a_split_without_questions_fails_and_missing_gold_ids_are_named(
    register, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register(TOY)
    data = write_toy(tmp_path / "data", questions=[("q1", "what reduces fever", "d9")])
    assert _check(data, "toy") == 0
    out = capsys.readouterr().out
    assert "note: 1 judged ids are not in the corpus (e.g. d9)" in out  # a registered loader's note names them too
    (data / "toy" / "dev.jsonl").write_text("")
    assert _check(data, "toy") == 2  # bench would refuse it: nothing to run
    captured = capsys.readouterr()
    assert "toy dev: FAILED" in captured.out and "no query has judgements" in captured.err
