"""A benchmark's record file: one JSON line per finished row, so a rerun skips the rows already measured.

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.jsonl"
    >>> recorded_rows(path)
    []
    >>> row = keep_row({"method": "bm25"}, path)  # doctest: +ELLIPSIS
    {"method": "bm25", "load_average": ...}
    >>> [r["method"] for r in recorded_rows(path)]
    ['bm25']
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["append_row", "keep_row", "recorded_rows"]


def recorded_rows(path: Path | None) -> list[dict[str, Any]]:
    """The rows ``path`` holds (none when it is not given or does not exist yet)."""
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append_row(row: dict[str, Any], path: Path | None) -> None:
    """Append ``row`` to ``path`` as one JSON line (its folder made; nothing when ``path`` is None)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def keep_row(row: dict[str, Any], path: Path | None) -> dict[str, Any]:
    """A finished row: the machine's load average added, appended to ``path`` and printed at once; returns it."""
    row["load_average"] = round(os.getloadavg()[0], 2)
    append_row(row, path)
    print(json.dumps(row), flush=True)
    return row
