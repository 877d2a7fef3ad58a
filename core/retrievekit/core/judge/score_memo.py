"""A trained judge's scores kept across the runs of a benchmark sweep (``RETRIEVEKIT_JUDGE_MEMO_DIR``).

A sweep asks a local judge the same question many times: One-SHOT crops the same top chunks at budgets of 2k, 4k and
8k tokens, a method and its flat rerank judge the same candidates. With ``RETRIEVEKIT_JUDGE_MEMO_DIR`` set to a
folder, :meth:`~retrievekit.core.judge.scorer.Judge.score_pairs` looks each call up there (a
:class:`~retrievekit.core.memo.JsonlMemo`, shared by concurrent shards) before running the model. A call is keyed by
everything its scores depend on (the judge's manifest, base model, prompt and Platt parameters, and the exact pairs),
and the same pairs in the same order give the same batches, so a stored score is the one the model would give, bit
for bit. The trace gets the same cost either way (LLM calls, prompt tokens, ``judge.pairs``), so records made with
and without the memo agree on everything but their seconds. Unset (the default), nothing is stored.

Examples:
    >>> import os, tempfile
    >>> from retrievekit.core.trace import Trace
    >>> os.environ["RETRIEVEKIT_JUDGE_MEMO_DIR"] = tempfile.mkdtemp()
    >>> ran = []
    >>> def compute(trace):  # the model's cost, as Judge.margins records it
    ...     ran.append(1); trace.record_llm_call(prompt_tokens=12); trace.count("judge.pairs", 2)
    ...     return [0.25, 0.75]
    >>> pairs = [("q", "a"), ("q", "b")]
    >>> first, second = Trace(), Trace()
    >>> [memoized_scores(lambda: "judge-id", pairs, compute, trace=t) for t in (first, second)]
    [[0.25, 0.75], [0.25, 0.75]]
    >>> len(ran), second.llm_calls, second.prompt_tokens, second.counters["judge.pairs"]
    (1, 1, 12, 2)
    >>> del os.environ["RETRIEVEKIT_JUDGE_MEMO_DIR"]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from retrievekit.core.memo import JsonlMemo, memo_key
from retrievekit.core.trace import Trace

__all__ = ["ENV", "judge_identity", "memoized_scores"]

ENV = "RETRIEVEKIT_JUDGE_MEMO_DIR"
"""The environment variable naming the memo folder (unset: no memo)."""

_FORMAT_VERSION = 1
_MEMOS: dict[str, JsonlMemo] = {}
_LOCK = threading.Lock()


def _memo() -> JsonlMemo | None:
    folder = os.environ.get(ENV, "").strip()
    if not folder:
        return None
    with _LOCK:
        if folder not in _MEMOS:
            _MEMOS[folder] = JsonlMemo(folder, stem="judge-scores", version=_FORMAT_VERSION)
        return _MEMOS[folder]


def judge_identity(judge: Any) -> str:
    """A key for everything a judge's scores depend on besides its input: manifest (with its files' sha256), base
    model, prompt and Platt parameters.

    Examples:
        >>> class J:
        ...     manifest, base_model, prompt, platt, name = None, "my-model", "judge-chat-v1", (1.0, 0.0), "my-model"
        >>> judge_identity(J()) == judge_identity(J())
        True
    """
    manifest: Any = getattr(judge, "manifest", None)
    to_dict = getattr(manifest, "to_dict", None)
    described = to_dict() if callable(to_dict) else manifest
    parts = (judge.name, judge.base_model, repr(judge.prompt), tuple(judge.platt), described)
    return memo_key(*parts)


def memoized_scores(
    identity: Callable[[], str],
    pairs: Sequence[tuple[str, str]],
    compute: Callable[[Trace | None], list[float]],
    *,
    trace: Trace | None = None,
) -> list[float]:
    """``compute(trace)``'s scores of ``pairs``, from the memo when it holds them; the cost is added to ``trace`` the
    same way in both cases (see the module's docstring for a memo at work). ``identity()`` (the judge's key, see
    :func:`judge_identity`) is called only when a memo is set, so scoring without one costs nothing more.

    Examples:
        >>> memoized_scores(lambda: "judge-id", [("q", "a")], lambda trace: [0.5])  # no memo set: computed
        [0.5]
    """
    memo = _memo()
    if memo is None:
        return compute(trace)
    key = memo_key(identity(), [list(p) for p in pairs])
    hit = memo.get(key)
    if hit is None:
        spent = Trace()
        scores = [float(s) for s in compute(spent)]
        pairs_scored = spent.counters.get("judge.pairs", 0)
        hit = {"scores": scores, "calls": spent.llm_calls, "prompt_tokens": spent.prompt_tokens, "pairs": pairs_scored}
        memo.put(key, hit)
    if trace is not None:
        for i in range(int(hit["calls"])):  # the totals the model's batches recorded
            trace.record_llm_call(prompt_tokens=int(hit["prompt_tokens"]) if i == 0 else 0)
        if hit["pairs"]:
            trace.count("judge.pairs", hit["pairs"])
    return [float(s) for s in hit["scores"]]
