"""The relevance-judge hook every LLM-judged method shares: :func:`judge_relevance` and :func:`judge_from_options`.

LATTICE, llm-rerank, ARM verification, One-SHOT cropping and the iterative agent call :func:`judge_relevance` when
their ``llm=`` implements :class:`~retrievekit.core.llm.protocol.RelevanceJudge`; their bench factories read
``--judge DIR`` with :func:`judge_from_options`. Importing this module loads no model library (torch and
transformers load when a judge is loaded).

Examples:
    >>> class Half:
    ...     def score_relevance(self, query, candidates, *, trace=None):
    ...         return [0.5] * len(candidates)
    >>> judge_relevance(Half(), "q", ["a", "b"])
    [0.5, 0.5]
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace

__all__ = ["judge_from_options", "judge_relevance"]


def judge_relevance(judge: Any, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
    """One batched ``judge.score_relevance`` call, checked: one finite number per candidate, clipped to ``[0, 1]``.

    The shared hook every LLM-judged method uses when its ``llm=`` implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. Counts ``judge.calls`` and ``judge.candidates`` in
    ``trace``; out-of-range scores are clipped and counted (``judge.clipped``, with a note). A reply of the wrong
    length, or with a non-number, NaN or infinity, raises :class:`~retrievekit.core.errors.LLMOutputError` (the
    caller falls back and says so).

    Examples:
        >>> class Overlap:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         q = set(query.lower().split())
        ...         return [len(q & set(c.lower().split())) / len(q) for c in candidates]
        >>> t = Trace()
        >>> judge_relevance(Overlap(), "aspirin pain", ["aspirin relieves pain", "Rome"], trace=t)
        [1.0, 0.0]
        >>> t.counters["judge.calls"], t.counters["judge.candidates"]
        (1, 2)
        >>> judge_relevance(Overlap(), "q", [])
        []
    """
    texts = [str(c) for c in candidates]
    if not texts:
        return []
    if trace is not None:
        trace.count("judge.calls")
        trace.count("judge.candidates", len(texts))
    raw = judge.score_relevance(query, texts, trace=trace)
    try:
        values = [float(x) for x in raw]
    except (TypeError, ValueError) as e:
        raise LLMOutputError(f"the judge returned a non-number score ({e})", raw=str(raw)[:200]) from None
    if len(values) != len(texts):
        raise LLMOutputError(f"the judge returned {len(values)} scores for {len(texts)} candidates", raw=str(raw)[:200])
    if not all(math.isfinite(v) for v in values):
        raise LLMOutputError("the judge returned a NaN or infinite score", raw=str(raw)[:200])
    clipped = sum(1 for v in values if not 0.0 <= v <= 1.0)
    if clipped and trace is not None:
        trace.count("judge.clipped", clipped)
        trace.note("judge.clipped", f"{clipped} judge score(s) outside [0, 1] clipped")
    return [min(max(v, 0.0), 1.0) for v in values]


def judge_from_options(ctx: MethodContext) -> tuple[Any, dict[str, Any]]:
    """The judge named by option ``judge_dir`` (``retrievekit bench --judge DIR``) and the other options.

    Returns ``(None, options)`` when no judge is asked for; otherwise loads it with
    ``retrievekit.core.judge.load_judge`` and checks it implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. ``--judge zero-shot`` (when no folder of that name
    exists) gives the untrained ``Judge.zero_shot(--llm)`` instead (``ctx.llm`` when it is a loaded ``LocalLM``,
    else ``ctx.llm_name``): the same readout without fine-tuning, for trained-vs-zero-shot comparisons at the same
    budget of calls. Every method factory that accepts a judge calls this, so ``judge_dir`` never leaks into a
    method's own option parsing.

    Examples:
        >>> judge_from_options(MethodContext(corpus=[], options={"beam_size": 2}))
        (None, {'beam_size': 2})
        >>> judge_from_options(MethodContext(corpus=[], options={"judge_dir": ""}))
        (None, {})
    """
    opts = dict(ctx.options)
    judge_dir = opts.pop("judge_dir", None)
    if judge_dir is None or not str(judge_dir).strip():
        return None, opts
    from retrievekit.core.llm.protocol import RelevanceJudge

    try:  # the package, looked up at call time (tests put a scripted one in sys.modules)
        judge_pkg = importlib.import_module("retrievekit.core.judge")
    except ImportError as e:  # pragma: no cover - the judge package ships with retrievekit
        raise InvalidInputError(f"--judge needs retrievekit.core.judge, which failed to import: {e}") from e
    if str(judge_dir) == "zero-shot" and not Path(str(judge_dir)).exists():
        judge = judge_pkg.Judge.zero_shot(ctx.llm_name or "smollm2", llm=ctx.llm)
    else:
        judge = judge_pkg.load_judge(str(judge_dir))
    if not isinstance(judge, RelevanceJudge):
        raise InvalidInputError(f"the judge loaded from {judge_dir} has no score_relevance(query, candidates)")
    return judge, opts
