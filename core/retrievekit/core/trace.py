"""Per-query traces: LLM calls, tokens, seconds per stage, and recorded fallbacks.

Every method fills a :class:`Trace` so users (and ``retrievekit bench``) can
see what a query cost and where it degraded gracefully.

Three ways to get the trace of *your* call when one object serves concurrent callers, none of which sees another
caller's trace:

- a method that returns the trace with the results: :func:`retrievekit.core.retriever.search_with_trace` for a core
  retriever, ``retrieve_with_trace`` / ``aretrieve_with_trace`` on the LlamaIndex retriever and ``invoke_with_trace``
  / ``ainvoke_with_trace`` on the LangChain one;
- :func:`capture_traces`: a ``with`` block that collects the traces of the retrievekit calls made inside it, in this
  thread or asyncio task and in the threads and tasks that inherit its context;
- ``last_trace`` on every framework retriever, postprocessor and compressor: the trace of the last call made from
  the current thread, or from the current asyncio task (:func:`last_trace_property`).

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

import asyncio
import dataclasses
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from retrievekit.core.renamed import Counters, counter_name

__all__ = [
    "NO_STAGE",
    "JudgedBatch",
    "Trace",
    "TraceEvent",
    "capture_traces",
    "last_trace_property",
    "publish",
    "recall",
    "remember",
    "share_scope",
]


NO_STAGE = "(none)"
"""The stage name of LLM calls and events recorded outside any :meth:`Trace.stage`."""


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
        llm_calls: number of LLM calls (chat or scoring) made; for a served LLM, every request sent (failed ones
            too).
        llm_rounds: LLM calls on the critical path: calls made one after another count one each, calls made at
            once (:meth:`merge_concurrent`) count as their longest schedule. Independent of machine speed.
        prompt_tokens: total prompt tokens sent.
        completion_tokens: total tokens generated.
        stage_seconds: wall seconds per named stage (nested stages both count).
        events: fallbacks, repairs and other recorded decisions, in order.
        counters: method-specific numbers per query, named ``<method>.<counter>`` (e.g. ``lattice.slates``,
            ``iterative.retrieval_calls``); ``retrievekit bench`` averages them into ``counters_per_query``. A
            :class:`~retrievekit.core.renamed.Counters`: a counter's name from before its rename is answered too,
            with a ``DeprecationWarning``.
        judged: the relevance-judge calls made with ``refs`` (:class:`JudgedBatch`), for the judge's accuracy;
            left out of :meth:`to_dict` (a LATTICE node stands for a whole subtree of ids).
        query: the query the trace belongs to (set by the framework edges; None when not known).
        llm_calls_by_stage: LLM calls per innermost stage (``"(none)"`` outside any stage); with the stages of
            ``"fallback"`` events, ``retrievekit bench`` turns it into each stage's fallback rate. Left out of
            :meth:`to_dict`.

    Examples:
        >>> a, b = Trace(), Trace()
        >>> a.record_llm_call(1, 1); b.record_llm_call(2, 2)
        >>> a.merge(b).llm_calls
        2
    """

    llm_calls: int = 0
    llm_rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    events: list[TraceEvent] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=Counters)
    judged: list[JudgedBatch] = field(default_factory=list, repr=False)
    query: str | None = None
    llm_calls_by_stage: dict[str, int] = field(default_factory=dict, repr=False)
    _stack: list[str] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.counters, Counters):
            self.counters = Counters(self.counters)

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
        self.llm_rounds += 1
        where = self.current_stage or NO_STAGE
        self.llm_calls_by_stage[where] = self.llm_calls_by_stage.get(where, 0) + 1
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)

    @property
    def current_stage(self) -> str | None:
        """The innermost open stage (None outside any)."""
        return self._stack[-1] if self._stack else None

    def child(self) -> Trace:
        """A fresh trace for work done inside the current stage on another thread: its calls and events are
        attributed to this trace's open stages (merge it back with :meth:`merge` / :meth:`merge_concurrent`).

        Examples:
            >>> t = Trace()
            >>> with t.stage("rerank"):
            ...     c = t.child()
            >>> c.note("fallback", "x"); c.events[0].stage
            'rerank'
        """
        return Trace(query=self.query, _stack=list(self._stack))

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
        """Add ``value`` to the named counter (created at 0); a name from before a counter's rename
        (:mod:`~retrievekit.core.renamed`) counts under the new name, with a ``DeprecationWarning``.

        Examples:
            >>> t = Trace(); t.count("lattice.slates"); t.count("lattice.slates", 2); t.counters
            {'lattice.slates': 3}
        """
        counters = self.counters
        if dict.__contains__(counters, name):  # a current name counted before: no rename to look up (the hot path)
            dict.__setitem__(counters, name, dict.__getitem__(counters, name) + value)
            return
        name = counter_name(name)
        counters[name] = counters.get(name, 0) + value

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
        self.llm_rounds += other.llm_rounds
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        for k, v in other.stage_seconds.items():
            self.stage_seconds[k] = self.stage_seconds.get(k, 0.0) + v
        self.events.extend(other.events)
        for k, c in other.counters.items():
            self.count(k, c)
        self.judged.extend(other.judged)
        for k, n in other.llm_calls_by_stage.items():
            self.llm_calls_by_stage[k] = self.llm_calls_by_stage.get(k, 0) + n
        return self

    def merge_concurrent(self, others: Sequence[Trace], workers: int) -> Trace:
        """Merge the traces of calls that ran at once on ``workers`` threads (in item order); returns self.

        Everything adds up as in :meth:`merge` except ``llm_rounds``: the calls' rounds are scheduled on ``workers``
        lanes in order (each to the lane free first) and the longest lane counts, the critical path whatever the
        machine's speed. Stage times are left out (they overlapped).

        Examples:
            >>> subs = [Trace(llm_calls=1, llm_rounds=1) for _ in range(5)]
            >>> t = Trace().merge_concurrent(subs, workers=2)
            >>> t.llm_calls, t.llm_rounds
            (5, 3)
        """
        lanes = [0] * max(1, min(int(workers), len(others) or 1))
        for other in others:
            rounds = other.llm_rounds
            other = dataclasses.replace(other, llm_rounds=0, stage_seconds={})
            self.merge(other)
            lanes[lanes.index(min(lanes))] += rounds
        self.llm_rounds += max(lanes)
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
        if self.llm_rounds:
            out["llm_rounds"] = self.llm_rounds
        if self.counters:
            out["counters"] = dict(self.counters)
        if self.query is not None:
            out["query"] = self.query
        return out


