"""The iterative search/delete agent (Fishing for Answers, mechanism 3) as a compiled LangGraph ``StateGraph``.

Graph: ``START -> start -> agent -> (tools -> agent)* -> answer -> END``.

* ``start`` takes the question (the last message when it is a human one, else ``state["question"]``) and resets the per-question
  counters; the working set is kept (pass ``{"working_set": []}`` to clear it).
* ``agent`` shows the model the question, the working set (``[id] title: text``) and the turn budget, with the tools
  ``chunk_search(query)`` and ``chunk_delete(ids)`` bound; a reply without tool calls is the answer.
* ``tools`` (an :class:`IterativeToolNode`) validates the arguments, runs the calls and updates the working set. On
  turn 1 ``chunk_search`` also searches with the user's original question (the *fallback search*), merged without
  duplicates. The mechanism itself is framework-free (:mod:`retrievekit.core.iterative.steps`); the nodes here only
  translate messages and tool calls.
* after ``max_turns`` turns the loop goes to ``answer`` (an orderly stop, ``stop_reason="turn_cap"``), which asks the
  model for a short answer from the working set. ``recursion_limit`` is set on the compiled graph as a backstop.

With ``judge=`` (a :class:`~retrievekit.core.llm.protocol.RelevanceJudge`, e.g. a fine-tuned judge), every
``chunk_search`` call ends with one batched ``score_relevance(question, new chunks)``: the chunks it added that score
below ``judge_threshold`` are removed again, as if the model had called ``chunk_delete`` (a ``judge_delete`` event,
and the tool reply tells the model). Without a judge nothing changes.

Everything the agent did is in ``state["trace"]`` (JSON-safe events: searches, fallback, deletions, invalid
arguments, retriever errors, empty results, the turn cap) and ``state["usage"]``; progress is streamed with
``stream_mode="custom"``.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.index import BM25Index
    >>> from langchain_core.messages import AIMessage
    >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
    >>> llm = ScriptedToolChatModel(replies=[
    ...     AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": "apples"}, "id": "1"}]),
    ...     AIMessage("red")])
    >>> agent = build_iterative_agent(llm, BM25Index.build([Passage(id="a", text="Apples are red.")]))
    >>> out = agent.invoke({"question": "What colour are apples?"})
    >>> out["answer"], [c["id"] for c in out["working_set"]], out["stop_reason"]
    ('red', ['a'], 'answered')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from retrievekit.core.errors import EmptyQueryError, InvalidInputError, ToolCallError
from retrievekit.core.iterative.arguments import (
    TOOL_NAMES,
    ChunkDeleteArgs,
    ChunkSearchArgs,
    parse_tool_call,
    unparsable_call,
)
from retrievekit.core.iterative.prompts import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_NO_DELETE,
    TOOL_DESCRIPTIONS,
    answer_messages,
    turn_instruction,
)
from retrievekit.core.iterative.state import (
    Chunk,
    context_tokens,
    recursion_limit_for,
    render_working_set,
    trace_event,
)
from retrievekit.core.iterative.steps import (
    SearchFunction,
    SearchSettings,
    StepResult,
    delete_step,
    rejected_step,
    search_step,
)
from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.langgraph.checkpoints import strict_checkpointer
from retrievekit.langgraph.model_policy import AGENT_TURN_MAX_TOKENS, ANSWER_MAX_TOKENS, turn_limits, turn_transport
from retrievekit.langgraph.model_step import NodeCall, call_of, model_node
from retrievekit.langgraph.replies import add_usage, call_from_text, forced_search, reply_events, usage_of
from retrievekit.langgraph.retrievers import as_search_function

__all__ = [
    "ChunkDeleteArgs",
    "ChunkSearchArgs",
    "IterativeAgentState",
    "IterativeToolNode",
    "build_iterative_agent",
    "chunk_delete",
    "chunk_search",
]


@tool("chunk_search", args_schema=ChunkSearchArgs, description=TOOL_DESCRIPTIONS["chunk_search"])
def chunk_search(query: str) -> str:
    """Search the collection (the agent's ``tools`` node executes it against the working set)."""
    return f"chunk_search({query!r}) runs inside the iterative agent graph"


@tool("chunk_delete", args_schema=ChunkDeleteArgs, description=TOOL_DESCRIPTIONS["chunk_delete"])
def chunk_delete(ids: list[str]) -> str:
    """Remove chunks from the working set (the agent's ``tools`` node executes it)."""
    return f"chunk_delete({ids!r}) runs inside the iterative agent graph"


class IterativeAgentState(TypedDict, total=False):
    """State of the iterative agent graph (every value is JSON-safe, so any checkpointer can store it).

    Keys: ``messages`` (transcript, ``add_messages`` reducer), ``question``, ``working_set`` (list of
    :class:`~retrievekit.core.iterative.state.Chunk`), ``turn``, ``searches`` (retrieval calls for this question),
    ``fallback_done``, ``answer``, ``stop_reason`` (``answered`` | ``turn_cap`` | ``no_action`` | ``llm_error``),
    ``trace`` (event dicts), ``usage`` (``llm_calls``, ``prompt_tokens``, ``completion_tokens``).

    Examples:
        >>> sorted(IterativeAgentState.__annotations__)[:3]
        ['answer', 'fallback_done', 'messages']
    """

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    working_set: list[Chunk]
    turn: int
    searches: int
    fallback_done: bool
    answer: str | None
    stop_reason: str | None
    trace: list[dict[str, Any]]
    usage: dict[str, int]


def _as_chat_model(llm: Any) -> BaseChatModel:
    if isinstance(llm, BaseChatModel):
        return llm
    if hasattr(llm, "complete_json") and hasattr(llm, "complete"):
        from retrievekit.langchain.local_chat import LocalToolChatModel

        return LocalToolChatModel(llm=llm)
    raise InvalidInputError(
        f"llm must be a LangChain chat model (with bind_tools) or a retrievekit LocalLM, got {type(llm).__name__}"
    )


def _bind_tools(chat: BaseChatModel, tools: Sequence[BaseTool], **kwargs: Any) -> Runnable[Any, Any]:
    try:
        return chat.bind_tools(tools, **kwargs)
    except NotImplementedError as e:
        raise InvalidInputError(
            f"{type(chat).__name__} does not implement bind_tools; use a tool-calling chat model or a LocalLM"
        ) from e


def _bind_forcing(chat: BaseChatModel, tools: Sequence[BaseTool]) -> Runnable[Any, Any] | None:
    """The model bound so that it must call a tool (``tool_choice="required"``), or None when it cannot be asked.

    ``"required"`` rather than a tool's name: OpenAI, vLLM and llama.cpp's server all take the string form.
    """
    try:
        return _bind_tools(chat, tools, tool_choice="required")
    except (TypeError, ValueError, InvalidInputError):
        return None


def _question_of(state: IterativeAgentState) -> str:
    msgs = state.get("messages") or []
    if msgs and isinstance(msgs[-1], HumanMessage) and msgs[-1].text.strip():
        return msgs[-1].text.strip()  # a new user turn (also the follow-up question on a resumed thread)
    q = state.get("question")
    if isinstance(q, str) and q.strip():
        return q.strip()
    raise EmptyQueryError("the iterative agent needs a question: pass {'question': ...} or a human message")


def _safe_writer() -> Any:
    try:
        return get_stream_writer()
    except Exception:  # outside a runnable context (direct node calls in tests)
        return lambda _chunk: None


def _last_ai(state: IterativeAgentState) -> AIMessage | None:
    for m in reversed(state.get("messages") or []):
        if isinstance(m, AIMessage):
            return m
        if isinstance(m, HumanMessage):
            return None
    return None


def _turn(state: IterativeAgentState) -> int:
    return int(state.get("turn", 0))


# ---------------------------------------------------------------------------------------------- start


def _start_node(state: IterativeAgentState) -> dict[str, Any]:
    """Take the question and reset the per-question counters; the working set is kept."""
    question = _question_of(state)
    update: dict[str, Any] = {
        "question": question,
        "turn": 0,
        "searches": 0,
        "fallback_done": False,
        "answer": None,
        "stop_reason": None,
        "trace": [],
        "usage": {},
        "working_set": list(state.get("working_set") or []),
    }
    if not any(isinstance(m, HumanMessage) and m.text.strip() == question for m in state.get("messages") or []):
        update["messages"] = [HumanMessage(question)]
    _safe_writer()({"event": "start", "question": question, "working_set": len(update["working_set"])})
    return update


# ---------------------------------------------------------------------------------------------- agent


@dataclass(frozen=True)
class _Bound:
    """The model as the agent node calls it (the drivers' transports): bound to the tools, and (turn 1) bound so
    that it must call one; each turn's ``(max_tokens, temperature)``."""

    tools: Any
    first_turn: Any
    tool_names: tuple[str, ...]
    always_search: bool
    raise_errors: bool = True
    limits: tuple[int, float] = (AGENT_TURN_MAX_TOKENS, 0.0)


def _make_agent_node(bound: _Bound, system_prompt: str, max_turns: int) -> Runnable[Any, Any]:
    """The ``agent`` node: show the model the question, the working set and the budget; keep its reply.

    Turn 1 always searches when ``always_search``: the model is asked with ``tool_choice="required"`` and the search
    tool alone; a reply that writes its call as text is parsed into it; a reply with no valid search call (an answer,
    another tool, bad arguments) gets the question searched instead. One body for ``invoke`` and ``ainvoke``
    (:func:`~retrievekit.langgraph.model_step.model_node`).
    """

    def agent(state: IterativeAgentState) -> NodeCall:
        turn, ws, trace = _turn(state) + 1, list(state.get("working_set") or []), list(state.get("trace") or [])
        instruction = turn_instruction(
            state["question"], render_working_set(ws), trace, turn=turn, max_turns=max_turns, tokens=context_tokens(ws)
        )
        prompt: list[BaseMessage] = [SystemMessage(system_prompt), HumanMessage(instruction)]
        writer = _safe_writer()
        writer({"event": "agent", "turn": turn, "working_set": len(ws)})
        model = bound.first_turn if turn == 1 and bound.always_search and bound.first_turn is not None else bound.tools

        def then(reply: AIMessage) -> dict[str, Any]:
            p, c, estimated = usage_of(reply, prompt)
            trace.extend(reply_events(reply, turn, estimated))
            if not reply.tool_calls and not reply.invalid_tool_calls:
                reply, events = call_from_text(reply, bound.tool_names, turn)
                trace.extend(events)
            if turn == 1 and bound.always_search and not any(tc["name"] == "chunk_search" for tc in reply.tool_calls):
                reply, events = forced_search(state["question"], turn)  # no (valid) search asked for: the question
                trace.extend(events)
            calls = [{"name": tc["name"], "args": tc["args"]} for tc in reply.tool_calls]
            writer({"event": "agent_reply", "turn": turn, "tool_calls": calls, "content": reply.text[:200]})
            return {"turn": turn, "messages": [reply], "trace": trace, "usage": add_usage(state.get("usage"), p, c)}

        def failed(e: Exception) -> dict[str, Any]:  # recorded; the answer node takes over (on_llm_error="stop")
            trace.append(trace_event("llm_error", f"agent LLM call failed: {type(e).__name__}: {e}", turn=turn))
            return {"turn": turn, "trace": trace, "stop_reason": "llm_error"}

        max_tokens, temperature = bound.limits
        call = call_of("iterative.turn", prompt, max_tokens=max_tokens, temperature=temperature)
        return NodeCall(model, call, then, None if bound.raise_errors else failed)

    return model_node(agent, "agent")


def _route_after_agent(state: IterativeAgentState) -> Literal["tools", "answer"]:
    if state.get("stop_reason"):
        return "answer"
    last = _last_ai(state)
    if last is not None and (last.tool_calls or last.invalid_tool_calls):
        return "tools"
    return "answer"


# ---------------------------------------------------------------------------------------------- tools


@dataclass
class _ToolTurn:
    """What the tool calls of one agent turn did so far (folded into one state update)."""

    question: str
    turn: int
    working_set: list[Chunk]
    trace: list[dict[str, Any]]
    usage: dict[str, int]
    searches: int
    fallback_done: bool
    messages: list[ToolMessage] = field(default_factory=list)

    @classmethod
    def of(cls, state: IterativeAgentState) -> _ToolTurn:
        return cls(
            question=str(state.get("question") or ""),
            turn=_turn(state),
            working_set=list(state.get("working_set") or []),
            trace=list(state.get("trace") or []),
            usage=dict(state.get("usage") or {}),
            searches=int(state.get("searches", 0)),
            fallback_done=bool(state.get("fallback_done", False)),
        )

    def apply(self, result: StepResult, call_id: str, writer: Callable[[Any], None]) -> None:
        self.working_set = result.working_set
        self.trace += result.events
        for key, n in result.usage.items():
            self.usage[key] = self.usage.get(key, 0) + n
        self.searches += result.searches
        self.fallback_done = self.fallback_done or result.fallback_done
        status: Literal["success", "error"] = "error" if result.error else "success"
        self.messages.append(ToolMessage(result.reply, tool_call_id=call_id, status=status))
        for chunk in result.progress:
            writer(chunk)


class IterativeToolNode:
    """The agent's ``tools`` node: runs the last AI message's tool calls with the framework-free steps.

    Each call is checked (:func:`~retrievekit.core.iterative.arguments.parse_tool_call`) and run with
    :func:`~retrievekit.core.iterative.steps.search_step` or :func:`~retrievekit.core.iterative.steps.delete_step`;
    a call that cannot run becomes an error ``ToolMessage``
    (:func:`~retrievekit.core.iterative.steps.rejected_step`), never an exception. The node only translates: tool
    calls in, ``ToolMessage`` replies, working set, trace, counters and custom stream events out.

    Examples:
        >>> from retrievekit.core.iterative.state import make_chunk
        >>> node = IterativeToolNode(lambda q, k, t: [make_chunk("a", "Apples are red.")])
        >>> call = {"name": "chunk_search", "args": {"query": "apples"}, "id": "1"}
        >>> out = node({"question": "Apple colour?", "turn": 2, "messages": [AIMessage("", tool_calls=[call])]})
        >>> [c["id"] for c in out["working_set"]], out["searches"], out["messages"][0].content
        (['a'], 1, 'Added 1 chunk(s): [a] Working set: 1 chunk(s).')
    """

    def __init__(
        self, search: SearchFunction, settings: SearchSettings | None = None, *, tool_names: Sequence[str] = TOOL_NAMES
    ) -> None:
        self.search = search
        self.settings = settings if settings is not None else SearchSettings()
        self.tool_names = tuple(tool_names)

    def _run_call(self, name: str, args: Any, turn: _ToolTurn) -> StepResult:
        """Run one tool call against ``turn``'s working set."""
        try:
            parsed = parse_tool_call(name, args, tools=self.tool_names)
        except ToolCallError as e:
            return rejected_step(turn.working_set, e, turn=turn.turn)
        if isinstance(parsed, ChunkDeleteArgs):
            return delete_step(turn.working_set, parsed, turn=turn.turn)
        return search_step(
            turn.working_set,
            parsed,
            self.search,
            question=turn.question,
            turn=turn.turn,
            settings=self.settings,
            fallback_done=turn.fallback_done,
        )

    async def acall(self, state: IterativeAgentState) -> dict[str, Any]:
        """The node under ``ainvoke`` / ``astream``: the same run off the event loop
        (:func:`~retrievekit.core.llm.bridge.run_off_loop`; a served judge inside awaits its async client)."""
        return await run_off_loop(self, state)

    def __call__(self, state: IterativeAgentState) -> dict[str, Any]:
        last = _last_ai(state)
        if last is None:
            return {}
        writer, run = _safe_writer(), _ToolTurn.of(state)
        for bad in last.invalid_tool_calls:
            error = unparsable_call(bad.get("name"), bad.get("error") or bad.get("args"))
            run.apply(rejected_step(run.working_set, error, turn=run.turn), str(bad.get("id") or "invalid"), writer)
        for call in last.tool_calls:
            result = self._run_call(call["name"], call.get("args") or {}, run)
            run.apply(result, str(call.get("id") or f"call_{run.turn}"), writer)
        update: dict[str, Any] = {
            "messages": run.messages,
            "working_set": run.working_set,
            "trace": run.trace,
            "searches": run.searches,
            "fallback_done": run.fallback_done,
        }
        if self.settings.judge is not None:
            update["usage"] = run.usage
        return update


def _make_route_after_tools(max_turns: int) -> Callable[[IterativeAgentState], Literal["agent", "answer"]]:
    def route_after_tools(state: IterativeAgentState) -> Literal["agent", "answer"]:
        return "answer" if _turn(state) >= max_turns else "agent"

    return route_after_tools


# ---------------------------------------------------------------------------------------------- answer


def _stop_reason(state: IterativeAgentState, max_turns: int) -> tuple[str, str | None, list[dict[str, Any]]]:
    """Why the loop ended: ``(reason, the model's answer if it gave one, events)``."""
    last, reason, turn = _last_ai(state), state.get("stop_reason"), _turn(state)
    if reason is None and last is not None and not last.tool_calls and not last.invalid_tool_calls:
        text = last.text.strip()
        if text:
            return "answered", text, []
        return "no_action", None, [trace_event("no_action", "the model neither called a tool nor answered", turn=turn)]
    if reason is None:
        msg = f"reached max_turns={max_turns}; answering from the working set"
        return "turn_cap", None, [trace_event("turn_cap", msg, turn=turn, data={"max_turns": max_turns})]
    return reason, None, []


def _make_answer_node(
    chat: Any, max_turns: int, raise_errors: bool = True, limits: tuple[int, float] = (ANSWER_MAX_TOKENS, 0.0)
) -> Runnable[Any, Any]:
    """The ``answer`` node: the model's own answer, or (turn cap, no action, LLM error) one from the working set,
    asked through ``chat`` (the drivers' transport) with ``limits`` (``max_tokens``, ``temperature``)."""

    def answer(state: IterativeAgentState) -> NodeCall | dict[str, Any]:
        writer, turn = _safe_writer(), _turn(state)
        reason, text, events = _stop_reason(state, max_turns)
        if text is not None:
            writer({"event": "answer", "turn": turn, "answer": text, "stop_reason": reason})
            return {"answer": text, "stop_reason": reason}
        trace, usage = list(state.get("trace") or []) + events, dict(state.get("usage") or {})
        prompt: list[BaseMessage] = [
            SystemMessage(c) if r == "system" else HumanMessage(c)
            for r, c in answer_messages(state["question"], render_working_set(list(state.get("working_set") or [])))
        ]

        def done(text: str, usage: dict[str, int]) -> dict[str, Any]:
            writer({"event": "answer", "turn": turn, "answer": text, "stop_reason": reason})
            return {
                "answer": text,
                "stop_reason": reason,
                "trace": trace,
                "usage": usage,
                "messages": [AIMessage(text)],
            }

        def then(reply: AIMessage) -> dict[str, Any]:
            p, c, _ = usage_of(reply, prompt)
            return done(reply.text.strip(), add_usage(usage, p, c))

        def failed(e: Exception) -> dict[str, Any]:
            trace.append(trace_event("llm_error", f"answer LLM call failed: {type(e).__name__}: {e}", turn=turn))
            return done("", usage)

        call = call_of("iterative.answer", prompt, max_tokens=limits[0], temperature=limits[1])
        return NodeCall(chat, call, then, None if raise_errors else failed)

    return model_node(answer, "answer")


# ---------------------------------------------------------------------------------------------- the graph


def _agent_graph(
    chat: BaseChatModel,
    tool_node: IterativeToolNode,
    max_turns: int,
    always_search: bool = True,
    policy: CallPolicy | None = None,
    raise_errors: bool = True,
) -> StateGraph:
    """Wire ``START -> start -> agent -> (tools -> agent)* -> answer -> END``; the model is bound to the tools."""
    tools = [chunk_search, chunk_delete] if "chunk_delete" in tool_node.tool_names else [chunk_search]
    system_prompt = SYSTEM_PROMPT if "chunk_delete" in tool_node.tool_names else SYSTEM_PROMPT_NO_DELETE
    # turn 1 may only search: the working set is empty, and a small model forced to call "a tool" may pick the delete
    forcing = always_search and _bind_forcing(chat, [chunk_search]) is not None
    forced = partial(_bind_tools, tools=[chunk_search], tool_choice="required")
    first = turn_transport(chat, forced, policy) if forcing else None
    tools_bound = turn_transport(chat, lambda m: _bind_tools(m, tools), policy)
    limits = turn_limits(chat, AGENT_TURN_MAX_TOKENS)
    bound = _Bound(tools_bound, first, tool_node.tool_names, always_search, raise_errors, limits)
    graph = StateGraph(IterativeAgentState)
    graph.add_node("start", _start_node)
    graph.add_node("agent", _make_agent_node(bound, system_prompt, max_turns))
    graph.add_node("tools", RunnableLambda(tool_node, afunc=tool_node.acall, name="tools"))
    answer = _make_answer_node(
        turn_transport(chat, lambda m: m, policy), max_turns, raise_errors, turn_limits(chat, ANSWER_MAX_TOKENS)
    )
    graph.add_node("answer", answer)
    graph.add_edge(START, "start")
    graph.add_edge("start", "agent")
    graph.add_conditional_edges("agent", _route_after_agent, ["tools", "answer"])
    graph.add_conditional_edges("tools", _make_route_after_tools(max_turns), ["agent", "answer"])
    graph.add_edge("answer", END)
    return graph


def _raises(on_llm_error: str) -> bool:
    """Whether a failed model call raises (``on_llm_error="raise"``) or stops the run (``"stop"``)."""
    if on_llm_error not in ("raise", "stop"):
        raise InvalidInputError(f"on_llm_error must be 'raise' or 'stop', got {on_llm_error!r}")
    return on_llm_error == "raise"


def build_iterative_agent(
    llm: Any,
    retriever: Any,
    *,
    max_turns: int = 5,
    search_top_k: int = 5,
    fallback_on_first_turn: bool = True,
    enable_delete: bool = True,
    checkpointer: Any = None,
    interrupt_before: Sequence[str] | None = None,
    name: str = "iterative_agent",
    judge: Any = None,
    judge_threshold: float = 0.5,
    always_search: bool = True,
    on_llm_error: Literal["raise", "stop"] = "raise",
    policy: CallPolicy | None = None,
) -> CompiledStateGraph:
    """Build and compile the iterative search/delete agent.

    Args:
        llm: a LangChain chat model that supports ``bind_tools`` (``ChatOpenAI`` against any OpenAI-compatible
            server, ``ChatOllama``, ...) or a retrievekit ``LocalLM`` (wrapped in
            :class:`~retrievekit.langchain.local_chat.LocalToolChatModel`: schema-constrained tool calls).
        retriever: where ``chunk_search`` searches -- a retrievekit retriever, a LlamaIndex or LangChain retriever, a
            ``search(query, k, trace)`` function, or a list of ``Passage`` objects (the hybrid baseline is built over).
        max_turns: agent turns before the loop is routed to the answer node (paper: 5).
        search_top_k: results per search (paper: 5).
        fallback_on_first_turn: on turn 1, also search with the original question (guards against query drift).
        enable_delete: bind ``chunk_delete`` (guards against context growth / retrieval laziness).
        checkpointer: e.g. ``InMemorySaver()`` or ``SqliteSaver``; then pass ``{"configurable": {"thread_id": ...}}``.
            Read strictly (:func:`~retrievekit.langgraph.checkpoints.strict_checkpointer`: only the state's own
            types), so a tampered checkpoint raises :class:`~retrievekit.core.errors.CheckpointError`, running nothing.
        interrupt_before: node names to pause before (``"tools"``, ``"answer"``), for human review or resume. The
            graph pauses before *every* run of those nodes, so resume with ``invoke(None, cfg)`` in a loop while
            ``graph.get_state(cfg).next`` is non-empty (see the example).
        name: the compiled graph's name (the node name when used as a subgraph).
        judge: an optional :class:`~retrievekit.core.llm.protocol.RelevanceJudge`; after each ``chunk_search`` it
            scores the chunks the search added against the question, and those below ``judge_threshold`` are
            deleted automatically (``judge_delete`` events). None (default): no automatic deletion.
        judge_threshold: ``P(relevant)`` a new chunk needs to stay (ours: 0.5; the paper leaves deletion to the model).
        always_search: turn 1 always searches (ours: True): ``tool_choice="required"``, a call written as text is
            parsed (``text_tool_call``), else the question is searched (``forced_search``). False: it may answer.
        on_llm_error: ``"raise"`` (default): a failed model call raises its typed error; ``"stop"``: it is recorded
            and the run ends with ``stop_reason="llm_error"``. ``policy``: each call's ``CallPolicy`` (docs/served-llms).

    Returns:
        A ``CompiledStateGraph`` over :class:`IterativeAgentState`, with ``recursion_limit`` preset to
        ``2 * max_turns + 6``. Input: ``{"question": ...}`` or ``{"messages": [HumanMessage(...)]}``.

    Examples:
        >>> from retrievekit.langgraph.testing import ScriptedToolChatModel
        >>> g = build_iterative_agent(ScriptedToolChatModel(replies=["no idea"]), lambda q, k, t: [])
        >>> g.invoke({"question": "Why?"})["answer"]
        'no idea'
        >>> g.config["recursion_limit"]
        16

        Pausing before every tool turn for review, with a checkpointer; a run with two searches pauses twice:

        >>> from langchain_core.messages import AIMessage
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> call = lambda q: AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": q}, "id": q}])
        >>> llm = ScriptedToolChatModel(replies=[call("apples"), call("red fruit"), "red"])
        >>> g = build_iterative_agent(llm, lambda q, k, t: [], checkpointer=InMemorySaver(), interrupt_before=["tools"])
        >>> cfg = {"configurable": {"thread_id": "t1"}}
        >>> state = g.invoke({"question": "What colour are apples?"}, cfg)  # paused before the first tool call
        >>> pauses = 0
        >>> while g.get_state(cfg).next:  # paused: g.get_state(cfg).values["messages"][-1].tool_calls is pending
        ...     pauses += 1
        ...     state = g.invoke(None, cfg)  # approve: run the tools, continue to the next pause or the end
        >>> pauses, state["answer"], state["stop_reason"]
        (2, 'red', 'answered')
    """
    settings = SearchSettings(search_top_k, fallback_on_first_turn, judge, judge_threshold)  # fails fast
    search_fn = as_search_function(retriever)  # before the model is wrapped: a bad retriever fails fast
    tool_node = IterativeToolNode(search_fn, settings, tool_names=TOOL_NAMES if enable_delete else ("chunk_search",))
    graph = _agent_graph(_as_chat_model(llm), tool_node, max_turns, always_search, policy, _raises(on_llm_error))
    interrupt = list(interrupt_before) if interrupt_before else None
    compiled = graph.compile(checkpointer=strict_checkpointer(checkpointer), interrupt_before=interrupt, name=name)
    return compiled.with_config(recursion_limit=recursion_limit_for(max_turns))
