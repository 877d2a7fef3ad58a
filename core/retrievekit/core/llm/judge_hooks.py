"""The relevance-judge hook every LLM-judged method shares: :func:`judge_relevance` and :func:`judge_from_options`.

LATTICE, llm-rerank, ARM verification, One-SHOT cropping and the iterative agent call :func:`judge_relevance` when
their ``llm=`` implements :class:`~retrievekit.core.llm.protocol.RelevanceJudge`; their bench factories read
``--judge DIR`` with :func:`judge_from_options`. Importing this module loads no model library (torch and
transformers load when a judge is loaded).

Each caller passes ``refs``: for every candidate, the ids of the corpus objects it stands for (a LATTICE node: the
leaves of its subtree; an ARM object or an agent's chunk: itself; a One-SHOT sentence: its passage). The hook
records them with the scores in ``trace.judged`` (:class:`~retrievekit.core.trace.JudgedBatch`), from which
``retrievekit bench`` measures the judge's accuracy on the candidates it scored; a judge that declares
``needs_refs = True`` (the gold-label :class:`~retrievekit.core.judge.oracle.OracleJudge`) also receives them as
``score_relevance(..., refs=...)``. Other judges are called exactly as before.

Examples:
    >>> class Half:
    ...     def score_relevance(self, query, candidates, *, trace=None):
    ...         return [0.5] * len(candidates)
    >>> judge_relevance(Half(), "q", ["a", "b"])
    [0.5, 0.5]
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.llm.judge_choice import (
    JUDGES,
    ORACLE,
    JudgeSpec,
    build_judge,
    load_judge_by_path,
    parse_judge,
    parse_oracle,
    resolve_judge,
)
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import JudgedBatch, Trace

__all__ = [
    "JUDGES",
    "NON_FINITE_SCORES",
    "JudgeSpec",
    "ORACLE",
    "ajudge_relevance",
    "describe_judge",
    "judge_from_options",
    "judge_relevance",
    "load_judge_by_path",
    "parse_judge",
    "parse_oracle",
    "resolve_judge",
]

NON_FINITE_SCORES = "the judge returned a NaN or infinite score"
"""The message of the ``LLMOutputError`` of a reply holding NaN or infinity (a caller that leaves such a question out,
as ``retrievekit advise`` does, tells it from the other failures by it)."""


def describe_judge(judge: Any) -> dict[str, Any]:
    """``{"name", "noise", "uses_gold_labels"}`` of a judge, as a benchmark result reports it.

    ``name`` is the judge's ``judge_name`` attribute, else its ``repr`` when its class defines one (a trained
    :class:`~retrievekit.core.judge.Judge` names its base model, prompt and calibration), else its class name;
    ``uses_gold_labels`` and ``noise`` come from the judge's attributes of those names (the oracle's).

    Examples:
        >>> class Half:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.5] * len(candidates)
        >>> describe_judge(Half())
        {'name': 'Half', 'noise': None, 'uses_gold_labels': False}
    """
    gold = bool(getattr(judge, "uses_gold_labels", False))
    name = getattr(judge, "judge_name", None)
    if not isinstance(name, str):
        name = repr(judge) if type(judge).__repr__ is not object.__repr__ else type(judge).__name__
    noise = getattr(judge, "noise", None) if gold else None
    return {"name": name[:200], "noise": float(noise) if noise is not None else None, "uses_gold_labels": gold}


def _check_refs(refs: Sequence[Collection[str]] | None, n: int) -> tuple[AbstractSet[str], ...] | None:
    """``refs`` as one set of ids per candidate (shared when already a set, lazy ones included: a LATTICE node's
    leaves are listed only if read), checked against ``n``."""
    if refs is None:
        return None
    if len(refs) != n:
        raise InvalidInputError(f"judge_relevance got {len(refs)} refs for {n} candidates")
    out: list[AbstractSet[str]] = []
    for r in refs:
        if isinstance(r, str):
            raise InvalidInputError(f"each refs item is a collection of object ids, not one string ({r!r})")
        if isinstance(r, frozenset) or (isinstance(r, AbstractSet) and not isinstance(r, set)):
            out.append(r)  # shared as it is (a LATTICE node's lazy leaves included)
        else:
            out.append(frozenset(str(x) for x in r))
    return tuple(out)


def judge_relevance(
    judge: Any,
    query: str,
    candidates: Sequence[str],
    *,
    trace: Trace | None = None,
    refs: Sequence[Collection[str]] | None = None,
) -> list[float]:
    """One batched ``judge.score_relevance`` call, checked: one finite number per candidate, clipped to ``[0, 1]``.

    The shared hook every LLM-judged method uses when its ``llm=`` implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. Counts ``judge.calls`` and ``judge.candidates`` in
    ``trace``; out-of-range scores are clipped and counted (``judge.clipped``, with a note). A reply of the wrong
    length, or with a non-number, NaN or infinity, raises :class:`~retrievekit.core.errors.LLMOutputError` (the
    caller falls back and says so).

    ``refs`` (one collection of object ids per candidate: what it stands for) are recorded with the scores in
    ``trace.judged`` and passed on to a judge whose class sets ``needs_refs = True``; such a judge without
    ``refs`` raises :class:`~retrievekit.core.errors.InvalidInputError`.

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
    texts, ref_sets, extra = _judge_request(judge, candidates, refs, trace)
    if not texts:
        return []
    return _checked_scores(judge, judge.score_relevance(query, texts, trace=trace, **extra), texts, ref_sets, trace)


