"""``watching_threads(work)``: await ``work()`` while a task on the same loop samples the process's thread count and
the names of threads that were not running before, every 5 ms (the awaited paths' "no thread per query or request");
``on_threads(call, n)``: ``call()`` on ``n`` threads started together, all joined."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def watching_threads(work: Callable[[], Awaitable[T]]) -> tuple[T, list[int], set[str]]:
    """``(work's result, thread counts sampled, names of the threads started meanwhile)``; the deadline watchdog's
    name (``retrievekit-deadline``) is among them when a call ran on its workers meanwhile, a reused worker too."""
    from retrievekit.core.deadline import calls_with_deadline

    stop, counts, names = asyncio.Event(), [], set()
    before, watched = {t.ident for t in threading.enumerate()}, calls_with_deadline()

    async def sample() -> None:
        while not stop.is_set():
            counts.append(threading.active_count())
            names.update(t.name for t in threading.enumerate() if t.ident not in before)
            await asyncio.sleep(0.005)

    sampler = asyncio.create_task(sample())
    try:
        out = await work()
    finally:
        stop.set()
        await sampler
    if calls_with_deadline() > watched:
        names.add("retrievekit-deadline")
    return out, counts, names


def on_threads(call: Callable[[], object], n: int) -> None:
    """Run ``call()`` on ``n`` threads started one after another, and wait until every one has returned."""
    workers = [threading.Thread(target=call) for _ in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
