"""Content checksums for index folders: recorded in the manifest at write time, verified before anything reads.

A bit flip in a stored array gives wrong scores on every query; one in a file a native library reads (Chroma's
HNSW segment, its SQLite database) can abort or crash the process, which no ``except`` can catch. So every index
folder records the sha256 of each stored file in its manifest (``"checksums": {relative path: hex}``), and
:func:`verify_checksums` runs before the files are parsed: a missing, truncated or altered file raises
:class:`~retrievekit.core.errors.IndexFormatError` naming it.

A SQLite database is a special case: the engine that owns it writes bookkeeping rows on every open (Chroma records
each writer in ``acquire_write``), so its bytes change while its content does not. :func:`sqlite_digest` hashes the
content instead: the rows of every ordinary table except those bookkeeping tables, read through Python's own
``sqlite3`` in read-only mode after ``PRAGMA integrity_check`` (which reports a damaged page as an error, where a native
reader may abort).

Examples:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.npy").write_bytes(b"abc")
    >>> sums = folder_checksums(d)
    >>> verify_checksums(d, sums)
    >>> _ = (d / "a.npy").write_bytes(b"abd")
    >>> verify_checksums(d, sums)
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.IndexFormatError: ... is damaged: a.npy does not match its recorded checksum ...
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import IndexFormatError, UnverifiedIndexWarning
from retrievekit.core.storage import file_sha256

__all__ = [
    "CHECKSUMS_SINCE",
    "MANIFEST_CHECK",
    "folder_checksums",
    "manifest_check",
    "refuse_stripped_seal",
    "sqlite_digest",
    "verify_checksums",
    "verify_sealed",
]

SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal")
"""SQLite's transient side files: not content, never checksummed."""
VOLATILE_TABLES = frozenset({"acquire_write", "maintenance_log"})
"""Chroma's bookkeeping tables, written on every open: left out of :func:`sqlite_digest`."""


CHECKSUMS_SINCE = (0, 1, 0)
"""The first retrievekit version whose manifests record checksums: one of this version or later without them had
them removed (:func:`refuse_stripped_seal`)."""

MANIFEST_CHECK = "manifest_check"
"""The manifest field holding :func:`manifest_check` of the rest of the manifest."""


def manifest_check(data: Mapping[str, object]) -> str:
    """The sha256 of a manifest's content (every field but :data:`MANIFEST_CHECK`, in canonical JSON): the manifest
    covers itself, so a changed byte in a field a load reads (a judge's ``platt_a``) is damage like any other file's.

    Examples:
        >>> manifest_check({"a": 1, "b": [2]}) == manifest_check({"b": [2], "a": 1, MANIFEST_CHECK: "x"})
        True
    """
    body = {k: v for k, v in data.items() if k != MANIFEST_CHECK}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def refuse_stripped_seal(folder: str | os.PathLike[str], data: Mapping[str, object]) -> str:
    """For a manifest without ``"checksums"``: the version that wrote it (for the caller's warning) when that
    version predates checksums (:data:`CHECKSUMS_SINCE`); otherwise :class:`IndexFormatError`. A manifest that names
    a version which records checksums, names none, or names one that does not parse, had its checksums removed: an
    edit that would read unverified files with one warning.

    Examples:
        >>> refuse_stripped_seal("/idx", {"retrievekit_version": "0.0.9"})
        '0.0.9'
        >>> refuse_stripped_seal("/idx", {"retrievekit_version": "0.1.0"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: /idx is damaged: its manifest names retrievekit 0.1.0, which records checksums, but carries none (removed since it was written); rebuild it
    """
    version = data.get("retrievekit_version")
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version) if isinstance(version, str) else None
    if found is not None and tuple(int(n) for n in found.groups()) < CHECKSUMS_SINCE:
        return str(version)
    named = (
        f"names retrievekit {version}, which records checksums,"
        if found is not None
        else f"names no version before checksums ({version!r}),"
    )
    raise IndexFormatError(
        f"{folder} is damaged: its manifest {named} but carries none (removed since it was written); rebuild it"
    )


def verify_sealed(
    folder: str | os.PathLike[str],
    data: Mapping[str, Any],
    *,
    exclude: Iterable[str] = ("manifest.json",),
    written: str = "written",
    redo: str = "save or build it again",
    stacklevel: int = 2,
) -> None:
    """Check ``folder``'s files against the checksums its manifest ``data`` records (:func:`verify_checksums`); a
    manifest that records none is refused when its version records them (:func:`refuse_stripped_seal`), else read
    with one :class:`~retrievekit.core.errors.UnverifiedIndexWarning` that says how to add them (``redo``).
    ``stacklevel`` is the caller's, as for :func:`warnings.warn`.

    Examples:
        >>> import tempfile, warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     verify_sealed("/idx", {"retrievekit_version": "0.0.9"})
        >>> str(caught[0].message)
        '/idx was written without checksums (retrievekit 0.0.9): its files cannot be verified; save or build it again to add them'
        >>> verify_sealed(tempfile.mkdtemp(), {"checksums": {}})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...
    """
    if "checksums" in data:
        verify_checksums(folder, data["checksums"], exclude=exclude)
        return
    version = refuse_stripped_seal(folder, data)  # a version that records them: they were removed
    warnings.warn(
        f"{folder} was {written} without checksums (retrievekit {version}): its files cannot be verified; "
        f"{redo} to add them",
        UnverifiedIndexWarning,
        stacklevel=stacklevel + 1,
    )


