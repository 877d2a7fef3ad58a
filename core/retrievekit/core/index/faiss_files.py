"""The folder of a :class:`~retrievekit.core.index.faiss_store.FaissStore`: the objects in SQLite, the graph in a
faiss file per saved generation, and the one transaction that ties a generation to its rows.

``objects.sqlite3`` has two tables: ``meta`` (the format, the graph settings, the dimension, the embedder record and
the current generation, as JSON values) and ``objects`` (``label``: the vector's position in the graph, ``id``,
``obj``: the object as JSON, ``meta``: its filterable metadata as JSON). ``vectors.<generation>.faiss`` is the graph
of that generation; a save writes the next one beside it (temp file, fsync, rename), commits the rows and the new
generation in one transaction, and only then removes the old file. Every write begins with ``BEGIN IMMEDIATE`` and
checks that no other process saved since this handle loaded: a second writer is an
:class:`~retrievekit.core.errors.IndexLockedError`, never a lost save.

Examples:
    >>> files = FaissFiles.in_memory({"m": 16, "ef_construction": 100, "ef_search": 100})
    >>> files.count(), files.record(), files.dim()
    (0, None, None)
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import IndexFormatError, IndexLockedError, MissingDependencyError, StorageWriteError

__all__ = ["FAISS_HINT", "FORMAT", "FORMAT_VERSION", "FaissFiles", "faiss_module"]

FORMAT = "retrievekit.faiss-store"
"""The ``format`` a store's ``meta`` table names."""
FORMAT_VERSION = 1
"""The newest format version this retrievekit reads and writes."""
FAISS_HINT = 'pip install "retrievekit[faiss]"  (or: pip install faiss-cpu)'
"""What to install for the faiss store."""
_DB = "objects.sqlite3"
_CHUNK = 500  # ids or labels per SQL statement: below SQLite's limit on bound variables
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS objects (label INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, obj TEXT NOT NULL,"
    " meta TEXT NOT NULL)",
)


def faiss_module() -> Any:
    """The ``faiss`` package, or :class:`~retrievekit.core.errors.MissingDependencyError` saying what to install.

    Examples:
        >>> faiss_module().IndexHNSWFlat.__name__
        'IndexHNSWFlat'
    """
    try:
        import faiss
    except ImportError as e:
        raise MissingDependencyError("faiss-cpu", FAISS_HINT) from e
    return faiss


