"""Tantivy's own checksums, checked before tantivy reads a segment: a BM25 folder whose files changed after they were
written is an :class:`~retrievekit.core.errors.IndexFormatError` naming the file, never a wrong answer or a Rust
panic (the promise every retrievekit index folder keeps).

Each file tantivy writes for a segment ends with a footer: a JSON payload that holds the CRC-32 of the bytes before
it, then the payload's length and the magic number 1337 (two little-endian u32). Tantivy checks them only when asked
(``Index::validate_checksum``, which its Python bindings do not expose), so :func:`check_segments` reads the files
that the index's ``meta.json`` names (each segment's ``<segment id>.<ext>`` and its deletes,
``<segment id>.<opstamp>.del``) and checks each one's CRC. Files no commit names (what a killed writer left, or
what tantivy has still to collect) are left alone. A file checked once in this process is not read again while its
inode, modification time and size stay the same (segment files are written once), so a reader that reloads after a
change reads only the new segments.

Examples:
    >>> import tempfile, pathlib
    >>> from retrievekit.core.index.tantivy_docs import fill, new_index
    >>> from retrievekit.core.types import Passage
    >>> gen = pathlib.Path(tempfile.mkdtemp()) / "gen-000001"
    >>> _ = fill(new_index(gen), [Passage(id="a", text="tea")])
    >>> check_segments(gen)
    >>> part = next(p for p in gen.iterdir() if p.suffix == ".term")
    >>> data = bytearray(part.read_bytes()); data[0] ^= 1; _ = part.write_bytes(bytes(data))
    >>> check_segments(gen)
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.IndexFormatError: .../gen-000001/....term: this file of the tantivy index does not match its checksum (it changed after tantivy wrote it); rebuild the index
"""

from __future__ import annotations

import json
import os
import struct
import threading
import zlib
from pathlib import Path

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.tantivy_folder import read_meta

__all__ = ["MAGIC", "check_file", "check_segments", "segment_files"]

MAGIC = 1337
"""The magic number that ends every file tantivy writes for a segment."""
_CHUNK = 1 << 22
_CHECKED: set[tuple[str, int, int, int]] = set()  # (path, inode, mtime ns, size) of files found whole
_KEEP = 200_000  # at most this many remembered (then forgotten at once: the next open reads them again)
_LOCK = threading.Lock()


def segment_files(gen: Path) -> list[Path]:
    """The files of the segments ``gen``'s ``meta.json`` names (:func:`~retrievekit.core.index.tantivy_folder.read_meta`),
    sorted; :class:`IndexFormatError` when ``meta.json`` is missing or damaged, or a deletes file it names is missing.

    Examples:
        >>> import tempfile, pathlib
        >>> segment_files(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...: tantivy's meta.json is missing or corrupt (...); rebuild the index
    """
    segments = read_meta(gen)["segments"]
    try:
        names = {p.name for p in gen.iterdir()}
        parts: dict[str, list[str]] = {}  # segment id -> its files "<id>.<ext>" (not its deletes, named by opstamp)
        for n in names:
            sid, _, ext = n.partition(".")
            if ext and "." not in ext:
                parts.setdefault(sid, []).append(n)
        files: list[str] = []
        for seg in segments:
            sid = str(seg["segment_id"]).replace("-", "")
            files += parts.get(sid, [])
            if seg.get("deletes"):
                files.append(f"{sid}.{int(seg['deletes']['opstamp'])}.del")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise IndexFormatError(f"{gen}: tantivy's meta.json names its segments badly ({e}); rebuild the index") from e
    missing = sorted(n for n in files if n not in names)
    if missing:
        raise IndexFormatError(f"{gen / missing[0]}: this file of the tantivy index is missing; rebuild the index")
    return [gen / n for n in sorted(files)]


def check_file(path: Path) -> None:
    """Check ``path``'s tantivy footer: :class:`IndexFormatError` naming it when it is cut, has no footer, or its
    bytes do not match the CRC-32 the footer holds.

    Examples:
        >>> import tempfile, pathlib
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "x.idx"; _ = bad.write_bytes(b"not tantivy")
        >>> check_file(bad)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: .../x.idx: this file of the tantivy index has no footer (it is cut, or not tantivy's); rebuild the index
    """
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(size - 8, 0))
            tail = f.read(8)
            length, magic = struct.unpack("<II", tail) if len(tail) == 8 else (0, 0)
            if magic != MAGIC or length + 8 > size:
                raise IndexFormatError(f"{path}: this file of the tantivy index has no footer (it is cut, or not "
                                       "tantivy's); rebuild the index")  # fmt: skip
            body = size - 8 - length
            f.seek(body)
            want = int(json.loads(f.read(length))["crc"])
            f.seek(0)
            crc, left = 0, body
            while left:
                chunk = f.read(min(_CHUNK, left))
                if not chunk:
                    break
                crc, left = zlib.crc32(chunk, crc), left - len(chunk)
    except IndexFormatError:
        raise
    except OSError as e:
        raise IndexFormatError(f"{path}: this file of the tantivy index cannot be read ({e}); rebuild the index") from e
    except (ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"{path}: the footer of this file of the tantivy index is damaged ({e}); rebuild the "
                               "index") from e  # fmt: skip
    if crc != want or left:
        raise IndexFormatError(f"{path}: this file of the tantivy index does not match its checksum (it changed "
                               "after tantivy wrote it); rebuild the index")  # fmt: skip


def check_segments(gen: Path) -> None:
    """Check every file of the segments ``gen``'s ``meta.json`` names (:func:`segment_files`, :func:`check_file`),
    those already found whole in this process (same inode, modification time and size) skipped.

    Examples:
        >>> import tempfile, pathlib
        >>> check_segments(pathlib.Path(tempfile.mkdtemp()))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ...: tantivy's meta.json is missing or corrupt (...); rebuild the index
    """
    for path in segment_files(gen):
        try:
            st = os.stat(path)
        except OSError as e:
            raise IndexFormatError(
                f"{path}: this file of the tantivy index cannot be read ({e}); rebuild the index"
            ) from e
        key = (str(path), st.st_ino, st.st_mtime_ns, st.st_size)
        with _LOCK:
            if key in _CHECKED:
                continue
        check_file(path)
        with _LOCK:
            if len(_CHECKED) >= _KEEP:
                _CHECKED.clear()
            _CHECKED.add(key)
