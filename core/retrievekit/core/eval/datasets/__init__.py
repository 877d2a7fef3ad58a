"""Benchmark loaders: SciFact, OTT-QA, ObliQA, HotpotQA and MuSiQue from one data folder.

:func:`load_dataset` reads a folder with one sub-folder per dataset and fixed file names (the layout, the file
formats and where to get each dataset: ``docs/datasets.md``), so other parts with the same names load unchanged.
Nothing here hard-codes ids or counts. A missing file raises :class:`DatasetNotFoundError`, a malformed one
:class:`DatasetFormatError`; both name the file (and the line or list item) and are checked before any work
(``retrievekit data check`` runs the same checks and prints what it found). Each dataset is one
:class:`DatasetSpec` in the registry (:mod:`retrievekit.core.eval.datasets.registry`); a new one is added as
``docs/adding-a-dataset.md`` describes.

=============  ============================================================  =========================================
dataset        files (under ``DATA_DIR/<folder>/``)                          splits
=============  ============================================================  =========================================
``scifact``    ``corpus.jsonl.gz`` (or ``.jsonl``), ``queries.jsonl``,        every ``qrels/*.tsv`` (``dev``, ``train``)
               ``qrels/{split}.tsv``
``ott_qa``     ``tables_*.jsonl.gz``, ``passages_linked_from_*.jsonl.gz``,    every ``{split}.traced.json`` /
               ``{split}.traced.json`` or ``{split}.json``                    ``{split}.json`` (``dev``)
``obliqa``     ``passages.jsonl.gz``, ``documents_meta.json``,                every ``qrels_{split}.tsv`` (``dev``)
               ``{split}.json.gz``, ``qrels_{split}.tsv``
``hotpotqa``   ``multihop_qa/hotpotqa_*``                                     ``dev`` (= ``train``, ``distractor``),
                                                                             ``fullwiki``, ``dpr``, ``hard``
``musique``    ``multihop_qa/musique_train100_*``                             ``dev`` (= ``train``)
=============  ============================================================  =========================================

Examples:
    >>> import json, pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())  # a one-document SciFact in the layout above
    >>> (root / "scifact" / "qrels").mkdir(parents=True)
    >>> doc = {"_id": "d1", "title": "Aspirin", "text": "Aspirin thins the blood."}
    >>> _ = (root / "scifact" / "corpus.jsonl").write_text(json.dumps(doc) + "\\n")
    >>> _ = (root / "scifact" / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "What thins blood?"}))
    >>> _ = (root / "scifact" / "qrels" / "dev.tsv").write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\n")
    >>> ds = load_dataset("scifact", root, split="dev")
    >>> ds.name, len(ds.corpus), ds.qrels
    ('scifact', 1, {'q1': {'d1': 1}})
"""

from retrievekit.core.errors import DatasetError, DatasetFormatError, DatasetNotFoundError
from retrievekit.core.eval.datasets.dataset import Dataset, Query, restrict_objects, stable_id
from retrievekit.core.eval.datasets.loader import DATASETS, LAYOUTS, load_dataset, supported_splits
from retrievekit.core.eval.datasets.obliqa import rebuild_documents
from retrievekit.core.eval.datasets.registry import (
    DATASET_ENTRY_POINT_GROUP,
    available_datasets,
    dataset_spec,
    register_dataset,
)
from retrievekit.core.eval.datasets.spec import DatasetLoader, DatasetSpec
from retrievekit.core.types import Passage  # noqa: F401  (the examples use it)

__all__ = [
    "DATASETS",
    "DATASET_ENTRY_POINT_GROUP",
    "LAYOUTS",
    "Dataset",
    "DatasetLoader",
    "DatasetSpec",
    "Query",
    "DatasetError",
    "DatasetFormatError",
    "DatasetNotFoundError",
    "available_datasets",
    "dataset_spec",
    "restrict_objects",
    "load_dataset",
    "register_dataset",
    "rebuild_documents",
    "stable_id",
    "supported_splits",
]

# The public home of these names stays this module (docs, the demo corpus's ids, pickles), as before the split.
for _public in (Dataset, Query, restrict_objects, stable_id, load_dataset, supported_splits, rebuild_documents):
    _public.__module__ = __name__
del _public
