"""The package as it was at a commit, for before/after benchmarks run side by side in one sitting."""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def export_package(commit: str, dest: Path) -> str:
    """Export ``core/`` and ``integrations/`` of ``commit`` under ``dest`` (``git archive``); returns the
    ``PYTHONPATH`` that makes a child process import that version of retrievekit."""
    with tempfile.TemporaryFile() as f:
        subprocess.run(["git", "archive", commit, "core", "integrations"], cwd=REPO, stdout=f, check=True)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(dest, filter="data")
    return f"{dest / 'core'}{os.pathsep}{dest / 'integrations'}"
