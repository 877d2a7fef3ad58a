"""The demo's shipped snapshot: retrievekit's documentation as a frozen corpus, with the work every first run of
``retrievekit demo`` would repeat identically already done.

A first run used to spend most of its time before any question was asked: SmolLM2 writing the summaries of LATTICE's
tree and MiniLM embedding the same 762 passages that every user's first run embeds. The snapshot ships that work
with the package, in ``retrievekit/core/data/demo/``:

* ``corpus.jsonl.gz`` -- the documentation passages (docstrings and ``docs/*.md`` sections) it was taken from;
* ``vectors.npz`` -- ``digests`` (hex blake2b of each text) and ``vectors``: every document vector the demo's
  methods compute while building over that corpus, handed to the embedder's memo (:func:`seed_embedder`);
* ``lattice-tree/`` -- the LATTICE tree SmolLM2 writes for it with the demo's settings (a tree folder with its own
  checksummed manifest);
* ``manifest.json`` -- format ``retrievekit.demo_snapshot``, the sha256 of every file above (checked before anything
  is read), the corpus fingerprint, the models, the tree's build options and what each build took.

The demo still builds every index (BM25, Chroma, ARM's catalogue...) and asks every question live; only the
embeddings and the tree come from the snapshot, and the demo says so. ``retrievekit demo --no-snapshot`` builds
everything from the installed package instead. Refresh the snapshot with
``retrievekit demo --write-snapshot core/retrievekit/core/data/demo`` from a checkout.

Examples:
    >>> snap = load_snapshot()
    >>> len(snap.corpus) > 500 and snap.manifest["format"] == "retrievekit.demo_snapshot"
    True
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.store import read_manifest, write_manifest
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.llm.resolve import llm_label
from retrievekit.core.types import DataObject, object_from_dict, object_to_dict

__all__ = ["FORMAT_VERSION", "DemoSnapshot", "build_snapshot", "load_snapshot", "seed_embedder", "snapshot_dir"]

FORMAT = "demo_snapshot"
FORMAT_VERSION = 1
CORPUS = "corpus.jsonl.gz"
VECTORS = "vectors.npz"
TREE = "lattice-tree"


def snapshot_dir() -> Path:
    """The folder of the snapshot shipped with the package.

    Examples:
        >>> snapshot_dir().name
        'demo'
    """
    return Path(__file__).resolve().parent / "data" / "demo"


@dataclass(frozen=True)
class DemoSnapshot:
    """A checked snapshot: its corpus, where its vectors and tree are, and its manifest.

    Examples:
        >>> snap = load_snapshot()
        >>> snap.tree_dir.name, snap.tree_options["summary_max_tokens"]
        ('lattice-tree', 16)
    """

    folder: Path
    corpus: list[DataObject]
    manifest: dict[str, Any] = field(repr=False)

    @property
    def tree_dir(self) -> Path:
        """The LATTICE tree folder (read in place; nothing is written to it)."""
        return self.folder / TREE

    @property
    def tree_options(self) -> dict[str, Any]:
        """The LATTICE options the tree was built with (the demo uses the tree only with the same ones)."""
        return dict(self.manifest.get("tree_options") or {})

    @property
    def build_seconds(self) -> dict[str, float]:
        """What each method's build took when the snapshot was made (on the machine that made it)."""
        return {str(k): float(v) for k, v in (self.manifest.get("build_seconds") or {}).items()}

    def tree_fits(self, llm: str | None, served: bool, options: Mapping[str, Any]) -> bool:
        """Whether the shipped tree is the one the demo would build: the same summary model and tree options.

        Examples:
            >>> snap = load_snapshot()
            >>> snap.tree_fits(None, False, snap.tree_options), snap.tree_fits(None, True, snap.tree_options)
            (True, False)
        """
        if served or llm_label(llm) != self.manifest.get("llm"):
            return False
        return {k: _jsonable(v) for k, v in options.items()} == self.tree_options


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def load_snapshot(folder: str | os.PathLike[str] | None = None) -> DemoSnapshot:
    """Read and check a snapshot folder (default: the shipped one).

    Raises:
        IndexFormatError: the folder is missing, of another format or version, or a file does not match the sha256
            its manifest records.

    Examples:
        >>> load_snapshot("no/such/folder")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: index folder no/such/folder does not exist
    """
    path = Path(folder) if folder is not None else snapshot_dir()
    manifest = read_manifest(path, FORMAT, FORMAT_VERSION)  # checks every file's sha256 first
    try:
        with gzip.open(path / CORPUS, "rt", encoding="utf-8") as f:
            corpus = [object_from_dict(json.loads(line)) for line in f if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as e:
        check_descriptors(f"reading {path / CORPUS}", e, by_count=False)  # out of file descriptors: not a corrupt file
        raise IndexFormatError(f"{path / CORPUS} is corrupt: {e}") from e
    if len(corpus) != manifest.get("passages"):
        raise IndexFormatError(
            f"{path / CORPUS} holds {len(corpus)} passages; the manifest counts {manifest.get('passages')}"
        )
    return DemoSnapshot(folder=path, corpus=corpus, manifest=manifest)


def seed_embedder(snapshot: DemoSnapshot, embedder: Any) -> int:
    """Hand the snapshot's vectors to ``embedder``'s memo when it is the model that computed them; returns how many.

    Examples:
        >>> class Other:
        ...     name = "another-model"
        >>> seed_embedder(load_snapshot(), Other())
        0
    """
    if getattr(embedder, "name", None) != snapshot.manifest.get("embedder") or not hasattr(embedder, "remember"):
        return 0
    with np.load(snapshot.folder / VECTORS, allow_pickle=False) as data:
        digests, vectors = data["digests"], data["vectors"]
    return int(embedder.remember([bytes.fromhex(str(d)) for d in digests], vectors))


def build_snapshot(
    out: str | os.PathLike[str],
    corpus: Sequence[DataObject],
    *,
    methods: Sequence[str],
    options: Mapping[str, Mapping[str, Any]],
    llm: str = DEFAULT_MODEL,
) -> Path:
    """Build every method of ``methods`` over ``corpus`` (as the demo does), then write the snapshot to ``out``
    atomically: the corpus, the tree LATTICE built, and every document vector the embedder computed.

    Examples:
        >>> build_snapshot("/tmp/snap", [], methods=[], options={})  # doctest: +SKIP
    """
    from retrievekit.core.index.baselines import corpus_fingerprint
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.index.store import atomic_folder
    from retrievekit.core.registry import MethodContext, build_method

    embedder = MiniLMEmbedder.default()
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as work:
        for method in methods:  # 1. build as the demo does (the embedder's memo keeps every document vector)
            ctx = MethodContext(list(corpus), work_dir=Path(work), llm=llm, options=dict(options.get(method, {})))
            t0 = time.perf_counter()
            build_method(method, ctx)
            seconds[method] = round(time.perf_counter() - t0, 1)
            print(f"{method}: built in {seconds[method]} s", flush=True)
        trees = sorted(Path(work).glob("lattice-*"))
        trees = [t for t in trees if not t.name.endswith(".build")]
        if len(trees) != 1:
            raise IndexFormatError(f"expected one LATTICE tree in the build folder, found {[t.name for t in trees]}")
        digests, vectors = embedder.remembered()
        with atomic_folder(Path(out)) as tmp:  # 2. write the snapshot
            with gzip.GzipFile(tmp / CORPUS, "wb", mtime=0) as gz:  # mtime 0: the same corpus gives the same bytes
                for obj in corpus:
                    gz.write((json.dumps(object_to_dict(obj), ensure_ascii=False, sort_keys=True) + "\n").encode())
            with open(tmp / VECTORS, "wb") as f:
                np.savez(f, digests=np.asarray([d.hex() for d in digests], dtype=str), vectors=vectors)
            shutil.copytree(trees[0], tmp / TREE)
            write_manifest(
                tmp,
                FORMAT,
                FORMAT_VERSION,
                {
                    "passages": len(corpus),
                    "corpus_fingerprint": corpus_fingerprint(corpus),
                    "llm": llm,
                    "embedder": embedder.name,
                    "vectors": len(digests),
                    "tree_options": {k: _jsonable(v) for k, v in options.get("lattice", {}).items()},
                    "build_seconds": seconds,
                    "built_on": f"{os.cpu_count()} CPU cores",
                },
            )
    return Path(out)
