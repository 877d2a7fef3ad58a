"""Kill points of a living index's change, installed in a child process the SIGKILL tests start: before the change
commits (``live/``'s manifest not yet written, or its change-log line not yet appended), half-way through the
append of its change-log line (``"mid_append"``: a torn last line), between the commit's two renames (the old
``live/`` moved aside, the new one not yet in place), or after it (the test's script kills itself once the change
returns). :func:`run_killed` starts that child process and checks that it was killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

from _paths import REPO

WHENS = ("before_commit", "mid_append", "between_renames", "after_commit")
"""Every kill point, for a test's parametrisation."""


def kill_at(when: str) -> None:
    """Make this process SIGKILL itself at ``when`` (``"before_commit"``, ``"mid_append"``, ``"between_renames"``;
    ``"after_commit"`` is :func:`kill_after`'s) during the next change of a ``LiveIndex``. For
    ``"between_renames"`` the change is folded (``live/`` written whole, in two renames) instead of appended."""
    import retrievekit.core.index.live as live
    import retrievekit.core.index.live_log as live_log

    if when == "between_renames":
        live_log.FOLD_MIN_BYTES = live_log.FOLD_AT = 0

    real_manifest, real_replace, real_append = live.write_manifest, os.replace, live_log._append_bytes

    def append_bytes(fd: int, data: bytes, at: int) -> None:  # the change's log line: the commit of a small change
        if when == "before_commit":
            os.kill(os.getpid(), signal.SIGKILL)
        if when == "mid_append":
            real_append(fd, data[: len(data) // 2], at)
            os.fsync(fd)
            os.kill(os.getpid(), signal.SIGKILL)
        real_append(fd, data, at)

    def write_manifest(folder: Any, *a: Any, **kw: Any) -> Any:  # the parts written in the new live/, not committed
        if when == "before_commit":
            os.kill(os.getpid(), signal.SIGKILL)
        return real_manifest(folder, *a, **kw)

    def replace(src: Any, dst: Any, *a: Any, **kw: Any) -> Any:  # live/ moved aside, its new copy not yet in place
        real_replace(src, dst, *a, **kw)
        name = os.fspath(dst).rsplit("/", 1)[-1]
        if when == "between_renames" and ".old-" in os.fspath(dst) and name.startswith(".live"):
            os.kill(os.getpid(), signal.SIGKILL)

    live.write_manifest, os.replace, live_log._append_bytes = write_manifest, replace, append_bytes


def kill_after(when: str) -> None:
    """SIGKILL this process now if ``when`` is ``"after_commit"`` (the change has returned)."""
    if when == "after_commit":
        os.kill(os.getpid(), signal.SIGKILL)


def run_killed(script: str, *args: object) -> None:
    """Run ``script`` (a test's indented source) in a child Python with ``tests/`` on its path and ``args`` as its
    arguments, and check that it ended by SIGKILL (else the tail of its stderr is the failure's message)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-c", textwrap.dedent(script), *map(str, args)]
    proc = subprocess.run(cmd, env=env, timeout=300, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
