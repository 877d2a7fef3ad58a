"""LlamaIndex edge of the iterative agent: a ``BaseRetriever`` that returns the agent's final working set.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from retrievekit.core.index import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
    >>> llm = ScriptedToolChatModel(replies=[
    ...     AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "tea"}, "id": "1"}]), "green"])
    >>> r = IterativeAgentRetriever.from_components(llm, BM25Index.build([Passage(id="t", text="Tea is green.")]))
    >>> [n.node.node_id for n in r.retrieve("What colour is tea?")], r.last_answer
    (['t'], 'green')
"""

from __future__ import annotations

from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from retrievekit.core.trace import last_trace_property, publish
from retrievekit.llama_index.retriever import RetrieveKitTraceEvent

__all__ = ["IterativeAgentRetriever"]

dispatcher = get_dispatcher(__name__)


class IterativeAgentRetriever(BaseRetriever):
    """Run the iterative search/delete agent per query and return its final working set as nodes.

    Use it anywhere LlamaIndex takes a retriever (``RetrieverQueryEngine.from_args(retriever, llm=...)``): the agent
    decides what to search and what to drop; the query engine's LLM writes the answer from the nodes. The agent's own
    answer is kept in ``last_answer``, its trace (LLM calls, tokens, events, ``iterative.retrieval_calls``,
    ``context_tokens``) in a :class:`~retrievekit.llama_index.RetrieveKitTraceEvent` and in ``last_trace``: the
    trace of the last call made from the current thread or asyncio task
    (:func:`~retrievekit.core.trace.last_trace_property`; ``last_answer`` and ``last_state`` are the object's latest,
    whoever called).

    Args:
        graph: a compiled agent from :func:`retrievekit.langgraph.build_iterative_agent`.

    Node scores are rank-based (the first chunk that arrived scores highest); each node's metadata has the ``turn``
    and ``query`` that found it.

    Examples:
        >>> from retrievekit.langgraph import ScriptedToolChatModel, build_iterative_agent
        >>> r = IterativeAgentRetriever(build_iterative_agent(ScriptedToolChatModel(replies=["x"]), lambda q, k, t: []))
        >>> r.retrieve("anything"), r.last_answer
        ([], 'x')
    """

    last_trace = last_trace_property()

    def __init__(self, graph: Any, *, callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
        self.graph = graph
        self.last_answer: str | None = None
        self.last_state: dict[str, Any] | None = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_components(cls, llm: Any, retriever: Any, **agent_kwargs: Any) -> IterativeAgentRetriever:
        """Build the agent (``build_iterative_agent(llm, retriever, **agent_kwargs)``) and wrap it.

        ``retriever`` may be a LlamaIndex retriever too (e.g. ``index.as_retriever(similarity_top_k=5)``); ``llm`` a
        LangChain tool-calling chat model, a retrievekit ``LocalLM``, or a LlamaIndex ``LLM`` (``OpenAILike``...):
        wrapped by :func:`~retrievekit.llama_index.llm.as_chat_llm`, its tool calls are schema-constrained JSON.

        Examples:
            >>> from retrievekit.langgraph import ScriptedToolChatModel
            >>> r = IterativeAgentRetriever.from_components(ScriptedToolChatModel(replies=["x"]), lambda q, k, t: [],
            ...                                             max_turns=2)
            >>> r.graph.config["recursion_limit"]
            10
        """
        from llama_index.core.llms import LLM

        from retrievekit.langgraph.graph import build_iterative_agent
        from retrievekit.llama_index.llm import as_chat_llm

        return cls(build_iterative_agent(as_chat_llm(llm) if isinstance(llm, LLM) else llm, retriever, **agent_kwargs))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        from retrievekit.langgraph.method import run_agent

        return self._nodes(query_bundle, run_agent(self.graph, query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        from retrievekit.langgraph.method import arun_agent

        return self._nodes(query_bundle, await arun_agent(self.graph, query_bundle.query_str))

    def _nodes(self, query_bundle: QueryBundle, run: Any) -> list[NodeWithScore]:
        """Keep the run's answer, trace and state; its working set as nodes."""
        self.last_answer, self.last_trace, self.last_state = run.answer, run.trace, run.state
        run.trace.query = query_bundle.query_str
        publish(run.trace)
        dispatcher.event(RetrieveKitTraceEvent(query=query_bundle.query_str, trace=run.trace.to_dict()))
        n = len(run.working_set)
        out: list[NodeWithScore] = []
        for i, c in enumerate(run.working_set):
            meta: dict[str, Any] = {"turn": c["turn"], "query": c["query"]}
            if c["title"]:
                meta["title"] = c["title"]
            out.append(NodeWithScore(node=TextNode(id_=c["id"], text=c["text"], metadata=meta), score=float(n - i)))
        return out
