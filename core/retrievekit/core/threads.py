"""Threads: how many CPU threads retrievekit's own model calls use (torch intra-op threads), and deadlines.

Torch defaults to one intra-op thread per core and its OpenMP threads busy-wait at every parallel region. On a
machine whose other cores are busy (a laptop running anything else) each of the hundreds of parallel regions in a
forward pass then waits for a thread the scheduler has parked, and a model call becomes many times slower than
the 2x a fair share would cost (the measured figures are in ``docs/models.md``, "CPU threads"). retrievekit therefore runs
its own model calls (local LLM generation and scoring, the relevance judge, embeddings, training) with a bounded
thread count and restores the caller's setting afterwards; torch code outside retrievekit is not affected.

The count is, first to last that is set:

1. :func:`set_num_threads` (in code);
2. the environment variable ``RETRIEVEKIT_NUM_THREADS`` (a positive integer);
3. the default: half the CPUs this process may run on, at least 1 (1 on a 2-core machine).

Embedding a corpus is the exception: it is one long batched job, whose parallel regions are large enough to use
every free core, so the local embedder's encode call runs with :func:`embed_threads` threads instead, first to last
that is set: :func:`set_embed_threads`, ``RETRIEVEKIT_EMBED_THREADS``, the default: every CPU this process may run on
(``os.sched_getaffinity``). The measured gain is in ``docs/indexes.md``, "Embedding on every free core".

:func:`run_with_deadline` (:mod:`retrievekit.core.deadline`, still importable from here) runs a blocking call on a
worker thread and stops waiting for it after a deadline.

Examples:
    >>> set_num_threads(2)
    >>> num_threads()
    2
    >>> set_num_threads(None)  # back to $RETRIEVEKIT_NUM_THREADS or the default
    >>> num_threads() >= 1
    True
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from retrievekit.core.checks import CountSetting, check_positive_int
from retrievekit.core.deadline import run_with_deadline

__all__ = [
    "EMBED_ENV_VAR",
    "ENV_VAR",
    "available_cpus",
    "default_num_threads",
    "embed_threads",
    "model_threads",
    "num_threads",
    "run_with_deadline",
    "set_embed_threads",
    "set_num_threads",
]

ENV_VAR = "RETRIEVEKIT_NUM_THREADS"
EMBED_ENV_VAR = "RETRIEVEKIT_EMBED_THREADS"

_lock = threading.Lock()
_depth = 0
_saved: int | None = None


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else the CPU count).

    Examples:
        >>> available_cpus() >= 1
        True
    """
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def default_num_threads() -> int:
    """Half the CPUs this process may use, at least 1.

    Examples:
        >>> default_num_threads() >= 1
        True
    """
    return max(1, available_cpus() // 2)


_THREADS = CountSetting(ENV_VAR, "the thread count", default=default_num_threads)
_EMBED_THREADS = CountSetting(EMBED_ENV_VAR, "the embedding thread count", default=available_cpus)


def set_num_threads(n: int | None) -> None:
    """Set the thread count of retrievekit's model calls for this process (``None``: back to the default).

    Raises:
        InvalidInputError: ``n`` is not a positive integer.

    Examples:
        >>> set_num_threads(1); num_threads()
        1
        >>> set_num_threads(None)
    """
    _THREADS.set(n)


def num_threads() -> int:
    """The thread count retrievekit's model calls use now (see the module docstring for the order).

    Examples:
        >>> num_threads() >= 1
        True
    """
    return _THREADS.get()


def set_embed_threads(n: int | None) -> None:
    """Set the thread count of the local embedder's encode calls for this process (``None``: back to the default).

    Raises:
        InvalidInputError: ``n`` is not a positive integer.

    Examples:
        >>> set_embed_threads(1); embed_threads()
        1
        >>> set_embed_threads(None)
    """
    _EMBED_THREADS.set(n)


def embed_threads() -> int:
    """The thread count the local embedder's encode calls use now: :func:`set_embed_threads`, else
    ``$RETRIEVEKIT_EMBED_THREADS``, else every CPU this process may run on.

    Examples:
        >>> embed_threads() >= 1
        True
    """
    return _EMBED_THREADS.get()


@contextmanager
def model_threads(n: int | None = None) -> Iterator[int]:
    """Run the enclosed torch work with ``n`` (default :func:`num_threads`) intra-op threads, then restore the
    caller's count.

    Nested and concurrent uses share one setting: the first to enter sets it, the last to leave restores it (a call
    that enters while another is inside runs with the count already set; yields the count it runs with).

    Examples:
        >>> with model_threads() as n:
        ...     n == num_threads()
        True
    """
    global _depth, _saved
    import torch

    n = num_threads() if n is None else check_positive_int(n, "the thread count")
    with _lock:
        if _depth == 0:
            _saved = torch.get_num_threads()
            if _saved != n:
                torch.set_num_threads(n)
        _depth += 1
        running = torch.get_num_threads()
    try:
        yield running
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                if torch.get_num_threads() != _saved:
                    torch.set_num_threads(_saved)
                _saved = None
