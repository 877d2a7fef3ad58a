"""The dataset registry that :func:`~retrievekit.core.eval.datasets.load_dataset`, ``retrievekit bench`` and
``retrievekit data check`` read: :func:`register_dataset`, :func:`available_datasets` and :func:`dataset_spec`.

A dataset is one :class:`~retrievekit.core.eval.datasets.spec.DatasetSpec` (its loader, splits and layout). The
built-in ones are listed in ``_BUILTIN``; code registers more at run time with :func:`register_dataset`; installed
packages declare theirs as entry points of the group ``retrievekit.datasets`` (``name = "module:SPEC"``, the
standard plugin mechanism of ``importlib.metadata``), imported only when a dataset of that name is loaded.

Examples:
    >>> available_datasets()[:5]
    ['scifact', 'ott_qa', 'obliqa', 'hotpotqa', 'musique']
    >>> dataset_spec("musique").layout.startswith("multihop_qa/")
    True
"""

from __future__ import annotations

import importlib.metadata

from retrievekit.core.errors import DatasetError, InvalidInputError, UnknownNameError
from retrievekit.core.eval.datasets.multihop import HOTPOTQA, MUSIQUE
from retrievekit.core.eval.datasets.obliqa import OBLIQA
from retrievekit.core.eval.datasets.ott_qa import OTT_QA
from retrievekit.core.eval.datasets.scifact import SCIFACT
from retrievekit.core.eval.datasets.spec import DatasetSpec
from retrievekit.core.plugins import Registry, spec_check

__all__ = [
    "DATASETS",
    "DATASET_ENTRY_POINT_GROUP",
    "LAYOUTS",
    "available_datasets",
    "dataset_spec",
    "register_dataset",
]

DATASET_ENTRY_POINT_GROUP = "retrievekit.datasets"
"""Entry-point group of datasets in installed packages (``[project.entry-points."retrievekit.datasets"]``): each
entry names a :class:`~retrievekit.core.eval.datasets.spec.DatasetSpec` object, ``name = "module:SPEC"``."""

_BUILTIN: tuple[DatasetSpec, ...] = (SCIFACT, OTT_QA, OBLIQA, HOTPOTQA, MUSIQUE)

DATASETS: tuple[str, ...] = tuple(spec.name for spec in _BUILTIN)
"""The built-in datasets' names (:func:`available_datasets` adds the registered and installed ones)."""

LAYOUTS: dict[str, str] = {spec.name: spec.layout for spec in _BUILTIN}
"""The files each built-in dataset needs, relative to the data folder (the details: ``docs/datasets.md``)."""


_REGISTRY: Registry[DatasetSpec] = Registry(
    "dataset",
    DATASET_ENTRY_POINT_GROUP,
    unknown="unknown {kind} {name!r}; choose one of: {known}",
    check=spec_check(DatasetSpec, DATASET_ENTRY_POINT_GROUP),
    broken=DatasetError,
)
"""The datasets (a :class:`~retrievekit.core.plugins.Registry` of :class:`DatasetSpec`): the built-in ones, those
registered with :func:`register_dataset`, and the entry points of :data:`DATASET_ENTRY_POINT_GROUP`."""
for _spec in _BUILTIN:
    _REGISTRY.register(_spec.name, _spec)


def _plugin_datasets() -> dict[str, importlib.metadata.EntryPoint]:
    """Datasets that installed packages declare as entry points (read from their metadata; nothing is imported)."""
    return _REGISTRY.entry_points()


def register_dataset(spec: DatasetSpec) -> None:
    """Make ``spec`` loadable by its name (a later registration of the same name replaces it; a built-in is kept).

    Examples:
        >>> from pathlib import Path
        >>> from retrievekit.core.eval.datasets import Dataset
        >>> register_dataset(DatasetSpec("toy", lambda root, split, limit: Dataset("toy", split, [], [], {}),
        ...                              "toy/", splits=lambda root: ["dev"]))
        >>> "toy" in available_datasets()
        True
        >>> _ = _REGISTRY.pop("toy")  # leave the registry as the example found it
        >>> register_dataset(DatasetSpec("scifact", print, "x", splits=lambda root: []))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: 'scifact' is a built-in dataset; register yours under another name
    """
    if not isinstance(spec, DatasetSpec):
        raise InvalidInputError(f"register_dataset takes a DatasetSpec, got {type(spec).__name__}")
    if any(spec.name == builtin.name for builtin in _BUILTIN):
        raise InvalidInputError(f"{spec.name!r} is a built-in dataset; register yours under another name")
    _REGISTRY.register(spec.name, spec)


def available_datasets() -> list[str]:
    """Names of every dataset: the built-in ones in their order, then those registered with
    :func:`register_dataset` and those declared as entry points of :data:`DATASET_ENTRY_POINT_GROUP` by an installed
    package (listed without importing it), sorted.

    Examples:
        >>> available_datasets()[0]
        'scifact'
    """
    builtin = [spec.name for spec in _BUILTIN]
    return builtin + [name for name in _REGISTRY.names() if name not in builtin]


def dataset_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` registered as ``name`` (an entry point is imported on first use).

    Examples:
        >>> dataset_spec("scifact").name
        'scifact'
        >>> dataset_spec("nope")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.UnknownNameError: unknown dataset 'nope'; choose one of: scifact, ott_qa, obliqa, hotpotqa, musique...
    """
    if name not in _REGISTRY:  # listed with the built-in ones first
        known = available_datasets()
        message = f"unknown dataset {name!r}; choose one of: {', '.join(known)}"
        raise UnknownNameError(message, kind="dataset", name=str(name), known=known)
    return _REGISTRY.get(name)
