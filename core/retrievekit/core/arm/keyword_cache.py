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
    >>> cache = KeywordCache(tempfile.mkdtemp(), model="my-model")
    >>> key = cache.key("Who?", ["t1", "p2"], {"max_keywords": 3})
    >>> cache.get(key) is None
    True
    >>> cache.put(key, KeywordAlignment(["who"], {"who": ["who is"]}, "constrained"))
    >>> KeywordCache(cache.folder, model="my-model").get(key).ngrams
    {'who': ['who is']}
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from retrievekit.core.arm.keywords import (
    DECOMPOSE_CONSTRAINED_PROMPT,
    DECOMPOSE_PROMPT,
    REPHRASE_PROMPT,
    SNAP_PROMPT,
    KeywordAlignment,
)
from retrievekit.core.memo import JsonlMemo, memo_key

__all__ = ["KeywordCache"]

FORMAT_VERSION = 1
_PROMPTS = (DECOMPOSE_PROMPT, SNAP_PROMPT, DECOMPOSE_CONSTRAINED_PROMPT, REPHRASE_PROMPT)


class KeywordCache:
    """Keyword alignments of one model, stored under ``folder`` (a :class:`~retrievekit.core.memo.JsonlMemo`).

    Args:
        folder: the cache folder (created when missing).
        model: the identity of the model that decodes the keywords (e.g. a model's registry name); part of every key.

    Examples:
        >>> import tempfile
        >>> len(KeywordCache(tempfile.mkdtemp(), model="m"))
        0
    """

    def __init__(self, folder: str | os.PathLike[str], *, model: str) -> None:
        self.model = str(model)
        self._memo = JsonlMemo(folder, stem="keywords", version=FORMAT_VERSION)
        self.folder = self._memo.folder

    def __len__(self) -> int:
        return len(self._memo)

    def key(self, question: str, vocab_ids: Sequence[str], settings: Mapping[str, Any]) -> str:
        """The entry key of ``question`` aligned to the objects ``vocab_ids`` with ``settings``.

        Examples:
            >>> import tempfile
            >>> c = KeywordCache(tempfile.mkdtemp(), model="m")
            >>> c.key("q", ["a"], {}) == c.key("q", ["a"], {}), c.key("q", ["a"], {}) == c.key("q", ["b"], {})
            (True, False)
        """
        return memo_key(FORMAT_VERSION, self.model, question, list(vocab_ids), dict(settings), _PROMPTS)

    def get(self, key: str) -> KeywordAlignment | None:
        """The stored alignment, or None (also for an entry whose fields are malformed)."""
        d = self._memo.get(key)
        if d is None:
            return None
        try:
            ngrams = {str(k): [str(x) for x in v] for k, v in d["ngrams"].items()}
            return KeywordAlignment([str(k) for k in d["keywords"]], ngrams, str(d["mode"]), str(d.get("fallback", "")))
        except (KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, alignment: KeywordAlignment) -> None:
        """Store ``alignment`` (in memory and appended to this process's file)."""
        fields = {"keywords": alignment.keywords, "ngrams": alignment.ngrams, "mode": alignment.mode,
                  "fallback": alignment.fallback}  # fmt: skip
        self._memo.put(key, fields)
