"""Per-query traces: LLM calls, tokens, seconds per stage, and recorded fallbacks.

Every method fills a :class:`Trace` so users (and ``retrievekit bench``) can
see what a query cost and where it degraded gracefully.

Each framework retriever, postprocessor and compressor also keeps its latest trace in ``last_trace``; that attribute
is shared by every thread and task using the object. To get the trace of *your* call when calls run concurrently,
wrap the call in :func:`capture_traces`: it collects the traces of the retrievekit calls made in the current context
(this thread, or this asyncio task and what it awaits), and no other.

Examples:
    >>> t = Trace()
    >>> with t.stage("retrieve"):
    ...     pass
    >>> t.record_llm_call(prompt_tokens=12, completion_tokens=3)
    >>> t.note("fallback", "LLM reply was not JSON; used the uncropped chunk")
    >>> t.llm_calls, t.prompt_tokens, sorted(t.stage_seconds)
    (1, 12, ['retrieve'])
    >>> t.events[0].kind
    'fallback'
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JudgedBatch", "Trace", "TraceEvent", "capture_traces", "publish"]


@dataclass(frozen=True)
class TraceEvent:
    """Something noteworthy that happened during a query (a fallback, a repair, a drop).

    Examples:
        >>> TraceEvent(kind="repair", message="stripped code fence").kind
        'repair'
    """

    kind: str
    message: str
    stage: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgedBatch:
    """One relevance-judge call whose candidates came with the objects they stand for (``judge_relevance(refs=)``).

    Attributes:
        judge: ``{"name", "noise", "uses_gold_labels"}`` of the judge that scored them.
        refs: per candidate, the ids of the corpus objects it stands for (a LATTICE node: its subtree's leaves).
        scores: the scores the method used (after clipping to ``[0, 1]``), aligned to ``refs``.

    ``retrievekit bench`` turns them into the judge's accuracy on the candidates it scored
    (:mod:`retrievekit.core.eval.judge_accuracy`).

    Examples:
        >>> JudgedBatch({"name": "oracle"}, (frozenset({"d1"}),), (1.0,)).scores
        (1.0,)
    """

    judge: Mapping[str, Any]
    refs: tuple[Collection[str], ...]
    scores: tuple[float, ...]


@dataclass
class Trace:
    """Mutable per-query account of cost and events.

    Attributes:
        llm_calls: number of LLM calls (chat or scoring) made.
        prompt_tokens: total prompt tokens sent.
        completion_tokens: total tokens generated.
        stage_seconds: wall seconds per named stage (nested stages both count).
        events: fallbacks, repairs and other recorded decisions, in order.
        counters: method-specific numbers per query (e.g. ``retrieval_calls``, ``context_tokens``);
            ``retrievekit bench`` averages them into ``counters_per_query``.
        judged: the relevance-judge calls made with ``refs`` (:class:`JudgedBatch`), for the judge's accuracy;
            left out of :meth:`to_dict` (a LATTICE node stands for a whole subtree of ids).
        query: the query the trace belongs to (set by the framework edges; None when not known).

    Examples:
        >>> a, b = Trace(), Trace()
        >>> a.record_llm_call(1, 1); b.record_llm_call(2, 2)
        >>> a.merge(b).llm_calls
        2
    """

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    events: list[TraceEvent] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)
    judged: list[JudgedBatch] = field(default_factory=list, repr=False)
    query: str | None = None
    _stack: list[str] = field(default_factory=list, repr=False)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a named stage; repeated stages accumulate.

        Examples:
            >>> t = Trace()
            >>> with t.stage("a"):
            ...     pass
            >>> t.stage_seconds["a"] >= 0
            True
        """
        start = time.perf_counter()
        self._stack.append(name)
        try:
            yield
        finally:
            self._stack.pop()
            self.stage_seconds[name] = self.stage_seconds.get(name, 0.0) + (time.perf_counter() - start)

    def record_llm_call(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        """Count one LLM call and its tokens.

        Examples:
            >>> t = Trace(); t.record_llm_call(5, 2); t.completion_tokens
            2
        """
        self.llm_calls += 1
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)

    def note(self, kind: str, message: str, **data: Any) -> None:
        """Record an event (a fallback, a repair, a dropped chunk) in the current stage.

        Examples:
            >>> t = Trace(); t.note("fallback", "used BM25"); t.events[0].message
            'used BM25'
        """
        self.events.append(
            TraceEvent(kind=kind, message=message, stage=self._stack[-1] if self._stack else None, data=data)
        )

    def count(self, name: str, value: float = 1) -> None:
        """Add ``value`` to the named counter (created at 0).

        Examples:
            >>> t = Trace(); t.count("retrieval_calls"); t.count("retrieval_calls", 2); t.counters
            {'retrieval_calls': 3}
        """
        self.counters[name] = self.counters.get(name, 0) + value

    @property
    def total_seconds(self) -> float:
        """Seconds of top-level stages (the sum of all stage times can double-count nesting)."""
        return sum(self.stage_seconds.values())

    def merge(self, other: Trace) -> Trace:
        """Add another trace's counts, stage times, events and judged batches into this one; returns self.

        Examples:
            >>> Trace().merge(Trace()).llm_calls
            0
        """
        self.llm_calls += other.llm_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        for k, v in other.stage_seconds.items():
            self.stage_seconds[k] = self.stage_seconds.get(k, 0.0) + v
        self.events.extend(other.events)
        for k, c in other.counters.items():
            self.count(k, c)
        self.judged.extend(other.judged)
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe view (``counters`` only when some were set).

        Examples:
            >>> sorted(Trace().to_dict())
            ['completion_tokens', 'events', 'llm_calls', 'prompt_tokens', 'stage_seconds']
        """
        out: dict[str, Any] = {
            "llm_calls": self.llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "stage_seconds": dict(self.stage_seconds),
            "events": [{"kind": e.kind, "message": e.message, "stage": e.stage, "data": e.data} for e in self.events],
        }
        if self.counters:
            out["counters"] = dict(self.counters)
        if self.query is not None:
            out["query"] = self.query
        return out


_CAPTURE: ContextVar[list[Trace] | None] = ContextVar("retrievekit_trace_capture", default=None)


@contextmanager
def capture_traces() -> Iterator[list[Trace]]:
    """Collect the traces of the retrievekit calls made inside the ``with`` block, in this context only.

    The list fills as calls finish: the traces of this thread's calls, or of this asyncio task's (and of the
    executor threads it awaits, which run in a copy of its context); never another thread's or task's. This is the
    race-free way to get your call's trace; ``last_trace`` is shared by everyone using the object. Blocks nest: a
    call is collected by the innermost one.

    Examples:
        >>> with capture_traces() as traces:
        ...     publish(Trace(query="first"))
        >>> [t.query for t in traces]
        ['first']
    """
    bucket: list[Trace] = []
    token = _CAPTURE.set(bucket)
    try:
        yield bucket
    finally:
        _CAPTURE.reset(token)


def publish(trace: Trace) -> None:
    """Hand a finished call's trace to the enclosing :func:`capture_traces` block, if any (the framework edges call
    this next to setting ``last_trace``).

    Examples:
        >>> publish(Trace())  # outside any capture block: nothing happens
    """
    bucket = _CAPTURE.get()
    if bucket is not None:
        bucket.append(trace)
