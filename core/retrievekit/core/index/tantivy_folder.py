"""The folder of the tantivy BM25 engine: ``manifest.json`` (the one file that says which generation and commit the
folder is at, and what it holds) beside ``gen-<n>/`` (tantivy's index).

The manifest (``retrievekit.bm25`` format version 2, engine ``tantivy``) records the versions, the analyzer, the
generation, the commit's opstamp, ``n_objects``, the config, the corpus record, ``tokens`` (the live documents'
total length, which exact scores after a delete read; absent or null where unknown) and its own
``manifest_check``.

Examples:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> write_manifest(d, {}, 1, 7, {"a": "0" * 64}, tokens=12)
    >>> m = read_manifest(d); m["generation"], m["opstamp"], m["n_objects"], m["tokens"], is_engine_folder(d)
    (1, 7, 1, 12, True)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.checksums import MANIFEST_CHECK, manifest_check
from retrievekit.core.index.corpus_record import RECORD_KEY, record_of_digests
from retrievekit.core.index.folder_swap import restore_interrupted_swap
from retrievekit.core.index.store import MANIFEST, read_versioned_json
from retrievekit.core.storage import atomic_write_text

__all__ = [
    "ANALYZER",
    "ENGINE",
    "GENERATION",
    "gen_name",
    "is_engine_folder",
    "meta_opstamp",
    "read_manifest",
    "read_meta",
    "settled",
    "stat_of",
    "sweep",
    "write_manifest",
]

ENGINE = "tantivy"
FORMAT = "bm25"
FORMAT_VERSION = 2
ANALYZER = r"rk_en: \w\w+|lower|stop:lucene33|snowball:english"
"""The analyzer recorded in the manifest: bm25s' English analyzer, run by tantivy."""
GENERATION = re.compile(r"gen-(\d{6})")
"""The name of a generation's folder."""


def gen_name(gen: int) -> str:
    """The folder name of generation ``gen``.

    Examples:
        >>> gen_name(3), bool(GENERATION.fullmatch(gen_name(3)))
        ('gen-000003', True)
    """
    return f"gen-{gen:06d}"


