"""The stack from a LlamaIndex ``LatticeRetriever.aretrieve`` to the socket holds at most 6 retrievekit files: edge ->
method step -> driver -> transport (``benchmarks/call_stack_files.py``, whose output docs/architecture.md shows)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "call_stack_files.py"


def test_an_awaited_lattice_request_passes_six_retrievekit_files_edge_step_driver_transport():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=True)
    awaited = re.search(r"^aretrieve: (\d+) retrievekit files", done.stdout, re.MULTILINE)
    assert awaited is not None, done.stdout + done.stderr
    files = done.stdout.split("\n", 1)[1].split("retrieve:", 1)[0].split()
    assert int(awaited.group(1)) <= 6, done.stdout
    assert files[0].endswith("llama_index/retriever.py") and files[-1].endswith("async_http.py"), files
    assert not any(f.endswith(("served.py", "base.py", "call_policy.py", "bridge.py")) for f in files), files
