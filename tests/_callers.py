"""Many callers of one object at once, for the tests that each caller gets its own trace: :data:`QUERIES` (32, one
per caller) run by :func:`in_threads` or :func:`in_tasks`, each caller held at a shared barrier."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

N = 32
QUERIES = [f"{word} number {i}" for i, word in enumerate(["apple", "banana", "python", "rust"] * (N // 4))]


def in_threads(call: Any) -> list[Any]:
    """``call(query, barrier)`` for every query in 32 threads at once; ``barrier`` holds every caller until all have
    reached it; their results in query order."""
    barrier = threading.Barrier(N, timeout=60)
    with ThreadPoolExecutor(max_workers=N) as pool:
        return list(pool.map(lambda q: call(q, barrier), QUERIES))


def in_tasks(call: Any) -> list[Any]:
    """``call(query, barrier)`` for every query, as 32 concurrent asyncio tasks (``asyncio.gather``); their results
    in query order."""

    async def main() -> list[Any]:
        barrier = asyncio.Barrier(N)
        return await asyncio.gather(*(call(q, barrier) for q in QUERIES))

    return asyncio.run(main())
