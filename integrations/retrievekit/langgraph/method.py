"""The agent as a retrievekit retriever, and ``retrievekit bench --method iterative``.

:func:`build_iterative` is registered as the bench method ``iterative`` by this package itself, as an entry point
of group ``retrievekit.methods`` in ``pyproject.toml`` (the core registry names no integration module).

:func:`run_agent` runs a compiled agent on one question and returns the final state plus a retrievekit
:class:`~retrievekit.core.trace.Trace` (LLM calls and tokens, every agent event, and the counters
``iterative.retrieval_calls``, ``iterative.context_tokens``, ``iterative.turns``,
``iterative.working_set_size``). :class:`IterativeAgentMethod` wraps that
as ``search(query, k, trace=)`` returning the final working set, which is what ``retrievekit bench`` scores; the
answer is in ``last_answer`` and in the trace (an ``agent_answer`` event).

Bench options (``--option key=value``): ``max_turns`` (5), ``search_top_k`` (5), ``fallback`` (true),
``delete`` (true), ``base`` (``hybrid`` | ``bm25`` | ``dense``; default ``hybrid``), ``max_tokens`` (96) for a tool
call, ``answer_max_tokens`` (32); ``--llm smollm2`` (default) or ``qwen0.5b`` picks the local model.
``--judge DIR`` (option ``judge_dir``) loads a trained relevance judge that deletes the new chunks of each search
scoring below ``judge_threshold`` (0.5); the agent itself still runs on ``--llm``. ``plan_cache`` (``true``:
``<work-dir>/agent-plans``, or a folder) records the model's replies to each question once and replays them on later
runs (:mod:`retrievekit.core.iterative.plan_cache`): a judge sweep then spends the model once per question, every
run makes the recorded run's searches, and ``counters_per_query["iterative.plan_replayed"]`` says how many were replayed.

Examples:
    >>> from retrievekit.core.index import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.langgraph.graph import build_iterative_agent
    >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
    >>> from langchain_core.messages import AIMessage
    >>> llm = ScriptedToolChatModel(replies=[
    ...     AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "tea"}, "id": "1"}]), "green"])
    >>> m = IterativeAgentMethod(build_iterative_agent(llm, BM25Index.build([Passage(id="t", text="Tea is green.")])))
    >>> [h.id for h in m.search("What colour is tea?")], m.last_answer
    (['t'], 'green')
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.iterative.state import Chunk, context_tokens, trace_from_events
from retrievekit.core.options import cache_folder_option, check_option_keys, option_bool
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, ScoredHit

__all__ = [
    "ITERATIVE_OPTIONS",
    "AgentRun",
    "IterativeAgentMethod",
    "agent_run",
    "arun_agent",
    "build_iterative",
    "run_agent",
]

ITERATIVE_OPTIONS = (
    "max_turns",
    "search_top_k",
    "fallback",
    "delete",
    "base",
    "max_tokens",
    "answer_max_tokens",
    "judge_dir",
    "judge_threshold",
    "plan_cache",
)
"""The agent's own bench options; the rest go to the ``base`` retriever (``hybrid``: ``fusion``, ``rrf_k``, ...)."""


@dataclass
class AgentRun:
    """Outcome of one agent run: answer, final working set, why it stopped, the full state and a Trace.

    Examples:
        >>> AgentRun(answer="x", working_set=[], stop_reason="answered").answer
        'x'
    """

    answer: str | None
    working_set: list[Chunk]
    stop_reason: str | None
    state: dict[str, Any] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)


def run_agent(
    graph: Any, question: str, *, config: dict[str, Any] | None = None, trace: Trace | None = None
) -> AgentRun:
    """Invoke ``graph`` on ``question`` (a fresh thread id when the graph has a checkpointer) and build a Trace.

    Examples:
        >>> from retrievekit.langgraph.graph import build_iterative_agent
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> run = run_agent(build_iterative_agent(ScriptedToolChatModel(replies=["42"]), lambda q, k, t: []), "Why?")
        >>> # turn 1 answered without searching: the question was searched (and, as on every first turn, again as the
        >>> # fallback search), then the model answered on turn 2
        >>> run.answer, run.trace.counters["iterative.retrieval_calls"], run.trace.llm_calls
        ('42', 2, 2)
    """
    state = graph.invoke({"question": question, "working_set": []}, _run_config(graph, question, config))
    return agent_run(state, trace)


