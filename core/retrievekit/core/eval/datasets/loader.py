"""The entry point: which datasets there are, the files each needs, their splits, and loading one by name."""

from __future__ import annotations

from pathlib import Path

from retrievekit.core.errors import DatasetNotFoundError, InvalidInputError
from retrievekit.core.eval.datasets.dataset import Dataset
from retrievekit.core.eval.datasets.files import _SEE
from retrievekit.core.eval.datasets.multihop import _HOTPOT_SPLITS, _MUSIQUE_SPLITS, _load_hotpotqa, _load_musique
from retrievekit.core.eval.datasets.obliqa import _load_obliqa, _obliqa_splits
from retrievekit.core.eval.datasets.ott_qa import _load_ott_qa, _ott_qa_splits
from retrievekit.core.eval.datasets.scifact import _load_scifact, _scifact_splits

DATASETS: tuple[str, ...] = ("scifact", "ott_qa", "obliqa", "hotpotqa", "musique")
"""Names :func:`load_dataset` accepts."""

__all__ = ["DATASETS", "load_dataset", "supported_splits"]


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
        return _scifact_splits(root / "scifact")
    if name == "ott_qa":
        return _ott_qa_splits(root / "ott_qa")
    if name == "obliqa":
        return _obliqa_splits(root / "obliqa")
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