_CAPTURE: ContextVar[tuple[list[Trace], ...]] = ContextVar("retrievekit_trace_capture", default=())


@contextmanager
def capture_traces() -> Iterator[list[Trace]]:
    """Collect the traces of the retrievekit calls made inside the ``with`` block, in this context only.

    The list fills as calls finish: the traces of this thread's or this asyncio task's calls, and of the threads and
    tasks that run in a copy of its context (the tasks it creates, ``asyncio.to_thread``, LangChain's executors and
    chain workers); never another caller's. This is the race-free way to get the traces of everything a block did,
    whatever ran it. Blocks nest: a call made in an inner block is collected by the outer blocks too.

    Examples:
        >>> with capture_traces() as traces:
        ...     publish(Trace(query="first"))
        ...     with capture_traces() as inner:
        ...         publish(Trace(query="second"))
        >>> [t.query for t in traces], [t.query for t in inner]
        (['first', 'second'], ['second'])
    """
    bucket: list[Trace] = []
    token = _CAPTURE.set((*_CAPTURE.get(), bucket))
    try:
        yield bucket
    finally:
        _CAPTURE.reset(token)


def publish(trace: Trace) -> None:
    """Hand a finished call's trace to the enclosing :func:`capture_traces` blocks, if any (the framework edges call
    this next to setting ``last_trace``).

    Examples:
        >>> publish(Trace())  # outside any capture block: nothing happens
    """
    for bucket in _CAPTURE.get():
        bucket.append(trace)


# ---------------------------------------------------------------------------------------------------- last_trace
# ``last_trace`` is kept per *scope*: the current asyncio task when there is one, else the current thread. A framework
# that runs a step in a copy of the context on the same thread (an LCEL chain) stays in the caller's scope. A call
# that runs in another thread or task also reports to the scopes whose context it inherited (``_LINEAGE``): a
# LangChain chain's worker threads report to the thread that invoked the chain, an executor thread to the task that
# awaits it. ``_ANYWHERE`` holds every object's latest call from any scope: ``last_trace`` falls back to it when the
# current scope made no call of that object (the behaviour before traces were per scope).
_Ref = Callable[[], object]


class _Record:
    """One scope's last trace per object (keyed by ``id``; a dead object's entry is pruned, never returned)."""

    __slots__ = ("entries", "limit")

    def __init__(self) -> None:
        self.entries: dict[int, tuple[_Ref, Trace | None]] = {}
        self.limit = 64  # prune dead objects' entries when there are this many

    def put(self, owner: object, ref: _Ref, trace: Trace | None) -> None:
        with _LOCK:
            if len(self.entries) >= self.limit:
                self.entries = {k: v for k, v in self.entries.items() if v[0]() is not None}
                self.limit = max(64, 2 * len(self.entries))
            self.entries[id(owner)] = (ref, trace)

    def get(self, owner: object) -> tuple[bool, Trace | None]:
        entry = self.entries.get(id(owner))
        if entry is None or entry[0]() is not owner:
            return False, None
        return True, entry[1]


