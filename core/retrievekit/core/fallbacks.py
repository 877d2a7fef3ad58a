"""Fallback rates per method stage: how often a run's LLM-dependent steps fell back instead of using the LLM.

Every method notes a ``"fallback"`` trace event where it degrades gracefully (a slate scored by embedding cosine, an
uncropped chunk, the question's words as ARM keywords...), inside the stage it happened in. Per query,
:func:`stage_counts` keeps each stage's LLM calls and fallbacks; :func:`fallback_block` sums them over a run into
each stage's **rate** (fallbacks per LLM ask of the stage: its LLM calls less the retries of a reply that did not
validate, so a slate asked three times and then scored by cosine is one fallback of one ask; for a stage that asks
no LLM itself, such as ARM's aggregation, the share of queries it fell back on) and
:func:`fallback_warnings` names the stages above :data:`FALLBACK_WARN_RATE`, so a run that silently degraded to its
first-stage order cannot pass for a result. ``retrievekit bench`` reports them per run; a retriever outside the bench
keeps a :class:`FallbackMonitor`, which sums its queries the same way and warns (:class:`FallbackWarning`) once.

Examples:
    >>> from retrievekit.core.trace import Trace
    >>> t = Trace()
    >>> with t.stage("lattice.search"):
    ...     t.record_llm_call(100, 5); t.record_llm_call(100, 5)
    ...     t.note("fallback", "slate scored by cosine")
    >>> stage_counts(t)
    {'lattice.search': {'llm_calls': 2, 'fallbacks': 1}}
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from retrievekit.core.errors import FallbackWarning
from retrievekit.core.trace import NO_STAGE, Trace

__all__ = [
    "FALLBACK_WARN_RATE",
    "FallbackMonitor",
    "add_stage_counts",
    "fallback_block",
    "fallback_warnings",
    "stage_counts",
]

FALLBACK_WARN_RATE = 0.05
"""A stage whose fallback rate is above this gets a warning from ``retrievekit bench`` and, once, a
:class:`FallbackWarning` from the retriever (ours: 5 %)."""


def stage_counts(trace: Trace) -> dict[str, dict[str, int]]:
    """Per stage of ``trace``: its LLM calls, its ``"fallback"`` events and, when there were any, its ``retries``
    (``"json_retry"`` events: each is one more request for the same answer); stages with calls or fallbacks only.

    Examples:
        >>> t = Trace(); t.note("fallback", "no LLM")
        >>> stage_counts(t)
        {'(none)': {'llm_calls': 0, 'fallbacks': 1}}
    """
    out: dict[str, dict[str, int]] = {
        stage: {"llm_calls": int(n), "fallbacks": 0} for stage, n in trace.llm_calls_by_stage.items()
    }
    retries: dict[str, int] = {}
    for e in trace.events:
        if e.kind == "fallback":
            entry = out.setdefault(e.stage or NO_STAGE, {"llm_calls": 0, "fallbacks": 0})
            entry["fallbacks"] += 1
        elif e.kind == "json_retry":
            retries[e.stage or NO_STAGE] = retries.get(e.stage or NO_STAGE, 0) + 1
    for stage, n in retries.items():
        if stage in out:
            out[stage]["retries"] = n
    return dict(sorted(out.items()))


def fallback_block(per_query: Iterable[Mapping[str, Mapping[str, int]]]) -> dict[str, dict[str, float]] | None:
    """Each stage's fallback rate over a run, from the queries' :func:`stage_counts`; None when no stage called an
    LLM or fell back.

    Per stage: ``rate`` (fallbacks / LLM asks, an ask being a call that was not a retry; for a stage without LLM
    calls, the share of queries it fell back on), ``fallbacks_per_query``, ``llm_calls_per_query`` and
    ``queries_with_fallback`` (share of the queries).

    Examples:
        >>> q1 = {"arm.keywords": {"llm_calls": 5, "fallbacks": 1}}
        >>> q2 = {"arm.keywords": {"llm_calls": 5, "fallbacks": 0}}
        >>> fallback_block([q1, q2])["arm.keywords"]
        {'rate': 0.1, 'fallbacks_per_query': 0.5, 'llm_calls_per_query': 5.0, 'queries_with_fallback': 0.5}
        >>> fallback_block([{"llm_rerank.score": {"llm_calls": 6, "fallbacks": 2, "retries": 4}}])["llm_rerank.score"]["rate"]
        1.0
    """
    rows = list(per_query)
    totals: dict[str, list[int]] = {}
    for row in rows:
        add_stage_counts(totals, row)
    return _block(totals, len(rows))


def add_stage_counts(totals: dict[str, list[int]], row: Mapping[str, Mapping[str, int]]) -> None:
    """Add one query's :func:`stage_counts` ``row`` to ``totals`` (per stage: LLM calls, fallbacks, queries that fell
    back, retries), what :func:`fallback_block` sums.

    Examples:
        >>> totals = {}; add_stage_counts(totals, {"s": {"llm_calls": 2, "fallbacks": 1}}); totals
        {'s': [2, 1, 1, 0]}
    """
    for stage, c in row.items():
        t = totals.setdefault(stage, [0, 0, 0, 0])
        t[0] += int(c.get("llm_calls", 0))
        t[1] += int(c.get("fallbacks", 0))
        t[2] += 1 if c.get("fallbacks", 0) else 0
        t[3] += int(c.get("retries", 0))


def _block(totals: Mapping[str, list[int]], queries: int) -> dict[str, dict[str, float]] | None:
    """:func:`fallback_block` from summed ``totals`` over ``queries`` queries."""
    if not totals:
        return None
    n = max(queries, 1)
    out: dict[str, dict[str, float]] = {}
    for stage, (calls, falls, with_fallback, retries) in sorted(totals.items()):
        asks = max(calls - retries, 0)
        rate = min(falls / asks, 1.0) if asks else with_fallback / n
        out[stage] = {
            "rate": round(rate, 4),
            "fallbacks_per_query": falls / n,
            "llm_calls_per_query": calls / n,
            "queries_with_fallback": with_fallback / n,
        }
    return out


def fallback_warnings(block: Mapping[str, Mapping[str, Any]] | None, limit: float = FALLBACK_WARN_RATE) -> list[str]:
    """One line per stage whose fallback rate is above ``limit``.

    Examples:
        >>> fallback_warnings({"lattice.search": {"rate": 0.4, "queries_with_fallback": 1.0}})
        ['lattice.search fell back on 40.0% of its LLM asks (100.0% of queries): its results are not the LLM method\\'s; see the trace events of kind "fallback"']
        >>> fallback_warnings({"oneshot.crop": {"rate": 0.01, "queries_with_fallback": 0.02}})
        []
        >>> votes = {"rate": 0.25, "llm_calls_per_query": 0.0, "queries_with_fallback": 0.25}
        >>> fallback_warnings({"arm.aggregate": votes})[0][:75]
        'arm.aggregate fell back on 25.0% of queries (a stage that makes no LLM call'
    """
    lines = []
    for stage, row in (block or {}).items():
        if float(row.get("rate", 0.0)) <= limit:
            continue
        queries = f"{100 * float(row.get('queries_with_fallback', 0.0)):.1f}% of queries"
        if float(row.get("llm_calls_per_query", 1.0)) == 0.0:  # a stage that asks no LLM itself (ARM's votes)
            what = f"{stage} fell back on {queries} (a stage that makes no LLM call of its own)"
        else:
            what = f"{stage} fell back on {100 * float(row['rate']):.1f}% of its LLM asks ({queries})"
        lines.append(f'{what}: its results are not the LLM method\'s; see the trace events of kind "fallback"')
    return lines


class FallbackMonitor:
    """A retriever's fallback rates over the queries it answered: :meth:`observe` adds one query's trace and warns
    (:class:`~retrievekit.core.errors.FallbackWarning`, the :func:`fallback_warnings` lines) the first time a stage is
    above :data:`FALLBACK_WARN_RATE`; never again for that retriever. Thread-safe.

    Args:
        who: the retriever named in the warning (e.g. ``"LATTICE"``).

    Examples:
        >>> import warnings
        >>> monitor = FallbackMonitor("LATTICE")
        >>> t = Trace()
        >>> with t.stage("lattice.search"):
        ...     t.record_llm_call(10, 1); t.note("fallback", "slate scored by cosine")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     monitor.observe(t); monitor.observe(t)
        >>> len(caught), monitor.warned
        (1, True)
    """

    def __init__(self, who: str) -> None:
        self.who = who
        self.queries = 0
        self.warned = False
        self._totals: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def observe(self, trace: Trace) -> None:
        """Add one query's ``trace`` (its :func:`stage_counts`); warn once when a stage is above the rate.

        Examples:
            >>> m = FallbackMonitor("x"); m.observe(Trace()); m.queries
            1
        """
        row = stage_counts(trace)
        with self._lock:
            self.queries += 1
            add_stage_counts(self._totals, row)
            if self.warned:
                return
            lines = fallback_warnings(_block(self._totals, self.queries))
            self.warned = bool(lines)
            n = self.queries
        if lines:
            warnings.warn(FallbackWarning(f"{self.who}, after {n} queries: " + "; ".join(lines)), stacklevel=3)
