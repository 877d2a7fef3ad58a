"""LlamaIndex edge: what retrievekit's node postprocessors share -- a trace per call, kept as ``last_trace`` and
published with the reranking's end, written once; the async form awaits the core's async form on the loop where
there is one (One-SHOT's), else runs the same code off the event loop.

Examples:
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> from retrievekit.core.trace import Trace
    >>> class Keep(TracedPostprocessor):  # keeps every node, and traces the call
    ...     def _postprocess_nodes(self, nodes, query_bundle=None):
    ...         return self._finish(Trace(), "tea", list(nodes))
    >>> keep = Keep()
    >>> len(keep.postprocess_nodes([NodeWithScore(node=TextNode(text="tea"))])), keep.last_trace.query
    (1, 'tea')
    >>> import asyncio
    >>> len(asyncio.run(keep.apostprocess_nodes([NodeWithScore(node=TextNode(text="tea"))])))
    1
"""

from __future__ import annotations

from typing import cast

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.core.trace import Trace, last_trace_property, publish
from retrievekit.llama_index.named import NamedByClass
from retrievekit.llama_index.retriever import RetrieveKitTraceEvent

__all__ = ["TracedPostprocessor"]

dispatcher = get_dispatcher(__name__)


class TracedPostprocessor(NamedByClass, BaseNodePostprocessor):
    """Base of :class:`~retrievekit.llama_index.postprocessor.OneShotPostprocessor` and
    :class:`~retrievekit.llama_index.judge.JudgeReranker`: ``last_trace`` holds the trace of the last call made from
    the current thread or asyncio task (concurrent callers each read their own); :meth:`_finish` ends a call.

    Examples:
        >>> from retrievekit.llama_index import JudgeReranker, OneShotPostprocessor
        >>> issubclass(JudgeReranker, TracedPostprocessor), issubclass(OneShotPostprocessor, TracedPostprocessor)
        (True, True)
    """

    last_trace = last_trace_property()

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Awaited on the caller's loop when the subclass's core has an async form (an ``_aprocess`` method:
        One-SHOT's ``aselect`` on the async model driver, no worker thread); else ``_postprocess_nodes`` off the
        loop (:func:`~retrievekit.core.llm.bridge.run_off_loop`). Either way ``last_trace`` is this call's for the
        awaiting task and the trace is published as the sync form publishes it."""
        aprocess = getattr(self, "_aprocess", None)
        if aprocess is not None:
            return cast(list[NodeWithScore], await aprocess(nodes, query_bundle))
        return await run_off_loop(self._postprocess_nodes, nodes, query_bundle)

    def _finish(self, trace: Trace, query: str, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """Keep ``trace`` (for ``query``) as ``last_trace``, publish it, dispatch it as a
        :class:`~retrievekit.llama_index.retriever.RetrieveKitTraceEvent` and a ``ReRankEndEvent``; return ``nodes``."""
        self.last_trace = trace
        trace.query = query
        publish(trace)
        dispatcher.event(RetrieveKitTraceEvent(query=query, trace=trace.to_dict()))
        dispatcher.event(ReRankEndEvent(nodes=nodes))
        return nodes
