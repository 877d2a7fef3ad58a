"""Per-query records of a benchmark run, in a JSONL file a stopped run resumes from.

A long run (an LLM method over hundreds of queries on a CPU) must survive being stopped, and should use every core.
:class:`RecordFile` keeps one JSON line per finished query after a header line with the run's settings:

* each line is flushed and fsynced when its query finishes, so a killed run loses at most the query in flight;
* a rerun with the same settings skips the queries already recorded; a half-written last line (the process died
  while writing it) is dropped and its query redone;
* a file written with other settings is refused (:class:`~retrievekit.core.errors.InvalidInputError` naming the
  settings that differ), so results of different runs never mix;
* several processes may append to one file at once (one per core, each running a :func:`shard` of the queries):
  the header is created once (exclusive create), and every record is one ``write`` of one line to a file opened in
  append mode;
* every line is signed with its run (a hash of the settings and the retrievekit version) and carries a checksum of
  its content: a line from another run or edited by hand is not used (a
  :class:`~retrievekit.core.errors.RecordIntegrityWarning` names them) and its query runs again;
* :meth:`RecordFile.writing` locks the file for the run: a second process without a shard (or with the same
  shard) is refused instead of doing all the work again.

Examples:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> f = RecordFile(path, {"method": "bm25", "k": 10})
    >>> f.append(QueryRecord(qid="q1", ids=["d3", "d1"], seconds=0.01))
    >>> sorted(RecordFile(path, {"method": "bm25", "k": 10}).done())
    ['q1']
    >>> shard(["q1", "q2", "q3", "q4", "q5"], "1/2")
    ['q2', 'q4']
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from retrievekit.core.errors import InvalidInputError, RecordIntegrityWarning, StorageWriteError
from retrievekit.core.paths import ensure_folder

__all__ = ["FORMAT_VERSION", "QueryRecord", "RecordFile", "parse_shard", "shard"]

FORMAT_VERSION = 2
"""Version of the record file format (the header's ``retrievekit_records``). 2: signed lines (``run``, ``check``);
files of version 1 are still read (their lines unsigned) and extended in their own format."""

_SIGNED_FROM = 2


def code_version() -> str:
    """The installed retrievekit's version (part of every run's signature).

    Examples:
        >>> isinstance(code_version(), str)
        True
    """
    try:
        return importlib.metadata.version("retrievekit")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def run_signature(settings: Mapping[str, Any]) -> str:
    """The signature of a run: its settings and the code version, hashed.

    Examples:
        >>> run_signature({"k": 10}) == run_signature({"k": 10}), run_signature({"k": 10}) == run_signature({"k": 1})
        (True, False)
    """
    text = json.dumps({"settings": _canonical(settings), "code": code_version()}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def line_check(run: str, record: Mapping[str, Any]) -> str:
    """The checksum of one record line: its run signature and its content, hashed.

    Examples:
        >>> line_check("r", {"qid": "q", "ids": ["a"]}) == line_check("r", {"ids": ["a"], "qid": "q"})
        True
    """
    text = run + "\n" + json.dumps(record, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


T = TypeVar("T")


@dataclass
class QueryRecord:
    """What one query produced: the ranking, its cost and anything a benchmark adds.

    Attributes:
        qid: the query id.
        ids: returned object ids, best first.
        scores: their scores (same order).
        seconds: wall time of the search call.
        llm_calls, prompt_tokens, completion_tokens: from the query's trace.
        llm_rounds: LLM calls on the query's critical path (calls made at once count once; ``Trace.llm_rounds``).
        stages: per stage, its LLM calls and ``"fallback"`` events
            (:func:`~retrievekit.core.eval.fallbacks.stage_counts`).
        events: number of trace events.
        counters: the trace's counters (summed per query).
        error: ``"ErrorType: message"`` when the search raised a retrievekit error (the ranking is then empty).
        extra: JSON-safe fields a benchmark adds per query (e.g. a diagnosis).
        judged: the relevance judge's scored pairs, labelled from the qrels (``{"judges", "scores", "labels"}``,
            :func:`~retrievekit.core.eval.judge_accuracy.query_pairs`); empty when no judge ran.

    Examples:
        >>> QueryRecord(qid="q", ids=["a"]).to_dict()["ids"]
        ['a']
    """

    qid: str
    ids: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    seconds: float = 0.0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    events: int = 0
    counters: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    judged: dict[str, Any] = field(default_factory=dict)
    llm_rounds: int = 0
    stages: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (what one line of a record file holds).

        Examples:
            >>> sorted(QueryRecord(qid="q").to_dict())[:3]
            ['completion_tokens', 'counters', 'error']
        """
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryRecord:
        """Read a record back; unknown keys are refused.

        Examples:
            >>> QueryRecord.from_dict({"qid": "q", "ids": ["a"]}).ids
            ['a']
        """
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown or "qid" not in data:
            raise InvalidInputError(f"not a query record (unknown keys {unknown}, or no qid)")
        return cls(**dict(data))