class FaissFiles:
    """One store's SQLite connection and graph files (``folder`` None: an in-memory database, no graph files).

    Examples:
        >>> FaissFiles.in_memory({"m": 8, "ef_construction": 40, "ef_search": 10}).settings()["m"]
        8
    """

    def __init__(self, conn: sqlite3.Connection, folder: Path | None) -> None:
        self.conn, self.folder = conn, folder
        self.label = str(folder) if folder is not None else "(in memory)"
        self._meta = {key: json.loads(value) for key, value in self._read("SELECT key, value FROM meta")}
        if self._meta.get("format") != FORMAT:
            raise IndexFormatError(f"{self.label} holds a {self._meta.get('format')!r} database, not a faiss store")
        version = self._meta.get("format_version")
        if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
            raise IndexFormatError(
                f"{self.label} is a faiss store of format version {version!r}; this retrievekit reads up to "
                f"{FORMAT_VERSION}: upgrade retrievekit"
            )
        self._loaded_gen = int(self._meta.get("generation", 0))

    # ------------------------------------------------------------------ open
    @classmethod
    def in_memory(cls, settings: Mapping[str, Any]) -> FaissFiles:
        """A store's database in memory.

        Examples:
            >>> FaissFiles.in_memory({"m": 16, "ef_construction": 100, "ef_search": 100}).label
            '(in memory)'
        """
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        _initialise(conn, settings)
        return cls(conn, None)

    @classmethod
    def open(cls, folder: Path, *, create: bool, settings: Mapping[str, Any]) -> FaissFiles:
        """The files of the store in ``folder`` (made when ``create`` and missing).

        Examples:
            >>> import tempfile, pathlib
            >>> d = pathlib.Path(tempfile.mkdtemp())
            >>> FaissFiles.open(d, create=True, settings={"m": 16, "ef_construction": 100, "ef_search": 100}).count()
            0
        """
        db = folder / _DB
        fresh = not db.is_file()
        if fresh:
            if not create:
                raise IndexFormatError(f"no faiss store at {folder} (pass create=True to make one)")
            if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
                raise IndexFormatError(f"{folder} is not an empty folder: a faiss store is made in a new folder")
            folder.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False, timeout=5.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            if fresh:
                _initialise(conn, settings)
        except sqlite3.DatabaseError as e:
            raise _sql_error(e, str(folder)) from e
        try:
            files = cls(conn, folder)
        except (sqlite3.DatabaseError, ValueError, TypeError) as e:
            conn.close()
            if isinstance(e, IndexFormatError):
                raise
            raise _sql_error(e, str(folder)) from e
        files._remove_old_generations()
        return files

    # ------------------------------------------------------------------ meta
    def settings(self) -> dict[str, Any]:
        """The graph settings recorded at creation: ``m``, ``ef_construction``, ``ef_search`` and ``dtype`` (how a
        vector is held: ``"float32"``, a store made before the setting, or ``"float16"``)."""
        out: dict[str, Any] = {key: int(self._meta[key]) for key in ("m", "ef_construction", "ef_search")}
        dtype = self._meta.get("dtype", "float32")
        if dtype not in ("float32", "float16"):
            raise IndexFormatError(f"the faiss store {self.label} is damaged: its dtype {dtype!r} is not known")
        return {**out, "dtype": dtype}

    def record(self) -> dict[str, Any] | None:
        """The embedder record of the first add, or None."""
        record = self._meta.get("record")
        return dict(record) if record else None

    def dim(self) -> int | None:
        """The vectors' dimension, once the first add set it."""
        dim = self._meta.get("dim")
        return int(dim) if dim is not None else None

    def set_dim(self, dim: int, record: dict[str, Any]) -> None:
        """Record the dimension and the embedder (in the pending transaction)."""
        self._write(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("dim", json.dumps(dim)), ("record", json.dumps(record or None))],
        )
        self._meta.update(dim=dim, record=record or None)

    # ------------------------------------------------------------------ rows
    def count(self) -> int:
        """How many objects the rows hold."""
        return int(self._read("SELECT COUNT(*) FROM objects")[0][0])

    def live_labels(self, ntotal: int) -> np.ndarray:
        """A bool per vector of the graph: whether an object row still points at it."""
        live = np.zeros(ntotal, dtype=bool)
        labels = np.array([row[0] for row in self._read("SELECT label FROM objects")], dtype=np.int64)
        if labels.size and (labels.max() >= ntotal or labels.min() < 0):
            raise IndexFormatError(
                f"{self.label} is damaged: its rows point at vector {int(labels.max())}, but its graph holds {ntotal}"
            )
        live[labels] = True
        return live

    def insert(self, rows: Sequence[tuple[str, str, str]], *, first_label: int) -> list[int]:
        """Insert ``(id, object JSON, metadata JSON)`` rows labelled from ``first_label``; the labels of the rows
        they replace (same ids) are returned."""
        replaced = self.remove([r[0] for r in rows])
        self._write(
            "INSERT INTO objects (label, id, obj, meta) VALUES (?, ?, ?, ?)",
            [(first_label + i, oid, obj, meta) for i, (oid, obj, meta) in enumerate(rows)],
        )
        return replaced

    def remove(self, ids: Sequence[str]) -> list[int]:
        """Delete the rows of these ids; their labels."""
        labels: list[int] = []
        for start in range(0, len(ids), _CHUNK):
            part = list(ids[start : start + _CHUNK])
            marks = ",".join("?" * len(part))
            labels += [r[0] for r in self._read(f"SELECT label FROM objects WHERE id IN ({marks})", part)]
        if labels:
            self._write("DELETE FROM objects WHERE label = ?", [(label,) for label in labels])
        return sorted(labels)

    def relabel(self, keep: np.ndarray) -> None:
        """Give the rows of labels ``keep`` (ascending) the labels 0, 1, ... (a graph rebuilt from them)."""
        self._write(
            "UPDATE objects SET label = ? WHERE label = ?",
            [(new, int(old)) for new, old in enumerate(keep) if new != int(old)],
        )

    def objects(self, labels: Sequence[int]) -> dict[int, tuple[str, str]]:
        """``label -> (id, object JSON)`` for the rows of these labels that exist."""
        out: dict[int, tuple[str, str]] = {}
        for start in range(0, len(labels), _CHUNK):
            part = list(labels[start : start + _CHUNK])
            marks = ",".join("?" * len(part))
            for label, oid, obj in self._read(f"SELECT label, id, obj FROM objects WHERE label IN ({marks})", part):
                out[int(label)] = (oid, obj)
        return out

    def matching(self, where: Mapping[str, Any]) -> np.ndarray:
        """The labels of the rows whose metadata matches every item of a checked ``where`` (ascending)."""
        clauses, params = [], []
        for key, value in where.items():
            clause, bound = _condition(f'$."{key}"', value)
            clauses.append(clause)
            params += bound
        sql = f"SELECT label FROM objects WHERE {' AND '.join(clauses)} ORDER BY label"
        return np.array([r[0] for r in self._read(sql, params)], dtype=np.int64)

    # ------------------------------------------------------------------ the graph
    def load_index(self, faiss: Any) -> Any:
        """The saved graph of the current generation, or None before the first save with vectors."""
        gen, dim = int(self._meta.get("generation", 0)), self.dim()
        if self.folder is None or gen == 0 or dim is None:
            return None
        path = self._graph(gen)
        if not path.is_file():
            raise IndexFormatError(f"{self.folder} is damaged: its graph {path.name} is missing")
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as e:
            raise IndexFormatError(f"{self.folder} is damaged: its graph {path.name} cannot be read ({e})") from e
        kind = faiss.IndexHNSWSQ if self.settings()["dtype"] == "float16" else faiss.IndexHNSWFlat
        if index.d != dim or not isinstance(index, kind):
            raise IndexFormatError(f"{self.folder} is damaged: {path.name} is not an HNSW graph of dimension {dim}")
        return index

    def pending(self) -> bool:
        """Whether rows were written since the last save."""
        return self.conn.in_transaction

    def commit(self, index: Any, faiss: Any) -> None:
        """Save: the next generation's graph file, then the rows and the generation in one commit, then the old
        file goes."""
        self._begin()
        gen = self._loaded_gen + 1
        if self.folder is not None and index is not None:
            _write_graph(faiss, index, self._graph(gen))
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (json.dumps(gen),))
        try:
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            raise _sql_error(e, self.label) from e
        self._meta["generation"], self._loaded_gen = gen, gen
        self._remove_old_generations()

    def close(self) -> None:
        """Close the database (a write not saved rolls back)."""
        self.conn.close()

    # ------------------------------------------------------------------ inside
    def _graph(self, gen: int) -> Path:
        assert self.folder is not None
        return self.folder / f"vectors.{gen}.faiss"

    def _remove_old_generations(self) -> None:
        if self.folder is None:
            return
        for path in self.folder.glob("vectors.*.faiss"):
            gen = path.name.split(".")[1]
            if gen.isdigit() and int(gen) < self._loaded_gen:
                path.unlink(missing_ok=True)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as e:
            raise _sql_error(e, self.label) from e

    def _write(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._begin()
        try:
            self.conn.executemany(sql, rows)
        except sqlite3.DatabaseError as e:
            raise _sql_error(e, self.label) from e

    def _begin(self) -> None:
        """Open the write transaction (once until the next save) and check that nobody saved since the load."""
        if self.conn.in_transaction:
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        except sqlite3.DatabaseError as e:
            raise _sql_error(e, self.label) from e
        if row is not None and int(json.loads(row[0])) != self._loaded_gen:
            self.conn.execute("ROLLBACK")
            raise IndexLockedError(
                f"the faiss store {self.label} was saved by another handle since this one opened it; open it again"
            )


def _initialise(conn: sqlite3.Connection, settings: Mapping[str, Any]) -> None:
    """The tables and the format, in one transaction (a crash leaves no half-made store)."""
    conn.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMA:
        conn.execute(statement)
    fields = {"format": FORMAT, "format_version": FORMAT_VERSION, "generation": 0, **settings}
    conn.executemany(
        "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", [(k, json.dumps(v)) for k, v in fields.items()]
    )
    conn.execute("COMMIT")


def _condition(path: str, value: Any) -> tuple[str, list[Any]]:
    """One checked filter item as SQL over the row's metadata JSON, every value bound (a bool matches a bool only,
    a string a string, a number a number)."""
    if isinstance(value, bool):
        return "json_type(meta, ?) = ?", [path, "true" if value else "false"]
    values = value if isinstance(value, list) else [value]
    kind = "json_type(meta, ?) = 'text'" if isinstance(values[0], str) else "json_type(meta, ?) IN ('integer', 'real')"
    marks = ",".join("?" * len(values))
    return f"({kind} AND json_extract(meta, ?) IN ({marks}))", [path, path, *values]


def _write_graph(faiss: Any, index: Any, path: Path) -> None:
    """The graph to ``path``: a temp file beside it, fsync, rename, fsync of the folder."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        faiss.write_index(index, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, RuntimeError | OSError):  # faiss says a failed write with a RuntimeError
            raise StorageWriteError(
                getattr(e, "errno", None) or errno.EIO,
                f"the faiss store's graph {path} cannot be written ({type(e).__name__}: {str(e)[:200]}); the last "
                "save is intact and the changes stay in memory: free space and save again",
            ) from e
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _sql_error(e: BaseException, label: str) -> Exception:
    text = str(e)
    if "locked" in text or "busy" in text:
        return IndexLockedError(f"the faiss store {label} is being written by another process ({text})")
    return IndexFormatError(f"the faiss store {label} cannot be read ({type(e).__name__}: {text})")
