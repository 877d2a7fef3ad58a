"""A blocking call with a deadline: :func:`run_with_deadline`, on reused daemon workers.

A blocking client call (a sync HTTP client, the Chroma client) cannot be interrupted, so the caller waits for it on
another thread and stops waiting at the deadline; the call is left to finish on its own. The workers are reused: a
call takes an idle worker, a new one starts only when none is idle (so the threads number the calls in flight at the
peak, not the calls made: a sync LATTICE query's 13 requests reuse the same few), and a worker idle for
:data:`IDLE_S` seconds ends. They are daemon threads, so a call that never returns never holds the interpreter's
exit; and no call ever waits for a worker, so none is sent after its caller stopped waiting.

Examples:
    >>> run_with_deadline(lambda: 2 + 2, 1.0)
    4
"""

from __future__ import annotations

import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_S", "calls_with_deadline", "run_with_deadline"]

IDLE_S = 30.0
"""Seconds a worker waits for its next call before it ends."""


class _DeadlinePassed(TimeoutError):
    """The watchdog stopped waiting for a call that outlived its deadline."""


def _done() -> None:
    """What a finished call's function is replaced by."""


class _Call:
    """One call, its outcome and the event that says it is there."""

    __slots__ = ("done", "error", "fn", "value")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn, self.done = fn, threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as e:  # handed to the caller's thread
            self.error = e
        finally:
            self.fn = _done  # the call's function (and what it holds) is not kept past the call
            self.done.set()


class _Workers:
    """The daemon workers: at every moment at least as many idle ones as calls queued (a call never waits)."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = self._queued = self.submitted = 0

    def submit(self, call: _Call) -> None:
        with self._lock:
            self.submitted += 1
            self._queued += 1
            if self._queued > self._idle:
                self._idle += 1
                threading.Thread(target=self._work, name="retrievekit-deadline", daemon=True).start()
        self._calls.put(call)

    def _work(self) -> None:
        while True:
            try:
                call = self._calls.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._queued >= self._idle:  # a call is on its way and this worker is counted for it
                        continue
                    self._idle -= 1
                    return
            with self._lock:
                self._idle -= 1
                self._queued -= 1
            call.run()
            del call  # an idle worker keeps nothing of its last call alive (its client, its connections)
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


def calls_with_deadline() -> int:
    """How many calls :func:`run_with_deadline` has run on its workers in this process (what tells that a path
    used the watchdog, now that its threads are reused).

    Examples:
        >>> before = calls_with_deadline(); _ = run_with_deadline(lambda: 1, 1.0); calls_with_deadline() - before
        1
    """
    return _WORKERS.submitted


def run_with_deadline(fn: Callable[[], Any], seconds: float | None) -> Any:
    """``fn()`` on a worker thread (same context variables), waiting at most ``seconds``; raises ``TimeoutError``
    when it takes longer (the worker is left to finish on its own: a blocking client call cannot be interrupted).
    The sync model driver's requests and the Chroma client's connection use it.

    Examples:
        >>> run_with_deadline(lambda: 2 + 2, 1.0)
        4
        >>> import time
        >>> try:
        ...     run_with_deadline(lambda: time.sleep(0.5), 0.05)
        ... except TimeoutError as e:
        ...     print(e)
        no reply within 0.05 s
    """
    if seconds is None:
        return fn()
    call = _Call(functools.partial(contextvars.copy_context().run, fn))
    _WORKERS.submit(call)
    if not call.done.wait(seconds):
        raise _DeadlinePassed(f"no reply within {seconds:g} s")
    if call.error is not None:
        raise call.error
    return call.value
