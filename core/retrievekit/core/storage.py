"""Storage helpers every layer shares: atomic file writes and the sha256 of a file.

* :func:`atomic_file` -- a binary file written to a temporary file in the same folder, fsynced, then renamed over
  the target when the block ends without an error, so a reader sees the old file or the new one, never half of one;
* :func:`atomic_write_text` -- a text file written that way;
* :func:`write_json_atomic` -- JSON (indented, UTF-8) written the same way (a benchmark result, a report);
* :func:`file_sha256` -- the sha256 of a file's bytes, read in chunks (index checksums, packaged model files).

Folders written atomically (:func:`~retrievekit.core.index.store.atomic_folder`) and their versioned manifests are in
:mod:`retrievekit.core.index.store`.

Examples:
    >>> import tempfile, pathlib
    >>> p = write_json_atomic({"a": 1}, pathlib.Path(tempfile.mkdtemp()) / "new" / "r.json")
    >>> p.read_text(), file_sha256(p)[:12]
    ('{\\n  "a": 1\\n}\\n', '5e36b6560513')
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from retrievekit.core.errors import InvalidPathError
from retrievekit.core.paths import ensure_folder

__all__ = ["atomic_file", "atomic_write_text", "file_sha256", "write_json_atomic"]

_CHUNK = 1 << 20


@contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file to write, put at ``path`` atomically (temp file in the same folder, fsync, rename) when the
    block ends; an error inside the block leaves ``path`` as it was and removes the temp file.

    Raises :class:`~retrievekit.core.errors.InvalidPathError` when the folder cannot be created (e.g. under a file).

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.bin"
        >>> with atomic_file(p) as f:
        ...     _ = f.write(b"abc")
        >>> p.read_bytes()
        b'abc'
    """
    path = Path(path)
    ensure_folder(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file (UTF-8) atomically (:func:`atomic_file`).

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
        >>> atomic_write_text(p, "{}"); p.read_text()
        '{}'
    """
    with atomic_file(path) as f:
        f.write(text.encode("utf-8"))


def write_json_atomic(data: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``data`` as indented JSON (non-JSON values as their ``str``) atomically; returns the path.

    Examples:
        >>> import tempfile
        >>> write_json_atomic({}, tempfile.mkdtemp())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidPathError: ... is a folder; give a file name
    """
    target = Path(path)
    if target.is_dir():
        raise InvalidPathError(f"{target} is a folder; give a file name")
    atomic_write_text(target, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    return target


def file_sha256(path: str | os.PathLike[str], chunk_size: int = _CHUNK) -> str:
    """The sha256 of a file's bytes, read in chunks (1 MiB by default).

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"
        >>> _ = p.write_bytes(b"")
        >>> file_sha256(p)[:12]
        'e3b0c44298fc'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            h.update(chunk)
    return h.hexdigest()
