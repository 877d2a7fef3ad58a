"""Async callers, one sync implementation: how an ``await`` reaches retrievekit's methods without blocking the loop.

Every method and stage is written once, as ordinary sync code. An async entry point of an edge (``aretrieve``,
``apostprocess_nodes``, ``ainvoke``, ``acompress_documents``) runs that code with :func:`run_off_loop`:

1. **Off the loop.** The sync code runs on a bounded executor (:func:`async_workers` threads named
   ``retrievekit-async-N``; 32 unless set), so a local model (torch, in-process) or a search never blocks the
   caller's event loop. The caller's context variables go with it.
2. **Traces reach the awaiting task.** ``capture_traces`` blocks and ``last_trace`` of the awaiting task see what the
   worker published (:func:`~retrievekit.core.trace.share_scope`).
3. **Served LLMs through their async client, on the caller's loop.** The caller's running loop is recorded in a
   context variable. When code on the worker sends a request to a served LLM whose adapter has an async send
   (``ServedChatLLM._asend``: LlamaIndex ``achat``, LangChain ``ainvoke``), :func:`send_request` schedules that
   coroutine on the caller's loop (``asyncio.run_coroutine_threadsafe``) and the worker waits for it at most the
   request's timeout, cancelling it then. Everything else about the request (token limits, the timeout, bounded
   retries, typed errors naming the endpoint, the ``max_concurrency`` slots, fallbacks counted in the trace) is the
   served path's call policy, unchanged. On the loop's own thread a blocking wait would deadlock it: there (and
   with no caller loop, or no async send) the request goes through the sync client.

The pool's size is, first to last that is set: :func:`set_async_workers` (in code), the environment variable
``RETRIEVEKIT_ASYNC_WORKERS`` (a positive integer), the default 32. Calls beyond it wait for a free worker. A
cancelled ``await`` stops waiting at once; its worker finishes the call (sync code cannot be interrupted).

Examples:
    >>> import asyncio
    >>> from retrievekit.core.trace import Trace, capture_traces, publish
    >>> def search(query):
    ...     publish(Trace(query=query))
    ...     return query.upper(), threading.current_thread().name.startswith("retrievekit-async")
    >>> async def main():
    ...     with capture_traces() as traces:
    ...         out = await run_off_loop(search, "tea")
    ...     return out, [t.query for t in traces]
    >>> asyncio.run(main())
    (('TEA', True), ['tea'])
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from retrievekit.core.checks import CountSetting
from retrievekit.core.trace import share_scope

__all__ = [
    "DEFAULT_WORKERS",
    "ENV_VAR",
    "async_workers",
    "caller_loop",
    "run_in_pool",
    "run_off_loop",
    "send_request",
    "set_async_workers",
    "usable_async_send",
]

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_WORKERS = 32
"""Worker threads of the async bridge (ours: 32, eight times a small server's four slots: the waiting requests of
a busy app queue here, not on the loop)."""
ENV_VAR = "RETRIEVEKIT_ASYNC_WORKERS"

_CALLER_LOOP: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar("retrievekit_caller_loop", default=None)
_WORKERS = CountSetting(ENV_VAR, "the async worker count", default=lambda: DEFAULT_WORKERS)
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()


def set_async_workers(n: int | None) -> None:
    """Set the bridge's worker count for this process (``None``: back to ``$RETRIEVEKIT_ASYNC_WORKERS`` or 32); the
    next call starts a pool of that size, and calls already running finish on the old one.

    Raises:
        InvalidInputError: ``n`` is not a positive integer.

    Examples:
        >>> set_async_workers(4); async_workers()
        4
        >>> set_async_workers(None)
    """
    _WORKERS.set(n)


def async_workers() -> int:
    """The number of worker threads :func:`run_off_loop` uses (module docstring: the order of the settings).

    Examples:
        >>> async_workers() >= 1
        True
    """
    return _WORKERS.get()


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    """The bridge's pool, started (or resized) on first use."""
    global _pool, _pool_size
    size = async_workers()
    with _lock:
        if _pool is None or _pool_size != size:
            old, _pool, _pool_size = _pool, None, size
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=size, thread_name_prefix="retrievekit-async")
            if old is not None:
                old.shutdown(wait=False)
        return _pool


