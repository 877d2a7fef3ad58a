"""A real ``chroma run`` server on loopback for the tests that use a Chroma server through ``chromadb.HttpClient``."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def chroma_server(data_dir: Path) -> Iterator[tuple[subprocess.Popen[bytes], Any, int]]:
    """Start ``chroma run`` on a free loopback port over ``data_dir``; yield ``(process, client, port)``.

    Skips when the chroma CLI is not installed beside this Python. The server is stopped (and resumed first, if a
    test paused it) on exit.
    """
    import chromadb

    chroma = Path(sys.executable).with_name("chroma")
    if not chroma.exists():
        pytest.skip("the chroma CLI is not installed next to this Python")
    port = _free_port()
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(data_dir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = None
        for _ in range(240):  # the server's start-up; a busy machine may need a while
            if proc.poll() is not None:
                break
            try:
                client = chromadb.HttpClient(
                    host="127.0.0.1", port=port, settings=chromadb.Settings(anonymized_telemetry=False)
                )
                client.heartbeat()
                break
            except Exception:
                client = None
                time.sleep(0.5)
        assert client is not None, "chroma server did not come up"
        yield proc, client, port
    finally:
        if proc.poll() is None:
            import signal

            proc.send_signal(signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
