"""A folder of results keyed by what produced them, shared by the processes of a sweep.

Benchmark sweeps run the same questions many times (judges at several noise levels, with and without a stage), and
some per-question work does not depend on what varies: ARM's keyword alignment, the iterative agent's search plan.
:class:`JsonlMemo` stores such results once. Each process appends to its own ``<stem>.<pid>.jsonl`` (a line is
flushed as it is written; a line cut short by a killed process is ignored when read back) and reads every
``<stem>.*.jsonl`` of the folder, so concurrent shards share what they computed. A line is
``{"v": version, "key": key, **fields}``; lines of another version are ignored, so a format change recomputes
instead of misreading. :func:`memo_key` makes keys: a sha256 of everything the result depends on.

Examples:
    >>> import tempfile
    >>> memo = JsonlMemo(tempfile.mkdtemp(), stem="plans", version=1)
    >>> key = memo_key("my-model", "Who?", {"turns": 5})
    >>> memo.get(key) is None
    True
    >>> memo.put(key, {"answer": "Ada"})
    >>> JsonlMemo(memo.folder, stem="plans", version=1).get(key)
    {'answer': 'Ada'}
    >>> JsonlMemo(memo.folder, stem="plans", version=2).get(key) is None  # another format: recomputed
    True
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.paths import ensure_folder

__all__ = ["JsonlMemo", "memo_key"]

_RESERVED = ("v", "key")


def memo_key(*parts: Any) -> str:
    """The sha256 of ``parts`` as canonical JSON (mappings with sorted keys; other objects by ``str``).

    Examples:
        >>> memo_key("m", {"a": 1, "b": 2}) == memo_key("m", {"b": 2, "a": 1})
        True
        >>> memo_key("m", "q1") == memo_key("m", "q2")
        False
    """
    blob = json.dumps(list(parts), ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JsonlMemo:
    """Keyed JSON records under ``folder``, one append-only file per process.

    Args:
        folder: the memo folder (created when missing).
        stem: the files' name stem (``<stem>.<pid>.jsonl``); memos with different stems share a folder safely.
        version: the record format; lines of another version are ignored.

    Examples:
        >>> import tempfile
        >>> len(JsonlMemo(tempfile.mkdtemp(), stem="x", version=1))
        0
    """

    def __init__(self, folder: str | os.PathLike[str], *, stem: str, version: int) -> None:
        self.folder = ensure_folder(Path(folder))
        self.stem = str(stem)
        self.version = int(version)
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._own = self.folder / f"{self.stem}.{os.getpid()}.jsonl"
        for path in sorted(self.folder.glob(f"{self.stem}.*.jsonl")):
            self._load(path)

    def __len__(self) -> int:
        return len(self._entries)

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return  # unreadable: its entries are computed again
        for line in lines:
            try:
                d = json.loads(line)
                if d.get("v") != self.version:
                    continue
                self._entries[str(d["key"])] = {k: v for k, v in d.items() if k not in _RESERVED}
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                continue  # a line cut short by a killed process

    def get(self, key: str) -> dict[str, Any] | None:
        """The fields stored under ``key``, or None.

        Examples:
            >>> import tempfile
            >>> JsonlMemo(tempfile.mkdtemp(), stem="x", version=1).get("k") is None
            True
        """
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, fields: dict[str, Any]) -> None:
        """Store ``fields`` under ``key`` (in memory and appended to this process's file).

        Examples:
            >>> import tempfile
            >>> JsonlMemo(tempfile.mkdtemp(), stem="x", version=1).put("k", {"v": 1})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: memo fields cannot be named v or key; got ['v']
        """
        clash = sorted(set(fields) & set(_RESERVED))
        if clash:
            raise InvalidInputError(f"memo fields cannot be named v or key; got {clash}")
        line = json.dumps({"v": self.version, "key": key, **fields}, ensure_ascii=False)
        with self._lock:
            self._entries[key] = dict(fields)
            with open(self._own, "a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
