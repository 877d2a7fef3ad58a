"""Each caller gets its own call's trace (#15 item 14), in core: ``search_with_trace`` and per-scope ``last_trace``.

``search_with_trace`` returns the trace with the hits; :func:`~retrievekit.core.trace.remember` /
:func:`~retrievekit.core.trace.recall` (what ``last_trace`` is made of) keep one record per thread and per asyncio
task. 32 callers run at once, held at barriers so every call is made before any trace is read: a shared attribute
would hand 31 of them another caller's trace.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading

from _callers import QUERIES, in_tasks, in_threads
from _corpora import FRUIT

from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.retriever import search_with_trace
from retrievekit.core.trace import Trace, capture_traces, last_trace_property, publish, recall, remember


class _Edge:
    """The smallest framework-edge stand-in: a ``last_trace`` attribute set by each call."""

    last_trace = last_trace_property()

    def call(self, query: str) -> None:
        self.last_trace = Trace(query=query)


def test_search_with_trace_gives_32_threads_their_own_trace():
    bm25 = BM25Index.build(FRUIT)

    def call(query, barrier):
        barrier.wait()  # all 32 search at once
        hits, trace = search_with_trace(bm25, query, 2)
        return query, hits, trace

    for query, hits, trace in in_threads(call):
        assert trace.query == query and "bm25" in trace.stage_seconds
        assert [h.obj.id for h in hits] == [h.obj.id for h in bm25.search(query, 2)]


def _own_traces_in_threads(call):
    """``call(query, barrier)`` in 32 threads at once (:func:`_callers.in_threads`): each must return its own trace."""
    assert [trace.query for trace in in_threads(call)] == QUERIES


def test_last_trace_is_per_thread():
    edge = _Edge()

    def call(query, barrier):
        edge.call(query)
        barrier.wait()  # every thread has called before any reads
        return edge.last_trace

    _own_traces_in_threads(call)


def test_last_trace_is_per_asyncio_task():
    edge = _Edge()

    async def call(query, barrier):
        edge.call(query)
        await barrier.wait()  # every task has called before any reads
        return edge.last_trace

    assert [t.query for t in in_tasks(call)] == QUERIES


def test_calls_run_for_a_caller_on_other_threads_count_as_its_own():
    edge = _Edge()

    def call(query, barrier):
        edge.call("first")  # this thread's context now carries its record to the threads it starts
        ctx = contextvars.copy_context()  # what LangChain's executors and asyncio.to_thread do
        worker = threading.Thread(target=ctx.run, args=(edge.call, query))
        worker.start()
        worker.join()
        barrier.wait()
        return edge.last_trace

    _own_traces_in_threads(call)


def test_an_executor_thread_a_task_awaits_counts_as_the_tasks():
    edge = _Edge()

    async def call(query, barrier):
        edge.call("first")
        await asyncio.to_thread(edge.call, query)
        await barrier.wait()
        return edge.last_trace

    assert [t.query for t in in_tasks(call)] == QUERIES


def test_a_scope_without_calls_sees_the_latest_from_anywhere():
    edge = _Edge()
    assert edge.last_trace is None and recall(edge, fallback=False) is None
    worker = threading.Thread(target=edge.call, args=("elsewhere",))  # a new thread inherits no context
    worker.start()
    worker.join()
    assert edge.last_trace.query == "elsewhere"  # the pre-scope behaviour
    assert recall(edge, fallback=False) is None
    edge.call("here")
    assert edge.last_trace.query == "here" and recall(edge, fallback=False).query == "here"


def test_a_dead_objects_trace_never_reaches_a_new_one():
    for _ in range(200):  # ids are reused after collection; the entry is checked against the object itself
        edge = _Edge()
        assert edge.last_trace is None
        edge.call("q")
        del edge
        gc.collect()


def test_an_object_without_weak_references_works_too():
    class Slotted:
        __slots__ = ()

    owner = Slotted()
    remember(owner, Trace(query="slotted"))
    assert recall(owner).query == "slotted"


def test_capture_blocks_nest_and_each_collects_what_ran_inside_it():
    with capture_traces() as outer:
        publish(Trace(query="a"))
        with capture_traces() as inner:
            publish(Trace(query="b"))
    publish(Trace(query="after"))
    assert [t.query for t in outer] == ["a", "b"] and [t.query for t in inner] == ["b"]
