"""A cache of ARM's information alignment (keywords and their corpus N-grams), keyed by everything that produced it.

Keyword alignment is ARM's per-question LLM cost that does not depend on the verifier: one constrained
decomposition plus one constrained beam search per keyword (about 10 s a question with SmolLM2 on one CPU thread).
A sweep that runs the same questions many times -- judges at several noise levels, with and without the MIP --
decodes each question once with a cache folder. An entry's key is a sha256 of the model's identity, the question,
the ids of the objects whose N-grams the keywords were aligned to, the alignment settings, and the prompts, so a
different model, corpus, setting or prompt never reuses an entry.

Each process appends to its own ``keywords.<pid>.jsonl`` (lines are flushed one by one; a truncated last line from a
killed process is ignored), and a cache reads every such file, so concurrent shards share what they decoded.

Examples:
    >>> import tempfile
    >>> from retrievekit.core.arm.keywords import KeywordAlignment
    >>> cache = KeywordCache(tempfile.mkdtemp(), model="smollm2")
    >>> key = cache.key("Who?", ["t1", "p2"], {"max_keywords": 3})
    >>> cache.get(key) is None
    True
    >>> cache.put(key, KeywordAlignment(["who"], {"who": ["who is"]}, "constrained"))
    >>> KeywordCache(cache.folder, model="smollm2").get(key).ngrams
    {'who': ['who is']}
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.arm.keywords import (
    DECOMPOSE_CONSTRAINED_PROMPT,
    DECOMPOSE_PROMPT,
    REPHRASE_PROMPT,
    SNAP_PROMPT,
    KeywordAlignment,
)
from retrievekit.core.paths import ensure_folder

__all__ = ["KeywordCache"]

FORMAT_VERSION = 1
_PROMPTS = (DECOMPOSE_PROMPT, SNAP_PROMPT, DECOMPOSE_CONSTRAINED_PROMPT, REPHRASE_PROMPT)


class KeywordCache:
    """Keyword alignments of one model, stored under ``folder``.

    Args:
        folder: the cache folder (created when missing).
        model: the identity of the model that decodes the keywords (e.g. ``"smollm2"``); part of every key.

    Examples:
        >>> import tempfile
        >>> len(KeywordCache(tempfile.mkdtemp(), model="m"))
        0
    """

    def __init__(self, folder: str | os.PathLike[str], *, model: str) -> None:
        self.folder = ensure_folder(Path(folder))
        self.model = str(model)
        self._entries: dict[str, KeywordAlignment] = {}
        self._own = self.folder / f"keywords.{os.getpid()}.jsonl"
        for path in sorted(self.folder.glob("keywords.*.jsonl")):
            self._load(path)

    def __len__(self) -> int:
        return len(self._entries)

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return  # unreadable: its entries are decoded again
        for line in lines:
            try:
                d = json.loads(line)
                if d.get("v") != FORMAT_VERSION:
                    continue
                self._entries[d["key"]] = KeywordAlignment(
                    list(d["keywords"]), {k: list(v) for k, v in d["ngrams"].items()}, d["mode"], d.get("fallback", "")
                )
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                continue  # a line cut short by a killed process

    def key(self, question: str, vocab_ids: Sequence[str], settings: Mapping[str, Any]) -> str:
        """The entry key of ``question`` aligned to the objects ``vocab_ids`` with ``settings``.

        Examples:
            >>> import tempfile
            >>> c = KeywordCache(tempfile.mkdtemp(), model="m")
            >>> c.key("q", ["a"], {}) == c.key("q", ["a"], {}), c.key("q", ["a"], {}) == c.key("q", ["b"], {})
            (True, False)
        """
        blob = json.dumps(
            [FORMAT_VERSION, self.model, question, list(vocab_ids), dict(sorted(settings.items())), _PROMPTS],
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> KeywordAlignment | None:
        """The stored alignment, or None."""
        return self._entries.get(key)

    def put(self, key: str, alignment: KeywordAlignment) -> None:
        """Store ``alignment`` (in memory and appended to this process's file)."""
        self._entries[key] = alignment
        line = {"v": FORMAT_VERSION, "key": key, "keywords": alignment.keywords, "ngrams": alignment.ngrams,
                "mode": alignment.mode, "fallback": alignment.fallback}  # fmt: skip
        with open(self._own, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
            f.flush()