async def ajudge_relevance(
    judge: Any,
    query: str,
    candidates: Sequence[str],
    *,
    trace: Trace | None = None,
    refs: Sequence[Collection[str]] | None = None,
) -> list[float]:
    """:func:`judge_relevance` awaited: ``await judge.ascore_relevance(...)`` (a served judge's requests as tasks of
    the caller's loop), with the same checks, counts and records; a judge without an async form is called on the
    bridge's bounded pool.

    Examples:
        >>> import asyncio
        >>> class Half:
        ...     async def ascore_relevance(self, query, candidates, *, trace=None):
        ...         return [0.5] * len(candidates)
        >>> asyncio.run(ajudge_relevance(Half(), "q", ["a", "b"]))
        [0.5, 0.5]
    """
    if not hasattr(judge, "ascore_relevance"):
        from retrievekit.core.llm.bridge import run_in_pool

        return await run_in_pool(_judge_with_refs, judge, query, candidates, trace, refs)
    texts, ref_sets, extra = _judge_request(judge, candidates, refs, trace)
    if not texts:
        return []
    raw = await judge.ascore_relevance(query, texts, trace=trace, **extra)
    return _checked_scores(judge, raw, texts, ref_sets, trace)


def _judge_with_refs(
    judge: Any, query: str, candidates: Sequence[str], trace: Trace | None, refs: Sequence[Collection[str]] | None
) -> list[float]:
    return judge_relevance(judge, query, candidates, trace=trace, refs=refs)


def _judge_request(
    judge: Any, candidates: Sequence[str], refs: Sequence[Collection[str]] | None, trace: Trace | None
) -> tuple[list[str], tuple[AbstractSet[str], ...] | None, dict[str, Any]]:
    """The candidates as texts, their refs checked, and the keyword arguments of the judge's call (``refs`` for a
    judge that needs them); the call counted in ``trace``."""
    texts = [str(c) for c in candidates]
    ref_sets = _check_refs(refs, len(texts))
    if not texts:
        return texts, ref_sets, {}
    needs_refs = bool(getattr(judge, "needs_refs", False))
    if needs_refs and ref_sets is None:
        raise InvalidInputError(
            f"{type(judge).__name__} needs refs= (the object ids each candidate stands for); this caller gave none"
        )
    if trace is not None:
        trace.count("judge.calls")
        trace.count("judge.candidates", len(texts))
    return texts, ref_sets, ({"refs": ref_sets} if needs_refs else {})


def _checked_scores(
    judge: Any, raw: Any, texts: list[str], ref_sets: tuple[AbstractSet[str], ...] | None, trace: Trace | None
) -> list[float]:
    """The judge's reply checked (one finite, plausible number per text), clipped, and recorded with its refs."""
    values = _scores_of(raw)
    if len(values) != len(texts):
        raise LLMOutputError(f"the judge returned {len(values)} scores for {len(texts)} candidates", raw=str(raw)[:200])
    if not all(math.isfinite(v) for v in values):
        raise LLMOutputError(NON_FINITE_SCORES, raw=str(raw)[:200])
    wild = [v for v in values if not _PLAUSIBLE[0] <= v <= _PLAUSIBLE[1]]
    if wild:  # not a probability off by rounding: a broken judge, whose ranking nothing should rest on
        raise LLMOutputError(f"the judge returned a score far outside [0, 1] ({wild[0]!r})", raw=str(raw)[:200])
    clipped = sum(1 for v in values if not 0.0 <= v <= 1.0)
    if clipped and trace is not None:
        trace.count("judge.clipped", clipped)
        trace.note("judge.clipped", f"{clipped} judge score(s) outside [0, 1] clipped")
    scores = [min(max(v, 0.0), 1.0) for v in values]
    if trace is not None and ref_sets is not None:
        trace.judged.append(JudgedBatch(describe_judge(judge), ref_sets, tuple(scores)))
    return scores


