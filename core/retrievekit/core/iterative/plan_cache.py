"""The agent's search plan per question, recorded once and replayed: judge sweeps at a fixed plan.

A judge-accuracy sweep of the agent's judge-driven delete runs every question at many noise levels. The agent's own
model (tool calls and answer) costs about a minute a question with SmolLM2 on one CPU thread; the judge costs
nothing when it is the oracle. A :class:`PlanCache` stores the model's replies to a question (each reply's text,
tool calls and token usage, in order) the first time the question runs, and gives them back on every later run, so
the sweep spends the model once per question.

What replay means (a measurement choice, not a cache that is invisible): the replayed run makes the *same searches*
as the recorded run, while its working set follows what the judge of this run deletes. A model that reads its
working set would react to other deletions with other searches; replay holds that fixed, so a sweep that records
its plans in a run without a judge measures exactly what the delete changes at a given plan. The key is the model's
identity, the question, the agent's settings, its prompts and the corpus, never the judge. Stored in a
:class:`~retrievekit.core.memo.JsonlMemo` (``plans.<pid>.jsonl``), shared by concurrent shards.

Examples:
    >>> import tempfile
    >>> cache = PlanCache(tempfile.mkdtemp(), model="my-model", settings={"max_turns": 5}, corpus_ids=["a", "b"])
    >>> cache.get("Who?") is None
    True
    >>> cache.put("Who?", [{"content": "", "tool_calls": [{"name": "chunk_search", "args": {"query": "who"}}]},
    ...                    {"content": "Ada", "tool_calls": []}])
    >>> [r["content"] for r in cache.get("Who?")]
    ['', 'Ada']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.iterative.prompts import SYSTEM_PROMPT, SYSTEM_PROMPT_NO_DELETE, TOOL_DESCRIPTIONS
from retrievekit.core.memo import JsonlMemo, memo_key

__all__ = ["PlanCache"]

FORMAT_VERSION = 1
_PROMPTS = (SYSTEM_PROMPT, SYSTEM_PROMPT_NO_DELETE, sorted(TOOL_DESCRIPTIONS.items()))


def _check_reply(reply: Any) -> dict[str, Any]:
    """One reply as stored: ``content`` (str), ``tool_calls`` (``name`` + ``args``), optional ``usage``."""
    if not isinstance(reply, Mapping) or not isinstance(reply.get("content", ""), str):
        raise InvalidInputError(f"a plan reply must be a mapping with a text 'content'; got {reply!r}")
    calls = reply.get("tool_calls") or []
    if not all(isinstance(c, Mapping) and isinstance(c.get("name"), str) for c in calls):
        raise InvalidInputError(f"a plan reply's tool_calls must each have a 'name'; got {calls!r}")
    out: dict[str, Any] = {
        "content": reply.get("content", ""),
        "tool_calls": [{"name": c["name"], "args": dict(c.get("args") or {})} for c in calls],
    }
    if isinstance(reply.get("usage"), Mapping):
        out["usage"] = {str(k): int(v) for k, v in reply["usage"].items()}
    return out


class PlanCache:
    """Recorded agent replies per question, for one model, agent settings and corpus.

    Args:
        folder: the cache folder (created when missing).
        model: the identity of the agent's model (e.g. a model's registry name).
        settings: the agent settings the replies depend on (turns, top-k, fallback, delete, base retriever, token
            caps, ...); the judge is deliberately not one of them.
        corpus_ids: the ids of the searched collection (its fingerprint is part of every key).

    Examples:
        >>> import tempfile
        >>> c = PlanCache(tempfile.mkdtemp(), model="m", settings={}, corpus_ids=["a"])
        >>> c.key("q") == PlanCache(c.folder, model="m", settings={}, corpus_ids=["b"]).key("q")
        False
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        model: str,
        settings: Mapping[str, Any],
        corpus_ids: Iterable[str],
    ) -> None:
        self.model = str(model)
        self.settings = dict(settings)
        self._corpus = memo_key(sorted(str(i) for i in corpus_ids))
        self._memo = JsonlMemo(folder, stem="plans", version=FORMAT_VERSION)
        self.folder = self._memo.folder

    def __len__(self) -> int:
        return len(self._memo)

    def key(self, question: str) -> str:
        """The entry key of ``question`` under this cache's model, settings, prompts and corpus.

        Examples:
            >>> import tempfile
            >>> c = PlanCache(tempfile.mkdtemp(), model="m", settings={"max_turns": 5}, corpus_ids=[])
            >>> c.key("q") == c.key("q"), c.key("q") == c.key("r")
            (True, False)
        """
        return memo_key(FORMAT_VERSION, self.model, question, self.settings, _PROMPTS, self._corpus)

    def get(self, question: str) -> list[dict[str, Any]] | None:
        """The recorded replies to ``question`` in order, or None (also for a malformed entry).

        Examples:
            >>> import tempfile
            >>> PlanCache(tempfile.mkdtemp(), model="m", settings={}, corpus_ids=[]).get("q") is None
            True
        """
        d = self._memo.get(self.key(question))
        if d is None:
            return None
        try:
            replies = [_check_reply(r) for r in d["replies"]]
        except (KeyError, TypeError, ValueError):
            return None
        return replies or None

    def put(self, question: str, replies: Sequence[Mapping[str, Any]]) -> None:
        """Record the replies to ``question`` (at least one; each checked).

        Examples:
            >>> import tempfile
            >>> PlanCache(tempfile.mkdtemp(), model="m", settings={}, corpus_ids=[]).put("q", [])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: a plan needs at least one reply
        """
        if not replies:
            raise InvalidInputError("a plan needs at least one reply")
        self._memo.put(self.key(question), {"replies": [_check_reply(r) for r in replies]})