def _canonical(settings: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(settings), sort_keys=True, default=str))


class RecordFile:
    """An append-only JSONL file of :class:`QueryRecord` lines under a settings header.

    Args:
        path: the file (created with its folder on the first :meth:`append`).
        settings: JSON-safe description of the run (dataset, method, options, ...); a file with other settings
            is refused.

    Raises:
        InvalidInputError: the file exists with other settings, is not a record file, or has a newer format.

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
        >>> RecordFile(p, {"k": 10}).append(QueryRecord(qid="q"))
        >>> RecordFile(p, {"k": 20})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: .../r.jsonl was written by a run with other settings (k: 10 != 20); use another file or the same settings
    """

    def __init__(self, path: str | os.PathLike[str], settings: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.settings = _canonical(settings)
        self.run = run_signature(self.settings)
        self.version = FORMAT_VERSION
        self.rejected: list[str] = []
        self._lock = threading.Lock()
        self._done: dict[str, QueryRecord] = {}
        self._header_written = False
        self._read()

    def _read(self) -> None:
        if not self.path.exists():
            return
        raw = self.path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]  # a half-written last line is dropped (and rewritten on append)
        if len(complete) != len(raw):
            with open(self.path, "r+b") as f:
                f.truncate(len(complete))
        lines = complete.split(b"\n")[:-1]
        if not lines:
            return
        self._read_header(_text(self.path, lines[0], 1))
        seen: dict[str, int] = {}
        for n, raw_line in enumerate(lines[1:], start=2):
            torn, rest = _split_torn(_text(self.path, raw_line, n))
            if torn:
                self.rejected.append(f"line {n} (cut short by an interrupted write)")
            if rest is None:
                continue
            rec = self._record(rest, n)
            if rec is None:
                continue
            if rec.qid in seen:
                raise InvalidInputError(
                    f"{self.path} line {n}: a second record of query {rec.qid!r} (the first is on line "
                    f"{seen[rec.qid]}); a run writes one line per query, so the file was edited or merged by hand"
                )
            seen[rec.qid] = n
            self._done[rec.qid] = rec
        if self.rejected:
            shown = ", ".join(self.rejected[:5]) + (
                f" and {len(self.rejected) - 5} more" if len(self.rejected) > 5 else ""
            )
            warnings.warn(
                RecordIntegrityWarning(
                    f"{self.path}: {len(self.rejected)} record(s) not used, their queries run again: {shown}"
                ),
                stacklevel=3,
            )

    def _read_header(self, line: str) -> None:
        """Check the header line (line 1): a record file of a format this reads, with this run's settings."""
        try:
            header = json.loads(line)
        except ValueError:
            raise InvalidInputError(f"{self.path} line 1: not a retrievekit record file (bad header line)") from None
        if not isinstance(header, dict) or "retrievekit_records" not in header:
            raise InvalidInputError(f"{self.path} line 1: not a retrievekit record file (no header)")
        version, theirs = header["retrievekit_records"], header.get("settings", {})
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidInputError(f"{self.path} line 1: the header's record format {version!r} is not a version")
        if version > FORMAT_VERSION:
            raise InvalidInputError(f"{self.path} line 1: record format {version}, newer than this retrievekit reads")
        if not isinstance(theirs, dict):
            raise InvalidInputError(f"{self.path} line 1: the header's settings are a {type(theirs).__name__}")
        self.version = version
        self._header_written = True
        if theirs != self.settings:
            keys = sorted(set(theirs) | set(self.settings))
            diff = [
                f"{k}: {theirs.get(k)} != {self.settings.get(k)}" for k in keys if theirs.get(k) != self.settings.get(k)
            ]
            raise InvalidInputError(
                f"{self.path} was written by a run with other settings ({'; '.join(diff)}); "
                "use another file or the same settings"
            )
        if version < _SIGNED_FROM:
            warnings.warn(
                RecordIntegrityWarning(
                    f"{self.path} has record format {version}: its lines are unsigned and cannot be checked"
                ),
                stacklevel=4,
            )

    def _record(self, line: str, n: int) -> QueryRecord | None:
        """The record on line ``n`` (None when it is not this run's, noted in :attr:`rejected`)."""
        try:
            data = json.loads(line)
            if isinstance(data, dict) and self.version < _SIGNED_FROM and ("run" in data or "check" in data):
                raise InvalidInputError(
                    f"it is signed but the header says format {self.version}: the header was downgraded"
                )
            why = self._unsigned_why(data) if isinstance(data, dict) else None
            if why is not None:
                self.rejected.append(f"line {n} ({why})")
                return None
            return QueryRecord.from_dict(data)
        except (ValueError, TypeError, InvalidInputError) as e:
            raise InvalidInputError(f"{self.path} line {n}: not a query record ({e})") from None

    def _unsigned_why(self, data: dict[str, Any]) -> str | None:
        """Why a line of a signed file is not this run's (its signature fields are taken off ``data``), or None."""
        if self.version < _SIGNED_FROM:
            return None
        run, check = data.pop("run", None), data.pop("check", None)
        if run != self.run:
            return "written by another run: other settings or another retrievekit version"
        if check != line_check(run, data):
            return "edited: its checksum does not match"
        return None

    def done(self) -> dict[str, QueryRecord]:
        """The records read from the file and appended since, by query id.

        Examples:
            >>> import tempfile
            >>> RecordFile(tempfile.mkdtemp() + "/none.jsonl", {}).done()
            {}
        """
        return dict(self._done)

    def append(self, record: QueryRecord) -> None:
        """Write one record as one line (header first for a new file), flushed and fsynced.

        Examples:
            >>> import tempfile
            >>> f = RecordFile(tempfile.mkdtemp() + "/a.jsonl", {"k": 1})
            >>> f.append(QueryRecord(qid="q")); "q" in f.done()
            True
        """
        data = record.to_dict()
        if self.version >= _SIGNED_FROM:
            data = {**data, "run": self.run, "check": line_check(self.run, data)}
        line = json.dumps(data, ensure_ascii=False) + "\n"
        with self._lock:
            ensure_folder(self.path.parent, "record folder")
            self._ensure_header()
            _append_line(self.path, line.encode("utf-8"), record.qid)
            self._done[record.qid] = record

    @contextlib.contextmanager
    def writing(self, part: tuple[int, int] | None = None) -> Iterator[None]:
        """Hold the file's lock while a run writes to it: exclusive without a shard, shared with one (plus the shard's
        own lock). A second process that would do the same queries gets an ``InvalidInputError`` at once.

        The lock is the kernel's, on the file itself (its device and inode), not on a name beside it: a second writer
        through a symlink or a hardlink meets it, and a killed writer releases it. The file is created with its
        header first.

        Examples:
            >>> import tempfile
            >>> f = RecordFile(tempfile.mkdtemp() + "/w.jsonl", {})
            >>> with f.writing():
            ...     with RecordFile(f.path, {}).writing():
            ...         pass
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: another process is writing .../w.jsonl (a run without --shard, or the same shard); wait for it or give each process its own --shard K/N
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            yield
            return
        with self._lock:
            ensure_folder(self.path.parent, "record folder")
            self._ensure_header()  # the file itself is what is locked: it exists from here on
        with contextlib.ExitStack() as stack:
            handle = stack.enter_context(open(self.path, "ab"))  # any name (a symlink, a hardlink): the same file
            try:
                fcntl.flock(handle.fileno(), (fcntl.LOCK_EX if part is None else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                if part is not None:
                    _lock_shard(stack, handle, part)
            except BlockingIOError:
                raise InvalidInputError(
                    f"another process is writing {self.path} (a run without --shard, or the same shard); wait "
                    "for it or give each process its own --shard K/N"
                ) from None
            yield

    def _ensure_header(self) -> None:
        """Create the file with its header line, exactly once even when several processes start together."""
        if self._header_written:
            return
        header = json.dumps({"retrievekit_records": FORMAT_VERSION, "settings": self.settings}, ensure_ascii=False)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:  # another process (or an earlier run) made it: its header must be ours
            for _ in range(100):
                first = self.path.read_bytes().split(b"\n", 1)
                if len(first) == 2:
                    break
                time.sleep(0.01)  # the other process is writing its header line
            if json.loads(first[0]) != json.loads(header):
                raise InvalidInputError(
                    f"{self.path} was started by a run with other settings; use another file or the same settings"
                ) from None
        else:
            try:
                os.write(fd, (header + "\n").encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        self._header_written = True


def _text(path: Path, raw: bytes, n: int) -> str:
    """Line ``n`` of ``path`` as text; :class:`InvalidInputError` naming the line and the byte when not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInputError(
            f"{path} line {n}: not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); the file was damaged"
        ) from None


