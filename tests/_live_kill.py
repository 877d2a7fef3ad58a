"""Kill points of a living index's change, installed in a child process the SIGKILL tests start: before the change
commits (``live/``'s manifest not yet written), between the commit's two renames (the old ``live/`` moved aside, the
new one not yet in place), or after it (the test's script kills itself once the change returns)."""

from __future__ import annotations

import os
import signal
from typing import Any


def kill_at(when: str) -> None:
    """Make this process SIGKILL itself at ``when`` (``"before_commit"``, ``"between_renames"``; ``"after_commit"``
    is :func:`kill_after`'s) during the next change of a ``LiveIndex``."""
    import retrievekit.core.index.live as live

    real_manifest, real_replace = live.write_manifest, os.replace

    def write_manifest(folder: Any, *a: Any, **kw: Any) -> Any:  # the parts written in the new live/, not committed
        if when == "before_commit":
            os.kill(os.getpid(), signal.SIGKILL)
        return real_manifest(folder, *a, **kw)

    def replace(src: Any, dst: Any, *a: Any, **kw: Any) -> Any:  # live/ moved aside, its new copy not yet in place
        real_replace(src, dst, *a, **kw)
        name = os.fspath(dst).rsplit("/", 1)[-1]
        if when == "between_renames" and ".old-" in os.fspath(dst) and name.startswith(".live"):
            os.kill(os.getpid(), signal.SIGKILL)

    live.write_manifest, os.replace = write_manifest, replace


def kill_after(when: str) -> None:
    """SIGKILL this process now if ``when`` is ``"after_commit"`` (the change has returned)."""
    if when == "after_commit":
        os.kill(os.getpid(), signal.SIGKILL)
