"""The entry point: which datasets there are, the files each needs, their splits, and loading one by name."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from retrievekit.core.errors import DatasetFormatError, DatasetNotFoundError, InvalidInputError
from retrievekit.core.eval.datasets.dataset import Dataset
from retrievekit.core.eval.datasets.files import _SEE
from retrievekit.core.eval.datasets.registry import DATASETS, LAYOUTS, dataset_spec

__all__ = ["DATASETS", "LAYOUTS", "load_dataset", "supported_splits"]


def supported_splits(name: str, data_dir: str | Path) -> list[str]:
    """Splits of ``name`` that the files in ``data_dir`` support.

    Examples:
        >>> supported_splits("musique", "/anywhere")
        ['dev', 'train']
    """
    return list(dataset_spec(name).splits(Path(data_dir)))


def _checked(dataset: Dataset, name: str, root: Path) -> Dataset:
    """What ``name``'s loader returned, refused when two queries share an id, with the notes ``data check`` prints
    (``files``, ``n_corpus``, ``qrels_missing_from_corpus``) filled in where a loader left them out."""
    if not isinstance(dataset, Dataset):
        raise InvalidInputError(f"the loader of dataset {name!r} returned a {type(dataset).__name__}, not a Dataset")
    repeated = sorted(qid for qid, n in Counter(q.id for q in dataset.queries).items() if n > 1)
    if repeated:
        raise DatasetFormatError(
            f"{name}: {len(repeated)} query id(s) appear more than once under {root} (e.g. {repeated[0]!r}); "
            f"query ids must be unique; {_SEE}",
            path=root,
        )
    if {"files", "n_corpus", "qrels_missing_from_corpus"} <= set(dataset.metadata):
        return dataset
    ids = {o.id for o in dataset.corpus}
    missing = {d for docs in dataset.qrels.values() for d, grade in docs.items() if grade > 0 and d not in ids}
    notes = {"files": [], "n_corpus": len(dataset.corpus), "qrels_missing_from_corpus": len(missing)}
    return replace(dataset, metadata={**notes, **dataset.metadata})


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
        retrievekit.core.errors.InvalidInputError: unknown dataset 'nope'; choose one of: scifact, ott_qa, obliqa, hotpotqa, musique...
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
    return _checked(spec.load(root, split, limit), name, root).restrict_corpus(corpus_size, seed=seed)
