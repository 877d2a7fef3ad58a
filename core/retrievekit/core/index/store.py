"""Versioned, atomically written index folders.

An index folder holds ``manifest.json`` (format name, format version, the
retrievekit version that wrote it, free fields) and ``objects.jsonl`` (the
indexed objects). Folders are written into a sibling temp folder and swapped
in with a rename, so a crash mid-write never leaves a half-written index and
never destroys the previous one. The temp folder's name carries the writing
process's id; the next write beside it removes the ones whose process is gone
(:func:`sweep_stale_temp_folders`), so killed builds leave nothing behind for long.

Examples:
    >>> import tempfile, pathlib
    >>> from retrievekit.core.types import Passage
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "idx"
    >>> with atomic_folder(d) as tmp:
    ...     _ = write_objects(tmp, [Passage(id="a", text="x")])
    ...     write_manifest(tmp, "demo", 1, {"n": 1})  # last: it seals the files written before it
    >>> read_manifest(d, "demo", 1)["n"], [o.id for o in read_objects(d)]
    (1, ['a'])
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrievekit.core.descriptors import check_descriptors
from retrievekit.core.errors import (
    IndexFormatError,
    InvalidInputError,
    StorageWriteError,
)
from retrievekit.core.index.checksums import (
    MANIFEST_CHECK,
    folder_checksums,
    manifest_check,
    verify_sealed,
)
from retrievekit.core.index.folder_swap import pid_alive, restore_interrupted_swap, storage_error, swap_folder
from retrievekit.core.paths import ensure_folder
from retrievekit.core.storage import atomic_write_text
from retrievekit.core.types import DataObject, object_from_dict, object_to_dict

__all__ = [
    "MANIFEST",
    "OBJECTS",
    "atomic_folder",
    "object_json",
    "read_manifest",
    "read_versioned_json",
    "read_objects",
    "sweep_stale_temp_folders",
    "write_manifest",
    "write_objects",
]

MANIFEST = "manifest.json"
OBJECTS = "objects.jsonl"
STALE_AFTER_S = 3600.0
"""A temp folder whose owner cannot be checked (another host, or no pid in its name) is stale after this long."""

_TAGGED_TMP = re.compile(r"p(\d+)-([0-9a-f]{6})\.[a-z0-9_]+\.tmp")  # .<name>.p<pid>-<host>.<random>.tmp
_UNTAGGED_TMP = re.compile(r"[a-z0-9_]{8}\.tmp")  # .<name>.<random>.tmp (retrievekit before the pid tag)
_OLD_SWAP = re.compile(r"old-(\d+)")  # .<name>.old-<pid>: the previous folder during the final swap


def _package_version() -> str:
    from retrievekit.core import __version__

    return __version__


def _host_id() -> str:
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:6]


def _is_stale(rest: str, age: float) -> bool:
    """Whether ``.<name>.<rest>`` is a temp folder that no running write owns (``age`` in seconds)."""
    tagged = _TAGGED_TMP.fullmatch(rest)
    if tagged is not None:
        if tagged.group(2) == _host_id():
            return not pid_alive(int(tagged.group(1)))
        return age > STALE_AFTER_S
    old = _OLD_SWAP.fullmatch(rest)
    if old is not None:
        return not pid_alive(int(old.group(1))) and age > 60.0
    return _UNTAGGED_TMP.fullmatch(rest) is not None and age > STALE_AFTER_S


def sweep_stale_temp_folders(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp folders that killed writes of ``path`` left beside it; returns those removed.

    A temp folder (``.<name>.p<pid>-<host>.<random>.tmp``) is stale when its process, on this machine, is gone; one
    from another machine, or one without a pid in its name, when it is older than :data:`STALE_AFTER_S`. Folders
    of running writes and anything else beside ``path`` are left alone. :func:`atomic_folder` calls this first.

    Examples:
        >>> import tempfile, pathlib
        >>> parent = pathlib.Path(tempfile.mkdtemp())
        >>> (parent / ".idx.p999999999-000000.abcd1234.tmp").mkdir()  # a pid no process has
        >>> orphan = parent / f".idx.p999999999-{_host_id()}.abcd1234.tmp"
        >>> orphan.mkdir()
        >>> [p.name == orphan.name for p in sweep_stale_temp_folders(parent / "idx")]
        [True]
    """
    path = Path(path)
    prefix, now, removed = f".{path.name}.", time.time(), []
    try:
        entries = [e for e in path.parent.iterdir() if e.name.startswith(prefix)]
    except OSError:  # no parent folder yet, or unreadable: nothing to sweep
        return []
    for entry in entries:
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not entry.is_dir() or entry.is_symlink() or not _is_stale(entry.name[len(prefix) :], now - info.st_mtime):
            continue
        if not path.exists() and _OLD_SWAP.fullmatch(entry.name[len(prefix) :]):
            continue  # the only copy: restore_interrupted_swap puts it back

        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed


