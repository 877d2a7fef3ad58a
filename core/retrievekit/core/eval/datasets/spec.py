"""What declares a dataset: its loader, its splits, its layout and how to tell it is in a data folder
(:class:`DatasetSpec`), in one place per dataset."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from retrievekit.core.errors import DatasetError, RetrieveKitError
from retrievekit.core.eval.datasets.dataset import Dataset

__all__ = ["DatasetLoader", "DatasetSpec", "guarded"]

T = TypeVar("T")

DatasetLoader = Callable[[Path, str, int | None], Dataset]
"""``load(root, split, limit) -> Dataset``: reads the dataset's files under the data folder ``root`` (already checked
to be a folder), keeps the first ``limit`` queries (``None``: all) with their qrels, and raises
:class:`~retrievekit.core.errors.DatasetNotFoundError` / :class:`~retrievekit.core.errors.DatasetFormatError` naming
the file for a missing or malformed one, :class:`~retrievekit.core.errors.InvalidInputError` for an unknown split."""


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset, declared once: what ``load_dataset``, ``retrievekit bench`` and ``retrievekit data check`` need.

    Attributes:
        name: the name users pass (``--dataset NAME``).
        load: the loader (:data:`DatasetLoader`).
        layout: the files it needs, relative to the data folder, in one line (quoted by every missing-file error).
        splits: the split names the files under a data folder support (``supported_splits``); a dataset whose
            splits do not depend on the files returns the same list for any folder.
        checked_splits: the splits ``retrievekit data check`` reads when none is asked for, one per distinct set of
            files present; ``None``: :attr:`splits`, or ``["dev"]`` when that is empty.
        present: whether a data folder holds any of the dataset's files (``data check`` skips absent datasets);
            ``None``: whether ``<data folder>/<name>/`` exists.

    Examples:
        >>> from retrievekit.core.eval.datasets import Dataset
        >>> def load(root, split, limit):
        ...     return Dataset("toy", split, [], [], {})
        >>> spec = DatasetSpec("toy", load, "toy/questions.jsonl", splits=lambda root: ["dev"])
        >>> spec.is_present(Path("/nonexistent")), spec.default_splits(Path("/nonexistent"))
        (False, ['dev'])
    """

    name: str
    load: DatasetLoader
    layout: str
    splits: Callable[[Path], Sequence[str]]
    checked_splits: Callable[[Path], Sequence[str]] | None = None
    present: Callable[[Path], bool] | None = None

    def is_present(self, root: Path) -> bool:
        """Whether the data folder ``root`` holds the dataset (:attr:`present`, else its own folder exists).

        Examples:
            >>> DatasetSpec("toy", print, "toy/x", splits=lambda root: []).is_present(Path("/"))
            False
        """
        if self.present is None:
            return (root / self.name).is_dir()
        return bool(guarded(self.name, "present", self.present, root))

    def default_splits(self, root: Path) -> list[str]:
        """The splits ``retrievekit data check`` reads in ``root`` when none is asked for (``dev`` when none is found).

        Examples:
            >>> DatasetSpec("toy", print, "toy/x", splits=lambda root: []).default_splits(Path("/"))
            ['dev']
        """
        if self.checked_splits is not None:
            found = guarded(self.name, "checked_splits", self.checked_splits, root)
        else:
            found = guarded(self.name, "splits", self.splits, root)
        return list(found) or ["dev"]


def guarded(name: str, what: str, call: Callable[..., T], *args: object) -> T:
    """``call(*args)``, one of dataset ``name``'s own callables (its ``what``: loader, splits, ...): a
    :class:`~retrievekit.core.errors.RetrieveKitError` it raises goes through as it is, any other exception becomes a
    :class:`~retrievekit.core.errors.DatasetError` naming the dataset and the callable (the original chained), so a
    registered or installed dataset's bug is never a raw traceback in ``bench`` or ``data check``.

    Examples:
        >>> guarded("toy", "splits", lambda root: ["dev"], Path("/"))
        ['dev']
        >>> guarded("toy", "loader", lambda root: {}["x"], Path("/d"))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.DatasetError: dataset 'toy': its loader failed on /d (KeyError: 'x'); ...
    """
    try:
        return call(*args)
    except RetrieveKitError:
        raise
    except Exception as e:
        where = next((a for a in args if isinstance(a, Path)), None)
        on = f" on {where}" if where is not None else ""
        raise DatasetError(
            f"dataset {name!r}: its {what} failed{on} ({type(e).__name__}: {str(e)[:300]}); the code that declares "
            "the dataset raised an untyped error (check its files, or report it to its package)",
            path=where,
        ) from e
