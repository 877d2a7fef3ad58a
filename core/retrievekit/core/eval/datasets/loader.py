"""The entry point: which datasets there are, the files each needs, their splits, and loading one by name."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from retrievekit.core.errors import DatasetFormatError, DatasetNotFoundError, InvalidInputError
from retrievekit.core.eval.datasets.dataset import Dataset
from retrievekit.core.eval.datasets.files import _SEE
from retrievekit.core.eval.datasets.registry import DATASETS, LAYOUTS, dataset_spec
from retrievekit.core.eval.datasets.spec import guarded
from retrievekit.core.types import Passage, Table, TableRow

__all__ = ["DATASETS", "LAYOUTS", "load_dataset", "supported_splits"]


def supported_splits(name: str, data_dir: str | Path) -> list[str]:
    """Splits of ``name`` that the files in ``data_dir`` support.

    Examples:
        >>> supported_splits("musique", "/anywhere")
        ['dev', 'train']
    """
    spec = dataset_spec(name)
    return list(guarded(name, "splits", spec.splits, Path(data_dir)))


def _checked(dataset: Dataset, name: str, root: Path) -> Dataset:
    """What ``name``'s loader returned, refused where ``bench`` would refuse it (two queries or two corpus objects
    sharing an id, an item that is not a corpus object, an empty corpus or one with no text), with the notes
    ``data check`` prints (``files``, ``n_corpus``, ``qrels_missing_from_corpus`` and its examples) filled in where a
    loader left them out."""
    if not isinstance(dataset, Dataset):
        raise InvalidInputError(f"the loader of dataset {name!r} returned a {type(dataset).__name__}, not a Dataset")
    _refuse_repeats(name, root, "query", [q.id for q in dataset.queries])
    _check_corpus(dataset, name, root)
    ids = {o.id for o in dataset.corpus}
    missing = sorted({d for docs in dataset.qrels.values() for d, grade in docs.items() if grade > 0 and d not in ids})
    notes: dict[str, object] = {"files": [], "n_corpus": len(dataset.corpus), "qrels_missing_from_corpus": len(missing)}
    if missing:
        notes["qrels_missing_examples"] = missing[:10]
    return replace(dataset, metadata={**notes, **dataset.metadata})


def _refuse_repeats(name: str, root: Path, what: str, ids: list[str]) -> None:
    """:class:`DatasetFormatError` when an id appears more than once (the count and the first, sorted)."""
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeated:
        raise DatasetFormatError(
            f"{name}: {len(repeated)} {what} id(s) appear more than once under {root} (e.g. {repeated[0]!r}); "
            f"{what} ids must be unique; {_SEE}",
            path=root,
        )


def _check_corpus(dataset: Dataset, name: str, root: Path) -> None:
    """The corpus as every method's index checks it (``check_corpus``), said as the dataset's error."""
    bad = next((o for o in dataset.corpus if not isinstance(o, (Passage, Table, TableRow))), None)
    if bad is not None:
        raise DatasetFormatError(
            f"{name}: the corpus under {root} holds a {type(bad).__name__}, not a Passage, Table or TableRow", path=root
        )
    _refuse_repeats(name, root, "corpus object", [o.id for o in dataset.corpus])
    if not dataset.corpus or not any(o.index_text().strip() for o in dataset.corpus):
        what = "is empty" if not dataset.corpus else f"has no text in any of its {len(dataset.corpus)} objects"
        raise DatasetFormatError(f"{name}: the corpus under {root} {what}: nothing to index; {_SEE}", path=root)


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
        name: one of :data:`DATASETS`, or a dataset registered with
            :func:`~retrievekit.core.eval.datasets.registry.register_dataset` or installed as an entry point.
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
        retrievekit.core.errors.UnknownNameError: unknown dataset 'nope'; choose one of: scifact, ott_qa, obliqa, hotpotqa, musique...
        >>> load_dataset("scifact", "/nonexistent/data")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetNotFoundError: data folder /nonexistent/data does not exist (set --data-dir or RETRIEVEKIT_DATA_DIR; see docs/datasets.md)
    """
    spec = dataset_spec(name)
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
    loaded = guarded(name, "loader", spec.load, root, split, limit)
    return _checked(loaded, name, root).restrict_corpus(corpus_size, seed=seed)