def read_meta(path: Path) -> dict[str, Any]:
    """Tantivy's ``meta.json`` in ``path``: its last commit's ``opstamp`` (an int) and ``segments`` (a list);
    :class:`IndexFormatError` if it is missing or damaged.

    Examples:
        >>> import tempfile, pathlib
        >>> read_meta(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...: tantivy's meta.json is missing or corrupt (...); rebuild the index
    """
    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        meta["opstamp"], meta["segments"] = int(meta["opstamp"]), list(meta["segments"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"{path}: tantivy's meta.json is missing or corrupt ({e}); rebuild the index") from e
    return dict(meta)


def meta_opstamp(path: Path) -> int:
    """The opstamp of the last commit in the tantivy index at ``path`` (:func:`read_meta`).

    Examples:
        >>> import tempfile, pathlib
        >>> meta_opstamp(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...: tantivy's meta.json is missing or corrupt (...); rebuild the index
    """
    return int(read_meta(path)["opstamp"])


def stat_of(path: Path) -> tuple[int, int, int] | None:
    """``path``'s inode, modification time and size (None if it is missing): what tells a rewrite apart.

    Examples:
        >>> import tempfile, pathlib
        >>> stat_of(pathlib.Path(tempfile.mkdtemp()) / "none") is None
        True
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def is_engine_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a tantivy BM25 index (its manifest says format version 2, engine tantivy).

    Examples:
        >>> import tempfile
        >>> is_engine_folder(tempfile.mkdtemp())
        False
    """
    restore_interrupted_swap(folder)
    try:
        data = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format_version") == FORMAT_VERSION and data.get("engine") == ENGINE


def read_manifest(folder: Path) -> dict[str, Any]:
    """The checked manifest of the tantivy folder ``folder`` (:class:`IndexFormatError` if it is not one, damaged
    or incomplete).

    Examples:
        >>> import tempfile, pathlib
        >>> read_manifest(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
    """
    restore_interrupted_swap(folder)
    if not folder.is_dir():  # as the other folders' readers say it (index.store.read_manifest)
        raise IndexFormatError(f"index folder {folder} does not exist")
    if not (folder / MANIFEST).is_file():
        raise IndexFormatError(f"{folder} is not a retrievekit index folder (no {MANIFEST})")
    data = read_versioned_json(
        folder / MANIFEST, want=f"retrievekit.{FORMAT}", max_version=FORMAT_VERSION, kind="index"
    )
    if data.get("engine") != ENGINE or MANIFEST_CHECK not in data:
        raise IndexFormatError(f"{folder}: the manifest names no tantivy BM25 index (engine {data.get('engine')!r})")
    try:
        int(data["generation"]), int(data["opstamp"]), dict(data["config"])
        tokens = data.get("tokens")
        data["tokens"] = None if tokens is None else int(tokens)
    except (KeyError, TypeError, ValueError) as e:
        raise IndexFormatError(f"{folder}: the manifest of the tantivy BM25 index is incomplete ({e})") from e
    return data


def settled(folder: Path, reader: Callable[[int], Any]) -> tuple[Any, dict[str, Any], Any, bool]:
    """``folder``'s manifest (:func:`read_manifest`) and a reader of the state it names: ``reader(generation)``
    reloads (or opens) that generation's index and returns it. Tantivy's commit is compared with the manifest after
    the reload, so the reader read the manifest's commit, or one past it: then both are read again, for up to 0.2 s
    (a writer rewrites its manifest right after its commit, unless it was killed between). Returns the manifest
    file's :func:`stat_of`, the manifest, the reader and whether it holds a commit past the manifest; a generation
    that a compaction removed meanwhile is read again (three tries).

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> write_manifest(d, {}, 1, 0, 0, {"n": 0}); (d / "gen-000001").mkdir()
        >>> _ = (d / "gen-000001" / "meta.json").write_text('{"opstamp": 0, "segments": []}')
        >>> settled(d, lambda gen: f"the index of generation {gen}")[2:]
        ('the index of generation 1', False)
    """
    failures, tries = 0, 0
    while True:
        try:
            stat, manifest = stat_of(folder / MANIFEST), read_manifest(folder)
            gen = int(manifest["generation"])
            index = reader(gen)
            ahead = meta_opstamp(folder / gen_name(gen)) != int(manifest["opstamp"])  # checked after the reload
        except (IndexFormatError, ValueError):
            failures += 1
            if failures == 3:
                raise
            continue
        tries += 1
        if not ahead or tries == 20:
            return stat, manifest, index, ahead
        time.sleep(0.01)


def write_manifest(
    folder: Path,
    config: dict[str, Any],
    gen: int,
    opstamp: int,
    held: dict[str, str] | int,
    record: Any = None,
    *,
    tokens: int | None = None,
) -> None:
    """Write the manifest atomically. ``held``: the live objects' digests (their count and, when ``record`` is not
    given, the corpus record counted from them), or their count with the ``record``; ``tokens``: the live
    documents' total length, where known.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> write_manifest(d, {}, 2, 9, 0, {"n": 0})
        >>> read_manifest(d)["tokens"] is None
        True
    """
    from retrievekit.core import __version__

    data: dict[str, Any] = {
        "format": f"retrievekit.{FORMAT}",
        "format_version": FORMAT_VERSION,
        "retrievekit_version": __version__,
        "engine": ENGINE,
        "engine_version": _tantivy_version(),
        "analyzer": ANALYZER,
        "generation": gen,
        "opstamp": opstamp,
        "n_objects": held if isinstance(held, int) else len(held),
        "config": config,
        "tokens": tokens,
        RECORD_KEY: record if record is not None or isinstance(held, int) else record_of_digests(held),
    }
    data[MANIFEST_CHECK] = manifest_check(data)
    atomic_write_text(folder / MANIFEST, json.dumps(data, indent=2, sort_keys=True))


def sweep(folder: Path, generation: int) -> None:
    """Remove from ``folder`` the generations other than ``generation`` (the one its manifest names: the others are
    what a compaction killed before or after its swap left) and the temp files of manifest writes that were killed.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> (d / "gen-000001").mkdir(); (d / "gen-000002").mkdir(); _ = (d / ".manifest.json.x.tmp").write_text("")
        >>> sweep(d, 2); sorted(p.name for p in d.iterdir())
        ['gen-000002']
    """
    for p in folder.iterdir():
        m = GENERATION.fullmatch(p.name)
        if m and int(m.group(1)) != generation:
            shutil.rmtree(p, ignore_errors=True)
        elif p.name.startswith(f".{MANIFEST}.") and p.name.endswith(".tmp"):
            p.unlink(missing_ok=True)


def _tantivy_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tantivy")
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"
