"""A living index's changes written as deltas: :class:`ChangeLog`, the append-only log beside its object list.

A :class:`~retrievekit.core.index.live.LiveIndex` folder's ``live/`` holds a base (``objects.jsonl`` and
``manifest.json``, sealed by checksums, written in one atomic folder swap) and :data:`LOG` (``changes.jsonl``): one
line per committed change since that base, ``<sha256 of the JSON> <JSON>``, the JSON holding the ids the change
removed, the objects it added (new or replacing), the count and
:func:`~retrievekit.core.index.corpus_record.corpus_record` of the held objects after it, and, for a method that
keeps a part inside ``live/`` (a LATTICE tree), what the change did to that part (``"part"``: the method's own JSON,
handed back in order by :attr:`ChangeLog.parts` when the log is read). A change appends its line
and ``fsync``\\ s it: the cost of a change is what it changed, not the index. The index's state is the base with
the log's lines applied in order.

The append is the commit. A process killed part-way through it leaves a last line that is cut short or does not
match its checksum: it is ignored (the state before that change) and cut off by the next append, so a reader sees
the old state or the new one, never a mix. A damaged line before the last one is damage
(:class:`~retrievekit.core.errors.IndexFormatError`). A change whose line would take the log past :data:`FOLD_AT`
of the base (and past :data:`FOLD_MIN_BYTES`) is folded instead: the held objects written as a new base in one swap
of ``live/``, which leaves the log behind with the old copy (a first bulk load is written as a base at once). The
log is left out of the base's checksums (each line carries its own).

Examples:
    >>> import tempfile, pathlib
    >>> from retrievekit.core.types import Passage
    >>> live = pathlib.Path(tempfile.mkdtemp())
    >>> log = ChangeLog(live, base_bytes=0)
    >>> log.append(log.line([], [Passage(id="a", text="tea")], {"count": 1}))
    >>> log.append(log.line(["a"], [Passage(id="b", text="milk")], {"count": 1}))
    >>> held, back = ChangeLog.replay(live, {}, base_bytes=0)
    >>> list(held), back.end == log.end, back.record
    (['b'], True, {'count': 1})
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.store import MANIFEST, OBJECTS, object_json, read_manifest, read_objects
from retrievekit.core.types import DataObject, object_from_dict

__all__ = ["FOLD_AT", "FOLD_MIN_BYTES", "LOG", "ChangeLog", "base_bytes", "read_base", "read_live", "saved_record"]

LOG = "changes.jsonl"
"""The change log inside a living index's ``live/`` folder."""

FOLD_AT = 0.25
"""The log is folded into a new base once it is larger than this fraction of the base's object list..."""

FOLD_MIN_BYTES = 1 << 20
"""... and larger than this many bytes (a small index keeps a log of up to 1 MiB rather than rewrite on each
change)."""


class ChangeLog:
    """The change log of one ``live/`` folder, as far as this process has read or written it.

    Attributes:
        end: the byte length of its committed lines (a torn last line lies past it, and is cut off by the next
            append).
        base_bytes: the size of the base's object list.
        record: the corpus record the last committed line holds (None when the log is empty).
        refold: set when an append failed part-way: the next change is folded (written whole) instead.
        parts: each committed line's ``(removed ids, added ids, part)``, in order, for the lines that carry a part
            (as read by :meth:`replay`; the method that reads them may clear them).

    Examples:
        >>> import tempfile, pathlib
        >>> log = ChangeLog(pathlib.Path(tempfile.mkdtemp()), base_bytes=100)
        >>> log.end, log.fits(b"x" * 1000), log.fits(b"x" * (2 << 20))
        (0, True, False)
    """

    def __init__(self, folder: Path, *, base_bytes: int, end: int = 0, record: Any = None) -> None:
        self.folder, self.base_bytes, self.end, self.record = folder, base_bytes, end, record
        self.refold = False
        self.parts: list[tuple[list[str], list[str], Any]] = []

    def fits(self, line: bytes) -> bool:
        """Whether ``line`` is appended (else its change is folded): the log stays within :data:`FOLD_AT` of the base
        or :data:`FOLD_MIN_BYTES`, and no append failed part-way.

        Examples:
            >>> ChangeLog(Path("."), base_bytes=8 << 20, end=2 << 20).fits(b"x")
            False
        """
        size = self.end + len(line)
        return not self.refold and (size <= FOLD_MIN_BYTES or size <= FOLD_AT * self.base_bytes)

    @staticmethod
    def line(
        removed: Sequence[str], added: Sequence[DataObject], record: Mapping[str, Any], *, part: Any = None
    ) -> bytes:
        """The log line of a change: ``removed`` ids, ``added`` objects, the held objects' ``record`` after it, and
        what it did to a part kept inside ``live/`` (``part``: JSON; None: nothing).

        Examples:
            >>> ChangeLog.line(["a"], [], {"count": 0}).split(b" ", 1)[1]
            b'{"removed": ["a"], "count": 0, "corpus": {"count": 0}, "objects": []}\\n'
        """
        head = json.dumps({"removed": list(removed), "count": record.get("count"), "corpus": dict(record)})
        objects = ", ".join(object_json(o) for o in added)  # as objects.jsonl holds them; a non-JSON value: refused
        extra = f', "part": {json.dumps(part, allow_nan=False)}' if part is not None else ""
        body = f'{head[:-1]}, "objects": [{objects}]{extra}}}'
        return f"{hashlib.sha256(body.encode('utf-8')).hexdigest()} {body}\n".encode()

    def append(self, line: bytes) -> None:
        """Commit one change: its :meth:`line` appended after the committed ones (a torn line past them cut off
        first) and ``fsync``\\ ed. On an error (a full disk) :attr:`refold` is set and the error raised.

        Examples:
            >>> import tempfile, pathlib
            >>> log = ChangeLog(pathlib.Path(tempfile.mkdtemp()), base_bytes=0)
            >>> log.append(log.line(["x"], [], {"count": 0})); log.end > 0
            True
        """
        path = self.folder / LOG
        created = not path.exists()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, self.end)
                _append_bytes(fd, line, self.end)
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                _sync_folder(self.folder)
        except BaseException:
            self.refold = True
            raise
        self.end += len(line)
        self.record = json.loads(line.split(b" ", 1)[1])["corpus"]

    @classmethod
    def replay(
        cls, folder: Path, held: dict[str, DataObject], *, base_bytes: int
    ) -> tuple[dict[str, DataObject], ChangeLog]:
        """Apply ``folder``'s committed lines to ``held`` (the base's objects, changed in place) in order; returns
        them and the log as read. A torn last line is left out; a damaged earlier one, or a line whose count is
        not what the objects then number, is an :class:`IndexFormatError`.

        Examples:
            >>> import tempfile, pathlib
            >>> held, log = ChangeLog.replay(pathlib.Path(tempfile.mkdtemp()), {}, base_bytes=0)
            >>> held, log.end, log.record
            ({}, 0, None)
        """
        path, end, record, parts = folder / LOG, 0, None, []
        data = path.read_bytes() if path.is_file() else b""
        while end < len(data):
            stop = data.find(b"\n", end)
            change = _parse(data[end:stop]) if stop >= 0 else None
            if change is None:
                if stop < 0 or data.find(b"\n", stop + 1) < 0:  # the last line, cut short by a kill: not committed
                    break
                raise IndexFormatError(f"{path} is damaged at byte {end} (a line before the last fails its checksum)")
            for oid in change["removed"]:
                held.pop(oid, None)
            for obj in change["objects"]:
                held.pop(obj.id, None)
                held[obj.id] = obj
            if change["count"] != len(held):
                raise IndexFormatError(
                    f"{path}: after its line at byte {end} {len(held)} objects are held, not "
                    f"the {change['count']} it records"
                )
            if change["part"] is not None:
                parts.append((change["removed"], [o.id for o in change["objects"]], change["part"]))
            end, record = stop + 1, change["corpus"]
        log = cls(folder, base_bytes=base_bytes, end=end, record=record)
        log.parts = parts
        return held, log