_RECORD_START = '{"qid": '
"""How every record line starts (``QueryRecord``'s first field, written by ``json.dumps``)."""


def _split_torn(line: str) -> tuple[bool, str | None]:
    """``(torn, rest)``: whether ``line`` starts with a record cut short by an interrupted write (a short write, then
    the next record appended after it on the same line), and the complete record after it (None: none)."""
    try:
        json.loads(line)
        return False, line
    except json.JSONDecodeError as e:
        at = line.rfind(_RECORD_START)
        if at > 0:  # a torn record, then a whole one appended after it
            return True, line[at:]
        if line.startswith(_RECORD_START) and e.pos >= len(line.rstrip()) - 1:  # cut off: JSON ended too early
            return True, None
        return False, line  # damage of another kind: refused, naming the line


def _lock_shard(stack: contextlib.ExitStack, handle: Any, part: tuple[int, int]) -> None:
    """Lock shard ``part``'s own byte of the records file open in ``handle`` (``BlockingIOError`` when another writer
    holds it): an open-file-description lock (Linux), on the file itself like its ``flock``; elsewhere an ``flock`` on
    a lock file beside it named by the file's device and inode (two names of the file in two folders then miss each
    other's shard lock; the file's own lock still keeps a run without a shard apart)."""
    import fcntl
    import struct
    import sys

    k, n = part
    offset = (1 << 40) + n * (n - 1) // 2 + k  # one byte per (K, N), far past any record
    if sys.platform == "linux" and hasattr(fcntl, "F_OFD_SETLK") and struct.calcsize("P") == 8:
        request = struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)  # struct flock, l_pid 0
        try:
            fcntl.fcntl(handle.fileno(), fcntl.F_OFD_SETLK, request)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise BlockingIOError(e.errno, "shard locked") from e
            raise
        return
    info = os.fstat(handle.fileno())  # pragma: no cover - not Linux
    lock = Path(handle.name).resolve().with_name(f".records-{info.st_dev}-{info.st_ino}.lock.{k}-{n}")
    shard = stack.enter_context(open(lock, "a+b"))  # closed with the records file's handle
    fcntl.flock(shard.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _append_line(path: Path, data: bytes, qid: str) -> None:
    """Append one record line in one write, fsynced; a write cut short (a file-size limit, a full disk) is a
    :class:`StorageWriteError` at once, its line ended so that a reader drops it and the query runs again."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        try:
            written = os.write(fd, data)
        except OSError as e:
            raise StorageWriteError(
                e.errno or errno.EIO, f"the record of query {qid!r} could not be written to {path}: {e.strerror or e}"
            ) from e
        if written != len(data):
            with contextlib.suppress(OSError):
                os.write(fd, b"\n")  # end the torn line: the next record starts a line of its own
            raise StorageWriteError(
                errno.EFBIG,
                f"the record of query {qid!r} was cut short in {path} ({written} of {len(data)} bytes: a file-size "
                "limit or a full disk); it is not counted as done and runs again on resume",
            )
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_shard(text: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``"K/N"`` (0-based) as ``(K, N)``; ``None`` stays ``None``.

    Raises:
        InvalidInputError: not ``K/N`` with ``0 <= K < N``.

    Examples:
        >>> parse_shard("0/2"), parse_shard(None)
        ((0, 2), None)
        >>> parse_shard("2/2")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --shard must be K/N with 0 <= K < N, got '2/2'
    """
    if text is None:
        return None
    if isinstance(text, tuple):
        k, n = text
    else:
        try:
            k, n = (int(x) for x in str(text).split("/"))
        except ValueError:
            raise InvalidInputError(f"--shard must be K/N with 0 <= K < N, got {text!r}") from None
    if not 0 <= k < n:
        raise InvalidInputError(f"--shard must be K/N with 0 <= K < N, got {text!r}")
    return int(k), int(n)


def shard(items: Sequence[T], spec: str | tuple[int, int] | None) -> list[T]:
    """Items ``K, K+N, K+2N, ...`` of ``items`` for shard ``K/N`` (all of them for ``None``).

    Examples:
        >>> shard([1, 2, 3], None), shard([1, 2, 3], (0, 2))
        ([1, 2, 3], [1, 3])
    """
    parsed = parse_shard(spec)
    if parsed is None:
        return list(items)
    k, n = parsed
    return list(items[k::n])
