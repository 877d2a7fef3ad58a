"""How many calls to one LLM may run at once, and running independent calls at once.

* :func:`llm_concurrency` -- the number of calls a method may have in flight on one model;
* :func:`map_calls` -- ``fn(item, trace)`` for independent items on that many threads, each with its own trace,
  merged in item order (:meth:`~retrievekit.core.trace.Trace.merge_concurrent`), so a served LLM answers a
  method's slates, drafts or crops side by side while the trace still counts every call and the critical path.

Examples:
    >>> class Api:
    ...     pass
    >>> llm_concurrency(Api(), 4)
    4
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from retrievekit.core.trace import Trace

__all__ = ["llm_concurrency", "map_calls"]

T = TypeVar("T")
R = TypeVar("R")


def llm_concurrency(llm: object, requested: int) -> int:
    """How many calls to ``llm`` may run at once: 1 for a local model (one shared model and cached, stateful
    Outlines generators) or any LLM with ``thread_safe = False``; else ``requested``, capped by the model's own
    ``max_concurrency`` when it has one (a served LLM adapter's).

    Examples:
        >>> class Api:
        ...     pass
        >>> llm_concurrency(Api(), 8)
        8
        >>> class Serial:
        ...     thread_safe = False
        >>> llm_concurrency(Serial(), 8)
        1
        >>> class Served:
        ...     max_concurrency = 2
        >>> llm_concurrency(Served(), 8)
        2
    """
    if getattr(llm, "thread_safe", True) is False:
        return 1
    from retrievekit.core.llm.local import LocalLM

    if isinstance(llm, LocalLM):
        return 1
    cap = getattr(llm, "max_concurrency", None)
    requested = max(1, int(requested))
    if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1:
        return min(requested, cap)
    return requested


def map_calls(
    fn: Callable[[T, Trace], R],
    items: Sequence[T],
    *,
    llm: object,
    max_concurrency: int,
    trace: Trace | None,
) -> list[R]:
    """``[fn(item, item_trace) for item in items]``, up to ``llm_concurrency(llm, max_concurrency)`` at once.

    Each item gets a fresh :class:`~retrievekit.core.trace.Trace`; they are merged into ``trace`` in item order
    afterwards, with the batch's LLM rounds counted as its critical path. Results keep the items' order; the first
    exception (in item order) is raised once every started call has ended.

    Examples:
        >>> from retrievekit.core.trace import Trace
        >>> class Api:
        ...     pass
        >>> def call(x, t):
        ...     t.record_llm_call(10, 1)
        ...     return x * 2
        >>> t = Trace()
        >>> map_calls(call, [1, 2, 3, 4], llm=Api(), max_concurrency=4, trace=t), t.llm_calls, t.llm_rounds
        ([2, 4, 6, 8], 4, 1)
    """
    items = list(items)
    workers = min(llm_concurrency(llm, max_concurrency), max(1, len(items)))
    subs = [trace.child() if trace is not None else Trace() for _ in items]
    try:
        if workers <= 1:
            return [fn(x, sub) for x, sub in zip(items, subs, strict=True)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="retrievekit-llm") as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, fn, x, sub) for x, sub in zip(items, subs, strict=True)
            ]
            outs: list[R] = []
            error: BaseException | None = None
            for f in futures:
                try:
                    outs.append(f.result())
                except BaseException as e:  # wait for the rest, then raise the first
                    error = error or e
            if error is not None:
                raise error
            return outs
    finally:  # every request is counted, also when a call failed
        if trace is not None:
            trace.merge_concurrent(subs, workers)
