"""The dataset registry: the built-in datasets declared once each, a dataset registered at run time and one
declared by an installed package (a ``retrievekit.datasets`` entry point) loaded, checked and benchmarked by name."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _toy_dataset import TOY, write_toy

from retrievekit.core.cli import main
from retrievekit.core.errors import DatasetFormatError, DatasetNotFoundError, InvalidInputError, MissingDependencyError
from retrievekit.core.eval.datasets import (
    DATASET_ENTRY_POINT_GROUP,
    DATASETS,
    LAYOUTS,
    Dataset,
    DatasetSpec,
    Query,
    available_datasets,
    dataset_spec,
    load_dataset,
    register_dataset,
    registry,
    supported_splits,
)
from retrievekit.core.types import Passage


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[importlib.metadata.EntryPoint]]:
    """The ``retrievekit.datasets`` entry points installed packages declare: the list the test fills."""
    declared: list[importlib.metadata.EntryPoint] = []
    real = importlib.metadata.entry_points

    def entry_points(**kwargs: str) -> object:
        return declared if kwargs.get("group") == DATASET_ENTRY_POINT_GROUP else real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    yield declared
    registry._REGISTRY.pop("toy", None)


@pytest.fixture
def registered() -> Iterator[None]:
    register_dataset(TOY)
    yield
    registry._REGISTRY.pop("toy", None)


def _declare(declared: list[importlib.metadata.EntryPoint], name: str, value: str) -> None:
    declared.append(importlib.metadata.EntryPoint(name, value, DATASET_ENTRY_POINT_GROUP))


def test_every_built_in_dataset_is_one_spec() -> None:
    # the first five in this order; a new built-in dataset is appended (docs/adding-a-dataset.md)
    assert DATASETS[:5] == ("scifact", "ott_qa", "obliqa", "hotpotqa", "musique")
    assert tuple(available_datasets()) == DATASETS
    assert LAYOUTS == {name: dataset_spec(name).layout for name in DATASETS}
    assert supported_splits("hotpotqa", "/anywhere") == ["dev", "train", "distractor", "fullwiki", "dpr", "hard"]
    with pytest.raises(InvalidInputError, match="'scifact' is a built-in dataset"):
        register_dataset(DatasetSpec("scifact", TOY.load, "x", splits=TOY.splits))
    with pytest.raises(InvalidInputError, match="takes a DatasetSpec, got str"):
        register_dataset("toy")  # type: ignore[arg-type]


def test_a_registered_dataset_loads_checks_and_benchmarks_by_name(
    registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_toy(tmp_path / "data")
    ds = load_dataset("toy", data, limit=1)
    assert [q.id for q in ds.queries] == ["q1"] and ds.metadata["n_corpus"] == 3
    assert supported_splits("toy", data) == ["dev"] and available_datasets()[-1] == "toy"
    # data check finds it in the folder (beside the absent built-in ones) and reads every split
    assert main(["data", "check", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "toy dev: ok: 3 corpus objects, 2 queries, 2 relevant judgements" in out
    assert "not present: scifact, ott_qa, obliqa, hotpotqa, musique" in out
    # bench takes it as --dataset, with the real BM25
    result = tmp_path / "r.json"
    argv = ["--dataset=toy", f"--data-dir={data}", "--method=bm25", f"--out={result}", "--no-progress"]
    assert main(["bench", *argv]) == 0
    r = json.loads(result.read_text())
    assert (r["dataset"], r["n_queries"], r["metrics"]["recall@1"]) == ("toy", 2, 1.0)
    # a missing file is the loader's typed error, through data check
    (data / "toy" / "docs.jsonl").unlink()
    assert main(["data", "check", "--dataset", "toy", "--data-dir", str(data)]) == 2
    assert f"toy: missing file {data / 'toy' / 'docs.jsonl'}" in capsys.readouterr().err


def test_an_installed_package_declares_a_dataset_by_entry_point(
    entry_points: list[importlib.metadata.EntryPoint], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _declare(entry_points, "toy", "_toy_dataset:TOY")
    assert "toy" in available_datasets() and "toy" not in registry._REGISTRY._loaded  # listed, not imported
    data = write_toy(tmp_path)
    assert [q.id for q in load_dataset("toy", data).queries] == ["q1", "q2"]
    assert dataset_spec("toy") is TOY
    assert main(["data", "check", "--dataset", "toy", "--data-dir", str(data)]) == 0
    assert "toy dev: ok: 3 corpus objects, 2 queries" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("_toy_dataset:write_toy", InvalidInputError, "is a function, not a DatasetSpec"),
        ("_toy_dataset:NOPE", InvalidInputError, "names nothing"),
        ("no_such_package.data:SPEC", MissingDependencyError, "no_such_package"),
    ],
)
def test_a_broken_entry_point_is_a_typed_error(
    entry_points: list[importlib.metadata.EntryPoint], value: str, error: type[Exception], message: str
) -> None:
    _declare(entry_points, "toy", value)
    with pytest.raises(error, match=message) as e:
        load_dataset("toy", "/anywhere")
    assert "entry point toy" in str(e.value)


def test_an_entry_point_must_carry_its_datasets_name(entry_points: list[importlib.metadata.EntryPoint]) -> None:
    _declare(entry_points, "other", "_toy_dataset:TOY")
    with pytest.raises(InvalidInputError, match="declares the dataset 'toy'; the two names must be the same"):
        dataset_spec("other")


def test_what_a_loader_returns_is_checked(tmp_path: Path) -> None:
    def twice(root: Path, split: str, limit: int | None) -> Dataset:
        return Dataset("twice", split, [Passage(id="a", text="x")], [Query("q", "x?"), Query("q", "y?")], {})

    def nothing(root: Path, split: str, limit: int | None) -> Dataset:
        return None  # type: ignore[return-value]

    try:
        register_dataset(DatasetSpec("twice", twice, "twice/", splits=lambda root: ["dev"]))
        register_dataset(DatasetSpec("nothing", nothing, "nothing/", splits=lambda root: ["dev"]))
        with pytest.raises(DatasetFormatError, match=r"twice: 1 query id\(s\) appear more than once .* \(e\.g\. 'q'\)"):
            load_dataset("twice", tmp_path)
        with pytest.raises(InvalidInputError, match="the loader of dataset 'nothing' returned a NoneType"):
            load_dataset("nothing", tmp_path)
        with pytest.raises(DatasetNotFoundError, match="does not exist"):
            load_dataset("twice", tmp_path / "nowhere")
    finally:
        registry._REGISTRY.pop("twice", None)
        registry._REGISTRY.pop("nothing", None)