def folder_checksums(folder: str | os.PathLike[str], *, exclude: Iterable[str] = ("manifest.json",)) -> dict[str, str]:
    """The sha256 of every file under ``folder`` (recursively), keyed by its ``/``-separated relative path.

    ``exclude`` lists relative paths left out (the manifest that will hold the result, a database hashed by
    content); SQLite's transient ``-wal``/``-shm``/``-journal`` files are always left out.

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> (d / "sub").mkdir(); _ = (d / "sub" / "x").write_text("x"); _ = (d / "manifest.json").write_text("{}")
        >>> list(folder_checksums(d))
        ['sub/x']
    """
    root, skip = Path(folder), set(exclude)
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel not in skip and not rel.endswith(SKIPPED_SUFFIXES):
            out[rel] = file_sha256(p)
    return out


def verify_checksums(
    folder: str | os.PathLike[str], recorded: Mapping[str, str], *, exclude: Iterable[str] = ("manifest.json",)
) -> None:
    """Check every file ``recorded`` lists against its checksum, and that the list covers the folder;
    :class:`IndexFormatError` naming the first file that is missing, differs, or is not covered.

    An empty list is damage (a folder is never written empty), and so is a file the list leaves out (a partial list:
    what a load would read unchecked). Not covered by design: ``exclude`` (the manifest, a database hashed by
    content), SQLite's transient side files, and documentation (``*.md``), which no load reads.

    Examples:
        >>> import tempfile
        >>> verify_checksums(tempfile.mkdtemp(), {"objects.jsonl": "00"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is damaged: objects.jsonl is missing ...
        >>> verify_checksums(tempfile.mkdtemp(), {})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is damaged: its manifest's checksum list is empty; rebuild it
    """
    root = Path(folder)
    if not isinstance(recorded, Mapping):
        raise IndexFormatError(f"{root}: the manifest's checksums are corrupt (not a mapping)")
    if not recorded:
        raise IndexFormatError(f"{root} is damaged: its manifest's checksum list is empty; rebuild it")
    for rel, want in sorted(recorded.items()):
        path = root / rel
        if not path.is_file():
            raise IndexFormatError(f"{root} is damaged: {rel} is missing (the index was written with it); rebuild it")
        if file_sha256(path) != want:
            raise IndexFormatError(
                f"{root} is damaged: {rel} does not match its recorded checksum (changed or corrupted on disk "
                "since it was written); rebuild the index"
            )
    skip = set(exclude)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel in recorded or rel in skip or rel.endswith((*SKIPPED_SUFFIXES, ".md")) or not p.is_file():
            continue
        raise IndexFormatError(
            f"{root} is damaged: {rel} is not covered by its manifest's checksums (a partial list); rebuild it"
        )


def sqlite_digest(path: str | os.PathLike[str], *, volatile: Iterable[str] = VOLATILE_TABLES) -> str:
    """A sha256 of a SQLite database's content: every row of every ordinary table but ``volatile``, in a fixed order.

    The database is opened read-only through Python's ``sqlite3`` and checked with ``PRAGMA integrity_check`` first
    (``quick_check`` misses an index page whose entries no longer match their rows, which the table scan of the
    digest does not read either, and Chroma's queries then return garbage); a file that is not a database, or a
    damaged one, raises :class:`IndexFormatError` instead of reaching a native reader that could abort the process.

    Examples:
        >>> import tempfile, pathlib, sqlite3
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "db.sqlite3"
        >>> con = sqlite3.connect(p); _ = con.execute("create table t (a, b)"); con.commit()
        >>> before = sqlite_digest(p)
        >>> _ = con.execute("insert into t values (1, 'x')"); con.commit(); con.close()
        >>> sqlite_digest(p) == before
        False
    """
    path = Path(path)
    skip = set(volatile)
    h = hashlib.sha256()
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        check_descriptors(f"opening {path}", e)  # out of file descriptors: not a damaged database
        raise IndexFormatError(f"{path} cannot be opened as a SQLite database: {e}") from e
    try:
        check = con.execute("PRAGMA integrity_check(1)").fetchall()
        if check != [("ok",)]:
            raise IndexFormatError(f"{path} is damaged: SQLite's integrity_check reports {check[0][0]!r}; rebuild it")
        tables = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        for name, sql in tables:
            if name in skip or (sql or "").upper().startswith("CREATE VIRTUAL"):
                continue
            ncols = len(con.execute(f'SELECT * FROM "{name}" LIMIT 0').description)
            order = ", ".join(str(i + 1) for i in range(ncols))
            h.update(f"\x00table {name}\x00".encode())
            for row in con.execute(f'SELECT * FROM "{name}" ORDER BY {order}'):
                h.update(repr(row).encode("utf-8", "surrogatepass"))
    except sqlite3.Error as e:
        check_descriptors(f"reading {path}", e)
        raise IndexFormatError(f"{path} is damaged: SQLite cannot read it ({e}); rebuild it") from e
    finally:
        con.close()
    return h.hexdigest()