def read_base(folder: Path, fmt: str, version: int, *, verify: bool = True) -> dict[str, Any]:
    """The manifest of ``folder``'s base, its files checked against its checksums (the log left out: each of its
    lines carries its own).

    Examples:
        >>> import tempfile
        >>> read_base(Path(tempfile.mkdtemp()), "live", 2)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
    """
    from retrievekit.core.index.checksums import verify_sealed

    manifest = read_manifest(folder, fmt, version, verify=False)
    if verify:
        verify_sealed(folder, manifest, exclude=(MANIFEST, LOG), stacklevel=3)
    return manifest


def saved_record(folder: str | os.PathLike[str]) -> Any:
    """The corpus record a living index's ``live/`` ``folder`` holds now: its log's last committed line's, else its
    base manifest's.

    Examples:
        >>> import tempfile, pathlib
        >>> live = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (live / "manifest.json").write_text('{"corpus": {"count": 0}}')
        >>> ChangeLog(live, base_bytes=0).append(ChangeLog.line([], [], {"count": 0, "digest": "00"}))
        >>> saved_record(live)["digest"]
        '00'
    """
    live = Path(folder)
    path, record = live / LOG, None
    data = path.read_bytes() if path.is_file() else b""
    for line in data.split(b"\n"):
        change = _parse(line)
        record = change["corpus"] if change is not None else record
    if record is None:
        record = json.loads((live / MANIFEST).read_text(encoding="utf-8")).get("corpus")
    return record


def base_bytes(folder: Path) -> int:
    """The size of ``folder``'s base object list (0 when there is none yet).

    Examples:
        >>> base_bytes(Path("/nonexistent"))
        0
    """
    try:
        return (folder / OBJECTS).stat().st_size
    except OSError:
        return 0


def _parse(line: bytes) -> dict[str, Any] | None:
    """One committed line's change, or None for a line that is cut short or fails its checksum."""
    digest, _, body = line.partition(b" ")
    if len(digest) != 64 or hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    try:
        data = json.loads(body)
        return {
            "removed": [str(i) for i in data["removed"]],
            "objects": [object_from_dict(o) for o in data.get("objects", [])],
            "count": int(data["count"]),
            "corpus": data["corpus"],
            "part": data.get("part"),
        }
    except (ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"a line of a change log matches its checksum but is not a change ({e})") from e


def _append_bytes(fd: int, data: bytes, at: int) -> None:
    """Write ``data`` at byte ``at`` of ``fd`` (every byte, however many calls it takes)."""
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, at)
        view, at = view[done:], at + done


def _sync_folder(folder: Path) -> None:
    """``fsync`` a folder, so that a file just made in it outlives a crash of the machine."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_live(folder: Path, fmt: str, version: int) -> tuple[dict[str, Any], list[DataObject], ChangeLog]:
    """A ``live/`` ``folder`` as committed: its base manifest (checked), the held objects (the base's with the log
    applied) and its log. A base written before the log (format version 1) is folded by the next change.

    Examples:
        >>> import tempfile
        >>> read_live(Path(tempfile.mkdtemp()), "live", 2)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
    """
    manifest = read_base(folder, fmt, version)
    base = read_objects(folder, expected=manifest.get("n_objects"))
    held, log = ChangeLog.replay(folder, {o.id: o for o in base}, base_bytes=base_bytes(folder))
    log.refold = manifest.get("format_version", 1) < 2
    return manifest, list(held.values()), log