_LOCK = threading.Lock()
_ANYWHERE = _Record()
_THREAD = threading.local()
_TASKS: weakref.WeakKeyDictionary[asyncio.Task[Any], _Record] = weakref.WeakKeyDictionary()
_LINEAGE: ContextVar[tuple[_Record, ...]] = ContextVar("retrievekit_trace_scopes", default=())


def _scope() -> _Record:
    """The current asyncio task's record, else the current thread's."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop in this thread
        task = None
    if task is not None:
        with _LOCK:
            record = _TASKS.get(task)
            if record is None:
                record = _TASKS[task] = _Record()
        return record
    record = getattr(_THREAD, "record", None)
    if record is None:
        record = _THREAD.record = _Record()
    return record


def _lineage() -> tuple[_Record, ...]:
    """The records of the scopes this context descends from, the current scope's last (set in this context, so the
    threads and tasks it starts from now on report here too)."""
    own, lineage = _scope(), _LINEAGE.get()
    if not lineage or lineage[-1] is not own:
        lineage = (*(r for r in lineage if r is not own), own)
        _LINEAGE.set(lineage)
    return lineage


def share_scope() -> None:
    """Make the threads and tasks started from this context from now on record their ``last_trace`` in the current
    thread's or asyncio task's scope too (:func:`remember`): what an async edge calls before it hands work to a
    worker thread, so that the awaiting task reads that work's traces.

    Examples:
        >>> import threading
        >>> class Edge:
        ...     pass
        >>> edge = Edge()
        >>> share_scope()
        >>> import contextvars
        >>> ctx = contextvars.copy_context()
        >>> worker = threading.Thread(target=ctx.run, args=(remember, edge, Trace(query="theirs")))
        >>> worker.start(); worker.join()
        >>> recall(edge, fallback=False).query
        'theirs'
    """
    _lineage()


def _ref(owner: object) -> _Ref:
    try:
        return weakref.ref(owner)
    except TypeError:  # not weak-referenceable: kept alive by its entries
        return lambda: owner


def remember(owner: object, trace: Trace | None) -> None:
    """Record ``trace`` as ``owner``'s last trace for the current thread or asyncio task (what assigning
    ``last_trace`` does; the framework edges do it when a call finishes).

    The scopes whose context the current one inherited (the thread that ran a chain on worker threads, the task that
    awaits an executor thread) record it too, and so does the object's latest-from-anywhere entry.

    Examples:
        >>> class Edge:
        ...     pass
        >>> edge = Edge()
        >>> remember(edge, Trace(query="mine"))
        >>> recall(edge).query
        'mine'
    """
    ref = _ref(owner)
    for record in (_ANYWHERE, *_lineage()):
        record.put(owner, ref, trace)


def recall(owner: object, *, fallback: bool = True) -> Trace | None:
    """``owner``'s last trace recorded in the current thread or asyncio task (what reading ``last_trace`` returns).

    When the current scope made no call of ``owner``, ``fallback=True`` returns the object's latest trace from any
    scope (None if it was never called); ``fallback=False`` returns None.

    Examples:
        >>> import threading
        >>> class Edge:
        ...     pass
        >>> edge = Edge()
        >>> worker = threading.Thread(target=remember, args=(edge, Trace(query="theirs")))
        >>> worker.start(); worker.join()
        >>> recall(edge).query, recall(edge, fallback=False)
        ('theirs', None)
        >>> remember(edge, Trace(query="mine")); recall(edge).query
        'mine'
    """
    found, trace = _lineage()[-1].get(owner)
    if found or not fallback:
        return trace
    return _ANYWHERE.get(owner)[1]


def last_trace_property() -> property:
    """A ``last_trace`` attribute kept per thread and asyncio task (:func:`remember` / :func:`recall`), for a class
    body; plain classes and pydantic models alike.

    Reading it gives the trace of the last call made from the current thread, or from the current asyncio task:
    concurrent callers each see their own. A call that a framework runs for the caller in a copy of its context
    counts as the caller's: on the caller's thread (an LCEL step), or on a thread or task that inherits the context
    (an LCEL chain's worker threads, ``asyncio.to_thread``) once the caller has made a call or read ``last_trace`` in
    that context. A thread or task that made no call of the object sees its latest call from anywhere.

    Examples:
        >>> class Edge:
        ...     last_trace = last_trace_property()
        ...     def call(self, query):
        ...         self.last_trace = Trace(query=query)
        >>> edge = Edge(); edge.call("q"); edge.last_trace.query
        'q'
    """

    def get(self: object) -> Trace | None:
        return recall(self)

    def set_(self: object, trace: Trace | None) -> None:
        remember(self, trace)

    return property(
        get,
        set_,
        doc="The trace of the last call made from the current thread or asyncio task (None before the first).",
    )