async def run_off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the bridge's worker threads, in a copy of the caller's context that records the
    caller's running loop; the traces it publishes reach the awaiting task (module docstring).

    Examples:
        >>> import asyncio
        >>> asyncio.run(run_off_loop(sorted, [3, 1, 2], reverse=True))
        [3, 2, 1]
    """
    loop = asyncio.get_running_loop()
    share_scope()  # the worker's last_trace records reach this task
    ctx = contextvars.copy_context()
    ctx.run(_CALLER_LOOP.set, loop)
    return await loop.run_in_executor(_executor(), functools.partial(ctx.run, fn, *args, **kwargs))


async def run_in_pool(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the bridge's bounded worker pool, awaited (a sync client or an in-process model reached from
    the async driver: the pool bounds its threads, the loop never blocks).

    Examples:
        >>> import asyncio
        >>> asyncio.run(run_in_pool(max, 3, 7))
        7
    """
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    return await loop.run_in_executor(_executor(), functools.partial(ctx.run, fn, *args))


def caller_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop of the task that awaits this code through :func:`run_off_loop`, or None: outside the
    bridge, when that loop is closed or stopped, or on the loop's own thread (where a blocking wait would deadlock).

    Examples:
        >>> caller_loop() is None  # not under run_off_loop
        True
        >>> import asyncio
        >>> asyncio.run(run_off_loop(caller_loop)) is not None
        True
    """
    loop = _CALLER_LOOP.get()
    if loop is None or loop.is_closed() or not loop.is_running():
        return None
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    return None if running is loop else loop


def usable_async_send(
    asend: Callable[[R], Coroutine[Any, Any, T]] | None,
) -> Callable[[R], Coroutine[Any, Any, T]] | None:
    """``asend`` when a request made from this thread may wait for it on the caller's loop, else None: outside the
    bridge, or on the loop's own thread. Ask it in the thread that will block on the request (the served path
    sends each request from a helper thread while the calling thread waits: that calling thread is the one that
    must not be the loop's).

    Examples:
        >>> async def asend(r):
        ...     return r
        >>> usable_async_send(asend) is None  # not under run_off_loop
        True
    """
    return asend if asend is not None and caller_loop() is not None else None


def send_request(
    send: Callable[[R], T], asend: Callable[[R], Coroutine[Any, Any, T]] | None, request: R, timeout: float
) -> T:
    """One request: ``await asend(request)`` on the caller's loop when there is one (:func:`caller_loop`) and
    ``asend`` is given, waiting at most ``timeout`` seconds (the coroutine is cancelled then and ``TimeoutError``
    raised, which the call policy reports as ``LLMTimeoutError``); otherwise ``send(request)``.

    Examples:
        >>> import asyncio
        >>> async def asend(r):
        ...     return f"async {r}"
        >>> send_request(lambda r: f"sync {r}", asend, "hi", 1.0)  # no caller loop: the sync client
        'sync hi'
        >>> asyncio.run(run_off_loop(send_request, lambda r: f"sync {r}", asend, "hi", 1.0))
        'async hi'
        >>> async def slow(r):
        ...     await asyncio.sleep(5)
        >>> asyncio.run(run_off_loop(send_request, lambda r: r, slow, "hi", 0.05))
        Traceback (most recent call last):
        ...
        TimeoutError: no reply within 0.05 s
    """
    loop = caller_loop() if asend is not None else None
    if loop is None or asend is None:
        return send(request)
    future = asyncio.run_coroutine_threadsafe(asend(request), loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"no reply within {timeout:g} s") from None