@contextmanager
def atomic_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp folder beside ``path``; on success it replaces ``path`` in one rename.

    On an exception the temp folder is removed and ``path`` is untouched; a full disk or a denied write is a
    :class:`~retrievekit.core.errors.StorageWriteError` naming ``path`` ("disk full" / "permission denied"). A kill
    between the swap's two renames is undone by the next write or open (:func:`restore_interrupted_swap`). A ``path``
    under a regular file raises :class:`~retrievekit.core.errors.InvalidPathError` naming it. The temp folder's name carries this process's id,
    and the stale ones that killed writes left beside ``path`` are removed first (:func:`sweep_stale_temp_folders`).

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "out"
        >>> with atomic_folder(d) as tmp:
        ...     _ = (tmp / "f.txt").write_text("hi")
        >>> (d / "f.txt").read_text()
        'hi'
    """
    path = Path(path)
    ensure_folder(path.parent)
    restore_interrupted_swap(path)  # a kill between the two renames of an earlier write: its old copy goes back
    sweep_stale_temp_folders(path)
    try:
        tmp = Path(
            tempfile.mkdtemp(prefix=f".{path.name}.p{os.getpid()}-{_host_id()}.", suffix=".tmp", dir=path.parent)
        )
    except OSError as e:
        raise (storage_error(path, e) or e) from e
    try:
        yield tmp
        swap_folder(tmp, path)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        typed = storage_error(path, e) or _disk_full_error(path, e)
        if typed is not None and typed is not e:
            raise typed from e
        raise


def _disk_full_error(path: Path, exc: BaseException) -> StorageWriteError | None:
    """A third-party write error (Chroma's "Error in compaction") on a disk with no space left, as "disk full"."""
    if not isinstance(exc, Exception) or isinstance(exc, (OSError, InvalidInputError)):
        return None
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        return None
    if free >= _FULL_BELOW:
        return None
    return StorageWriteError(
        errno.ENOSPC,
        f"disk full: {path} cannot be written ({free} bytes free; {type(exc).__name__}: {str(exc)[:200]}); what was "
        "there before is intact",
    )


_FULL_BELOW = 1 << 20
"""Free bytes below which a write's failure is taken for a full disk (1 MiB)."""


def write_manifest(
    folder: Path, fmt: str, version: int, fields: dict[str, Any], *, exclude: Iterable[str] = (), checksums: bool = True
) -> None:
    """Write ``manifest.json`` with the format name/version, extra fields, and the sha256 of every other file in
    ``folder`` (``"checksums"``, which :func:`read_manifest` verifies before anything reads the folder).

    Call it last, once every file of the folder is written. ``exclude`` lists relative paths not to checksum (a
    database whose engine rewrites its bytes on open and that the caller hashes by content instead);
    ``checksums=False`` records none (a folder that is being changed in place and is sealed again later). With
    checksums, the manifest covers itself too (``manifest_check``, verified by :func:`read_versioned_json`).

    Examples:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "objects.jsonl").write_text("")
        >>> write_manifest(d, "bm25", 1, {}); sorted(json.loads((d / MANIFEST).read_text()))
        ['checksums', 'format', 'format_version', 'manifest_check', 'retrievekit_version']
    """
    data = {
        "format": f"retrievekit.{fmt}",
        "format_version": version,
        "retrievekit_version": _package_version(),
        **fields,
    }
    data.pop(MANIFEST_CHECK, None)  # fields carried over from an older manifest: its own check is recomputed
    if checksums:
        data["checksums"] = folder_checksums(folder, exclude=[MANIFEST, *exclude])
        data[MANIFEST_CHECK] = manifest_check(data)  # the manifest covers itself
    atomic_write_text(folder / MANIFEST, json.dumps(data, indent=2, sort_keys=True))


def read_versioned_json(path: Path, *, want: str, max_version: int, kind: str) -> dict[str, Any]:
    """Read a versioned manifest (``format``, ``format_version``): a JSON object of format ``want`` that this
    retrievekit can read, or :class:`IndexFormatError` naming what is wrong (corrupt, foreign, too new).

    ``kind`` names the folder in the messages ("index", "folder").

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "manifest.json"
        >>> _ = p.write_text('{"format": "retrievekit.bm25", "format_version": 1}')
        >>> read_versioned_json(p, want="retrievekit.bm25", max_version=1, kind="index")["format_version"]
        1
        >>> read_versioned_json(p, want="retrievekit.tree", max_version=1, kind="index")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... holds a 'retrievekit.bm25' index, not 'retrievekit.tree'
    """
    folder = path.parent
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        check_descriptors(f"reading {path}", e, by_count=False)  # out of file descriptors: not a corrupt manifest
        raise IndexFormatError(f"{path} is corrupt: {e}") from e
    if not isinstance(data, dict):
        raise IndexFormatError(f"{path} is corrupt: not a JSON object")
    if MANIFEST_CHECK in data and data[MANIFEST_CHECK] != manifest_check(data):
        raise IndexFormatError(
            f"{path} is damaged: its content does not match its {MANIFEST_CHECK} (changed since it was written)"
        )
    if data.get("format") != want:
        raise IndexFormatError(f"{folder} holds a {data.get('format')!r} {kind}, not {want!r}")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise IndexFormatError(f"{path} is corrupt: bad format_version {version!r}")
    if version > max_version:
        raise IndexFormatError(
            f"{folder} was written with {want} format version {version} (retrievekit "
            f"{data.get('retrievekit_version')}); this retrievekit reads up to version {max_version}: upgrade retrievekit"
        )
    return data


def read_manifest(folder: str | os.PathLike[str], fmt: str, max_version: int, *, verify: bool = True) -> dict[str, Any]:
    """Read and check a manifest; raise :class:`IndexFormatError` if missing, foreign, corrupt or too new, or when
    a file the manifest lists is missing or does not match its recorded sha256 (``verify=False`` skips that read).

    A folder written before retrievekit recorded checksums (no ``"checksums"`` field, a version before
    :data:`~retrievekit.core.index.checksums.CHECKSUMS_SINCE`) is read with a :class:`UnverifiedIndexWarning`: save it
    again to add them. One that names a version which records them and carries none is refused (they were removed).

    Examples:
        >>> import tempfile
        >>> read_manifest(tempfile.mkdtemp(), "bm25", 1)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
    """
    folder = Path(folder)
    restore_interrupted_swap(folder)  # a write killed between its two renames left the old copy beside it
    if not folder.is_dir():
        raise IndexFormatError(f"index folder {folder} does not exist")
    mpath = folder / MANIFEST
    if not mpath.is_file():
        raise IndexFormatError(f"{folder} is not a retrievekit index folder (no {MANIFEST})")
    data = read_versioned_json(mpath, want=f"retrievekit.{fmt}", max_version=max_version, kind="index")
    if verify:
        verify_sealed(folder, data, stacklevel=3)
    return data


def object_json(obj: DataObject) -> str:
    """One object as a line of JSON; :class:`InvalidInputError` naming the object and the metadata key when a
    value is not JSON (a ``datetime``, a set, an object), or when a metadata string holds an unpaired surrogate
    (which UTF-8 cannot store).

    Examples:
        >>> import datetime
        >>> from retrievekit.core.types import Passage
        >>> object_json(Passage(id="a", text="x"))
        '{"kind": "passage", "id": "a", "text": "x", "title": "", "metadata": {}}'
        >>> object_json(Passage(id="a", text="x", metadata={"day": datetime.date(2024, 5, 1)}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: object 'a' cannot be saved: metadata['day'] is a date, ...
        >>> object_json(Passage(id="a", text="x", metadata={"who": "\\udc80"}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: object 'a' cannot be saved: its metadata holds an unpaired ...
    """
    data = object_to_dict(obj)
    try:
        line = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        bad = [k for k, v in data["metadata"].items() if not _jsonable(v)]
        where = (
            f"metadata[{bad[0]!r}] is a {type(data['metadata'][bad[0]]).__name__}" if bad else f"it is not JSON: {e}"
        )
        raise InvalidInputError(
            f"object {obj.id!r} cannot be saved: {where}, which JSON cannot store; "
            "store dates and other values as strings or numbers"
        ) from e
    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: ids, texts and titles are refused when the object is made
            raise InvalidInputError(
                f"object {obj.id!r} cannot be saved: its metadata holds an unpaired surrogate, which UTF-8 cannot "
                "store (undecodable bytes read with errors='surrogateescape'?); decode your input as UTF-8"
            ) from e
    return line


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def write_objects(folder: Path, objects: Iterable[DataObject], *, offsets: list[int] | None = None) -> int:
    """Write objects as JSON lines; returns how many. ``offsets``, when given, receives each line's byte offset and
    then the file's length (line ``i`` is bytes ``[offsets[i], offsets[i + 1])``).

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> at: list[int] = []
        >>> write_objects(pathlib.Path(tempfile.mkdtemp()), [Passage(id="a", text="x")], offsets=at), at[0]
        (1, 0)
    """
    n = position = 0
    with open(folder / OBJECTS, "wb") as f:
        for obj in objects:
            line = (object_json(obj) + "\n").encode("utf-8")
            if offsets is not None:
                offsets.append(position)
            f.write(line)
            position += len(line)
            n += 1
        f.flush()
        os.fsync(f.fileno())
    if offsets is not None:
        offsets.append(position)
    return n


def read_objects(folder: str | os.PathLike[str], expected: int | None = None) -> list[DataObject]:
    """Read ``objects.jsonl``; raise :class:`IndexFormatError` when missing, corrupt or truncated.

    Examples:
        >>> import tempfile
        >>> read_objects(tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... has no objects.jsonl
    """
    path = Path(folder) / OBJECTS
    if not path.is_file():
        raise IndexFormatError(f"index folder {folder} has no {OBJECTS}")
    out: list[DataObject] = []
    try:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                try:
                    out.append(object_from_dict(json.loads(line)))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                    raise IndexFormatError(f"{path} is corrupt at line {i + 1}: {e}") from e
    except UnicodeDecodeError as e:
        raise IndexFormatError(f"{path} is corrupt: not UTF-8") from e
    except OSError as e:
        check_descriptors(f"reading {path}", e, by_count=False)  # out of file descriptors: say so, typed
        raise
    if expected is not None and len(out) != expected:
        raise IndexFormatError(f"{path} holds {len(out)} objects but the manifest says {expected} (truncated?)")
    return out
