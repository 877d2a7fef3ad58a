"""Split a file into parts under a size cap and join them back, every part and the whole checked by sha256.

A carried folder and the files that come back from a GPU machine both have size caps (64 MiB a call, 16 MiB a
returned file), so a model wheel or a trained model travels in parts. ``split_file`` writes ``NAME.part000``,
``NAME.part001``, ... and returns an entry (name, size, sha256, parts with their own sha256); ``join_parts``
concatenates the parts of an entry into a temporary file, checks every sha256, and only then renames it into place,
so a broken transfer never leaves a file that looks whole.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "blob.bin").write_bytes(b"x" * 10)
    >>> entry = split_file(d / "blob.bin", d / "parts", part_bytes=4)
    >>> [p["file"] for p in entry["parts"]]
    ['blob.bin.part000', 'blob.bin.part001', 'blob.bin.part002']
    >>> join_parts(entry, d / "parts", d / "joined.bin").read_bytes() == b"x" * 10
    True
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["StageError", "file_entry", "join_parts", "sha256_file", "split_file", "tar_folder", "verify_file"]

_BLOCK = 1 << 22


class StageError(RuntimeError):
    """A staged file is missing, the wrong size or the wrong sha256 (a broken or partial transfer).

    Example:
        >>> raise StageError("part blob.bin.part001 is missing")
        Traceback (most recent call last):
        ...
        benchmarks.gpu.parts.StageError: part blob.bin.part001 is missing
    """


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 4 MiB blocks.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile(delete=False) as f:
        ...     _ = f.write(b"abc")
        >>> sha256_file(f.name)[:12]
        'ba7816bf8f01'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def file_entry(path: str | os.PathLike[str], name: str | None = None) -> dict[str, Any]:
    """``{"file", "size", "sha256"}`` of a file (``name`` defaults to its file name).

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile(delete=False, suffix=".txt") as f:
        ...     _ = f.write(b"abc")
        >>> file_entry(f.name, "a.txt")["size"]
        3
    """
    p = Path(path)
    return {"file": name or p.name, "size": p.stat().st_size, "sha256": sha256_file(p)}


def verify_file(path: str | os.PathLike[str], entry: dict[str, Any]) -> None:
    """Raise :class:`StageError` unless ``path`` exists with the entry's size and sha256.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile(delete=False) as f:
        ...     _ = f.write(b"abc")
        >>> verify_file(f.name, {"file": "a", "size": 4, "sha256": "0" * 64})
        Traceback (most recent call last):
        ...
        benchmarks.gpu.parts.StageError: a: 3 bytes where 4 were expected (a partial transfer?)
    """
    p = Path(path)
    if not p.is_file():
        raise StageError(f"{entry['file']} is missing ({p})")
    size = p.stat().st_size
    if size != entry["size"]:
        raise StageError(f"{entry['file']}: {size} bytes where {entry['size']} were expected (a partial transfer?)")
    digest = sha256_file(p)
    if digest != entry["sha256"]:
        raise StageError(f"{entry['file']}: sha256 {digest}, expected {entry['sha256']} (a corrupt transfer)")


def split_file(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, part_bytes: int) -> dict[str, Any]:
    """Write ``path`` as parts of at most ``part_bytes`` into ``out_dir``; return its entry with ``parts``.

    A file no larger than ``part_bytes`` still gets one part, so every split entry joins the same way.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "a").write_bytes(b"abc")
        >>> len(split_file(d / "a", d / "p", part_bytes=2)["parts"])
        2
    """
    if part_bytes < 1:
        raise ValueError(f"part_bytes must be >= 1, got {part_bytes}")
    src, out = Path(path), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    with open(src, "rb") as f:
        index = 0
        while True:
            chunk = f.read(part_bytes)
            if not chunk and index > 0:
                break
            name = f"{src.name}.part{index:03d}"
            (out / name).write_bytes(chunk)
            parts.append({"file": name, "size": len(chunk), "sha256": hashlib.sha256(chunk).hexdigest()})
            index += 1
            if len(chunk) < part_bytes:
                break
    return {**file_entry(src), "parts": parts}


def join_parts(entry: dict[str, Any], parts_dir: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Join an entry's parts from ``parts_dir`` into ``dest``, checked; ``dest`` appears only when all is well.

    Raises :class:`StageError` for a missing or corrupt part, or a whole whose sha256 differs.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "a").write_bytes(b"abc")
        >>> e = split_file(d / "a", d / "p", part_bytes=2)
        >>> (d / "p" / "a.part001").unlink()
        >>> join_parts(e, d / "p", d / "b")
        Traceback (most recent call last):
        ...
        benchmarks.gpu.parts.StageError: a.part001 is missing (...)
    """
    src, target = Path(parts_dir), Path(dest)
    for part in entry["parts"]:
        verify_file(src / part["file"], part)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in entry["parts"]:
                with open(src / part["file"], "rb") as f:
                    while block := f.read(_BLOCK):
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != entry["sha256"]:
            raise StageError(
                f"{entry['file']}: the joined parts have sha256 {h.hexdigest()}, expected {entry['sha256']}"
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def tar_folder(folder: Path, dest: Path, arcname: str) -> Path:
    """A deterministic tar of ``folder`` under ``arcname`` (sorted names, zero mtimes, no owners): the same files give
    the same sha256, so a re-staged or re-exported folder is recognised.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "m").mkdir(), (d / "m" / "a.txt").write_text("x")
        >>> sha256_file(tar_folder(d / "m", d / "1.tar", "m")) == sha256_file(tar_folder(d / "m", d / "2.tar", "m"))
        True
    """

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=f"{arcname}/{path.relative_to(folder)}", filter=clean, recursive=False)
    return dest