_TEXT = (str, bytes, bytearray)
_PLAUSIBLE = (-1.0, 2.0)
"""Scores outside ``[0, 1]`` but inside this range are clipped (and noted); outside it, the judge is refused."""


def _is_sequence(raw: Any) -> bool:
    """A list, tuple or array: sized and indexable (a generator or an iterator is not: it cannot be checked whole)."""
    return isinstance(raw, Sequence) or (
        hasattr(raw, "__len__") and hasattr(raw, "__getitem__") and hasattr(raw, "shape")
    )


def _scores_of(raw: Any) -> list[float]:
    """The judge's reply as floats: a sequence (list, tuple, array) of numbers, nothing else. A string, bytes, a
    mapping, a generator is refused whole (iterating it would give characters, keys or a one-shot stream), and so is
    an element that is text or a boolean (``True`` is no probability)."""
    if isinstance(raw, (*_TEXT, Mapping)) or not isinstance(raw, Iterable) or not _is_sequence(raw):
        raise LLMOutputError(f"the judge returned a {type(raw).__name__}, not a list of scores", raw=str(raw)[:200])
    values = []
    for x in raw:
        if isinstance(x, _TEXT) or not hasattr(x, "__float__") or _is_bool(x):
            raise LLMOutputError(f"the judge returned a non-number score ({x!r})", raw=str(raw)[:200])
        values.append(float(x))
    return values


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or type(x).__name__ in ("bool", "bool_")  # numpy's bool too (np.bool, np.bool_)


def judge_from_options(ctx: MethodContext) -> tuple[Any, dict[str, Any]]:
    """The judge named by option ``judge_dir`` (``retrievekit bench --judge DIR``, or a
    :class:`~retrievekit.core.llm.judge_choice.JudgeSpec`) and the other options.

    Returns ``(None, options)`` when no judge is asked for; otherwise reads the value once
    (:func:`~retrievekit.core.llm.judge_choice.parse_judge`), builds it
    (:func:`~retrievekit.core.llm.judge_choice.build_judge`: a trained judge with
    ``retrievekit.core.judge.load_judge``, a judge registered by name) and checks it implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. ``--judge zero-shot`` (when no folder of that name
    exists) gives the untrained ``Judge.zero_shot(--llm)`` instead (``ctx.llm``: a loaded ``LocalLM`` or a model's
    name): the same readout without fine-tuning, for trained-vs-zero-shot comparisons at the same
    budget of calls. ``--judge cosine`` gives the embedding-cosine judge
    (:class:`~retrievekit.core.judge.cosine.CosineJudge`); ``--judge served`` the served ``--llm CLIENT:MODEL@URL``
    as a pointwise Yes/No judge (:class:`~retrievekit.core.judge.served.ServedJudge`). A ready judge in ``ctx.judge`` is returned as it is
    (``judge_dir`` then only names it): that is how the benchmark harness hands a method the gold-label oracle of
    ``--judge oracle[:S]``, which nothing else can build (it needs the dataset's qrels). Every method factory that
    accepts a judge calls this, so ``judge_dir`` never leaks into a method's own option parsing.

    Examples:
        >>> judge_from_options(MethodContext(corpus=[], options={"beam_size": 2}))
        (None, {'beam_size': 2})
        >>> judge_from_options(MethodContext(corpus=[], options={"judge_dir": ""}))
        (None, {})
        >>> judge_from_options(MethodContext(corpus=[], options={"judge_dir": "oracle:0.2"}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --judge oracle:0.2 reads the dataset's gold labels, so only the benchmark harness can build it (retrievekit bench, or run_benchmark with options={'judge_dir': 'oracle:0.2'})
    """
    opts = dict(ctx.options)
    judge_dir = opts.pop("judge_dir", None)
    if ctx.judge is not None:
        return ctx.judge, opts
    return build_judge(judge_dir, ctx), opts
