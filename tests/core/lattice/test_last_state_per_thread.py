"""LATTICE's ``last_state`` is kept per thread and asyncio task, like ``last_trace`` (issue #52 item 9): 16 threads
(and 16 tasks) search one ``Lattice`` at once, each held at a barrier after its search so every search is done
before any state is read, and each reads the state of its own query."""

from __future__ import annotations

import asyncio
import threading

from _lattice import KeywordLLM, planted_tree

from retrievekit.core.lattice import Lattice, LatticeConfig

QUERIES = [f"volcano magma lava query{i}" if i % 2 else f"weather sports filler {i}" for i in range(16)]


def _lattice() -> Lattice:
    return Lattice(planted_tree(), KeywordLLM(), LatticeConfig(num_iters=3, max_concurrency=1), embedder=None)


def test_each_thread_reads_the_state_of_its_own_search():
    lat = _lattice()
    barrier = threading.Barrier(len(QUERIES))
    seen: dict[str, str] = {}

    def run(query: str) -> None:
        lat.search(query, k=3)
        barrier.wait(timeout=120)  # every search has finished before any thread reads
        state = lat.last_state
        seen[query] = state.query if state is not None else ""

    threads = [threading.Thread(target=run, args=(q,)) for q in QUERIES]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert seen == {q: q for q in QUERIES}


def test_each_asyncio_task_reads_the_state_of_its_own_search():
    lat = _lattice()

    async def main() -> dict[str, str]:
        done = asyncio.Event()
        count = 0

        async def one(query: str) -> tuple[str, str]:
            nonlocal count
            await asyncio.sleep(0)  # the tasks start in turn, then search in turn (a search does not await)
            lat.search(query, k=3)
            count += 1
            if count == len(QUERIES):
                done.set()
            await done.wait()
            state = lat.last_state
            return query, state.query if state is not None else ""

        return dict(await asyncio.gather(*(one(q) for q in QUERIES)))

    assert asyncio.run(main()) == {q: q for q in QUERIES}