async def arun_agent(
    graph: Any, question: str, *, config: dict[str, Any] | None = None, trace: Trace | None = None
) -> AgentRun:
    """:func:`run_agent` awaited: the graph runs with ``ainvoke`` (its model calls await the chat model's async API,
    its tool calls run off the event loop).

    Examples:
        >>> import asyncio
        >>> from retrievekit.langgraph.graph import build_iterative_agent
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> graph = build_iterative_agent(ScriptedToolChatModel(replies=["42"]), lambda q, k, t: [])
        >>> asyncio.run(arun_agent(graph, "Why?")).answer
        '42'
    """
    state = await graph.ainvoke({"question": question, "working_set": []}, _run_config(graph, question, config))
    return agent_run(state, trace)


def _run_config(graph: Any, question: str, config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The question checked; the run's config (a fresh thread id when the graph has a checkpointer)."""
    check_query(question)
    cfg: dict[str, Any] = dict(config or {})
    if getattr(graph, "checkpointer", None) is not None:
        conf = dict(cfg.get("configurable") or {})
        conf.setdefault("thread_id", uuid.uuid4().hex)
        cfg["configurable"] = conf
    return cfg or None


def agent_run(state: dict[str, Any], trace: Trace | None = None) -> AgentRun:
    """The :class:`AgentRun` of a finished graph state: answer, working set, stop reason and a Trace of the counters
    and events (merged into ``trace`` when given).

    Examples:
        >>> agent_run({"answer": "x", "stop_reason": "answered"}).trace.counters["iterative.turns"]
        0
    """
    ws = list(state.get("working_set") or [])
    counters: dict[str, float] = {
        "iterative.retrieval_calls": int(state.get("searches", 0)),
        "iterative.context_tokens": context_tokens(ws),
        "iterative.turns": int(state.get("turn", 0)),
        "iterative.working_set_size": len(ws),
    }
    judge_calls = (state.get("usage") or {}).get("judge_calls")
    if judge_calls:
        counters["iterative.judge_calls"] = int(judge_calls)
    t = trace_from_events(state.get("trace") or [], state.get("usage") or {}, counters, trace=trace)
    t.note("agent_answer", str(state.get("answer") or ""), stop_reason=state.get("stop_reason"))
    return AgentRun(
        answer=state.get("answer"), working_set=ws, stop_reason=state.get("stop_reason"), state=dict(state), trace=t
    )


class IterativeAgentMethod:
    """A retrievekit retriever whose hits are the agent's final working set (in the order chunks arrived).

    ``returns_set = True``: ``retrievekit bench`` also reports set precision/recall/F1.

    Examples:
        >>> from retrievekit.langgraph.graph import build_iterative_agent
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> m = IterativeAgentMethod(build_iterative_agent(ScriptedToolChatModel(replies=["x"]), lambda q, k, t: []))
        >>> m.search("q"), m.last_run.stop_reason
        ([], 'answered')
    """

    returns_set = True

    def __init__(self, graph: Any, *, plans: Any = None) -> None:
        self.graph = graph
        self.plans = plans  # a PlanReplayChatModel the graph's model is, or None
        self.last_run: AgentRun | None = None

    @property
    def last_answer(self) -> str | None:
        """The answer of the latest query (None before the first).

        Examples:
            >>> IterativeAgentMethod(graph=None).last_answer is None
            True
        """
        return self.last_run.answer if self.last_run is not None else None

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Run the agent on ``query``; return at most ``k`` chunks of its final working set.

        Examples:
            >>> IterativeAgentMethod(graph=None).search("  ")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.EmptyQueryError: query is empty (or only whitespace)
        """
        check_query(query)
        check_k(k)
        if self.plans is None:
            run = run_agent(self.graph, query, trace=trace)
        else:
            self.plans.begin(query)
            try:
                run = run_agent(self.graph, query, trace=trace)
            except BaseException:
                self.plans.finish(keep=False)
                raise
            replayed = self.plans.finish(keep=run.stop_reason != "llm_error")  # a failed run's plan is not kept
            run.trace.count("iterative.plan_replayed", int(replayed))
        self.last_run = run
        n = len(run.working_set)
        return [
            ScoredHit(
                obj=Passage(
                    id=c["id"], text=c["text"], title=c["title"], metadata={"turn": c["turn"], "query": c["query"]}
                ),
                score=float(n - i),
                rank=i,
            )
            for i, c in enumerate(run.working_set[:k])
        ]


def build_iterative(ctx: MethodContext) -> IterativeAgentMethod:
    """Factory registered as ``iterative``: the agent with a local model over the hybrid baseline.

    Examples:
        >>> build_iterative(MethodContext(corpus=[], options={"base": "nope"}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option base must be one of bm25, dense, hybrid; got 'nope'
    """
    from retrievekit.core.index import baselines
    from retrievekit.core.llm.judge_hooks import judge_from_options

    check_option_keys(ctx.options, (*ITERATIVE_OPTIONS, *baselines.HYBRID_OPTIONS), label="iterative")
    judge, opts = judge_from_options(ctx)
    base = str(opts.get("base", "hybrid"))
    builders = {"bm25": baselines.build_bm25, "dense": baselines.build_dense, "hybrid": baselines.build_hybrid}
    if base not in builders:
        raise InvalidInputError(f"option base must be one of {', '.join(sorted(builders))}; got {base!r}")
    try:
        judge_threshold = float(opts.get("judge_threshold", 0.5))
    except (TypeError, ValueError):
        raise InvalidInputError(f"option judge_threshold must be a number, got {opts['judge_threshold']!r}") from None
    base_options = {k: v for k, v in ctx.options.items() if k not in ITERATIVE_OPTIONS}
    retriever = builders[base](dataclasses.replace(ctx, options=base_options))

    from retrievekit.langchain.local_chat import LocalToolChatModel
    from retrievekit.langgraph.graph import build_iterative_agent

    chat: Any = LocalToolChatModel(
        llm=ctx.load_llm(),
        max_tokens=int(opts.get("max_tokens", 96)),
        answer_max_tokens=int(opts.get("answer_max_tokens", 32)),
    )
    plans = _plan_replay(ctx, opts, chat, base_options)
    graph = build_iterative_agent(
        plans if plans is not None else chat,
        retriever,
        max_turns=int(opts.get("max_turns", 5)),
        search_top_k=int(opts.get("search_top_k", 5)),
        fallback_on_first_turn=option_bool("fallback", opts.get("fallback", True)),
        enable_delete=option_bool("delete", opts.get("delete", True)),
        judge=judge,
        judge_threshold=judge_threshold,
    )
    return IterativeAgentMethod(graph, plans=plans)


def _plan_replay(ctx: MethodContext, opts: dict[str, Any], chat: Any, base_options: dict[str, Any]) -> Any:
    """The ``plan_cache`` option: a :class:`PlanReplayChatModel` over ``chat``, or None when it is off."""
    folder = cache_folder_option("plan_cache", opts.get("plan_cache"), ctx.work_dir, "agent-plans", default_on=False)
    if folder is None:
        return None
    from retrievekit.core.iterative.plan_cache import PlanCache
    from retrievekit.langgraph.plan_replay import PlanReplayChatModel

    settings = {k: v for k, v in opts.items() if k not in ("judge_dir", "judge_threshold", "plan_cache")}
    settings["base_options"] = base_options
    model = ctx.llm_label
    if model is None:  # a model object: its class and its own name, so two local models never share plans
        model = f"{type(ctx.llm).__qualname__}:{getattr(ctx.llm, 'name', '')}"
    cache = PlanCache(folder, model=model, settings=settings, corpus_ids=(o.id for o in ctx.corpus))
    return PlanReplayChatModel(inner=chat, plans=cache)
