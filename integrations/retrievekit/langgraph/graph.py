"""The iterative search/delete agent (Fishing for Answers, mechanism 3) as a compiled LangGraph ``StateGraph``.

Graph: ``START -> start -> agent -> (tools -> agent)* -> answer -> END``.

* ``start`` takes the question (the last message when it is a human one, else ``state["question"]``) and resets the per-question
  counters; the working set is kept (pass ``{"working_set": []}`` to clear it).
* ``agent`` shows the model the question, the working set (``[id] title: text``) and the turn budget, with the tools
  ``chunk_search(query)`` and ``chunk_delete(ids)`` bound; a reply without tool calls is the answer.
* ``tools`` validates the arguments, runs the calls and updates the working set. On turn 1 ``chunk_search`` also
  searches with the user's original question (the *fallback search*), merged without duplicates.
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

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field, ValidationError, field_validator

from retrievekit.core.errors import EmptyQueryError, InvalidInputError
from retrievekit.core.iterative.prompts import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_NO_DELETE,
    TOOL_DESCRIPTIONS,
    agent_instruction,
    answer_messages,
)
from retrievekit.core.iterative.state import (
    Chunk,
    _jsonable,
    context_tokens,
    delete_chunks,
    merge_chunks,
    recursion_limit_for,
    render_working_set,
)
from retrievekit.core.llm.json_output import estimate_tokens
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.retriever import judge_relevance
from retrievekit.core.trace import Trace
from retrievekit.langgraph.retrievers import as_search_function

__all__ = [
    "ChunkDeleteArgs",
    "ChunkSearchArgs",
    "IterativeAgentState",
    "build_iterative_agent",
    "chunk_delete",
    "chunk_search",
]


class ChunkSearchArgs(BaseModel):
    """Arguments of ``chunk_search``.

    Examples:
        >>> ChunkSearchArgs(query="  Paris population ").query
        'Paris population'
    """

    query: str = Field(min_length=1, max_length=1000, description="a short search query")

    @field_validator("query")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("query is empty")
        return v


class ChunkDeleteArgs(BaseModel):
    """Arguments of ``chunk_delete``.

    Examples:
        >>> ChunkDeleteArgs(ids=["a", "b"]).ids
        ['a', 'b']
    """

    ids: list[str] = Field(min_length=1, max_length=100, description="ids of chunks to remove, as shown in [brackets]")


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


def _event(state: IterativeAgentState, kind: str, message: str, **data: Any) -> dict[str, Any]:
    return {"kind": kind, "message": message, "turn": int(state.get("turn", 0)), "data": _jsonable(data)}


def _usage_of(msg: BaseMessage, prompt: Sequence[BaseMessage]) -> tuple[int, int, bool]:
    usage = getattr(msg, "usage_metadata", None) or {}
    p, c = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(p, int) and isinstance(c, int):
        return p, c, False
    return sum(estimate_tokens(m.text) for m in prompt), estimate_tokens(msg.text), True


def _add_usage(usage: dict[str, int] | None, p: int, c: int) -> dict[str, int]:
    u = dict(usage or {})
    u["llm_calls"] = u.get("llm_calls", 0) + 1
    u["prompt_tokens"] = u.get("prompt_tokens", 0) + p
    u["completion_tokens"] = u.get("completion_tokens", 0) + c
    return u


def _as_chat_model(llm: Any) -> BaseChatModel:
    if isinstance(llm, BaseChatModel):
        return llm
    if hasattr(llm, "complete_json") and hasattr(llm, "complete"):
        from retrievekit.langchain.local_chat import LocalToolChatModel

        return LocalToolChatModel(lm=llm)
    raise InvalidInputError(
        f"llm must be a LangChain chat model (with bind_tools) or a retrievekit LocalLM, got {type(llm).__name__}"
    )


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
) -> CompiledStateGraph:
    """Build and compile the iterative search/delete agent.

    Args:
        llm: a LangChain chat model that supports ``bind_tools`` (``ChatOpenAI`` against any OpenAI-compatible
            server, ``ChatOllama``, ...) or a retrievekit ``LocalLM`` (wrapped in
            :class:`~retrievekit.langchain.local_chat.LocalToolChatModel`: schema-constrained tool calls).
        retriever: where ``chunk_search`` searches -- a retrievekit retriever (e.g. the hybrid baseline), a
            LlamaIndex or LangChain ``BaseRetriever``, a ``search(query, k, trace)`` function, or a list of
            ``Passage`` objects (the hybrid BM25 + dense baseline is built over them).
        max_turns: agent turns before the loop is routed to the answer node (paper: 5).
        search_top_k: results per search (paper: 5).
        fallback_on_first_turn: on turn 1, also search with the original question (guards against query drift).
        enable_delete: bind ``chunk_delete`` (guards against context growth / retrieval laziness).
        checkpointer: e.g. ``InMemorySaver()`` or ``SqliteSaver``; then pass ``{"configurable": {"thread_id": ...}}``.
        interrupt_before: node names to pause before (``"tools"``, ``"answer"``), for human review or resume. The
            graph pauses before *every* run of those nodes, so resume with ``invoke(None, cfg)`` in a loop while
            ``graph.get_state(cfg).next`` is non-empty (see the example).
        name: the compiled graph's name (the node name when used as a subgraph).
        judge: an optional :class:`~retrievekit.core.llm.protocol.RelevanceJudge`; after each ``chunk_search`` it
            scores the chunks the search added against the question, and those below ``judge_threshold`` are
            deleted automatically (``judge_delete`` events). None (default): no automatic deletion.
        judge_threshold: ``P(relevant)`` a new chunk needs to stay (ours: 0.5, a calibrated judge's decision
            threshold; the paper leaves deletion to the model).

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
    if isinstance(search_top_k, bool) or not isinstance(search_top_k, int) or search_top_k < 1:
        raise InvalidInputError(f"search_top_k must be a positive integer, got {search_top_k!r}")
    if judge is not None and not isinstance(judge, RelevanceJudge):
        raise InvalidInputError(f"judge must implement score_relevance(query, candidates), got {type(judge).__name__}")
    if isinstance(judge_threshold, bool) or not isinstance(judge_threshold, (int, float)):
        raise InvalidInputError(f"judge_threshold must be a number in [0, 1], got {judge_threshold!r}")
    if not 0.0 <= float(judge_threshold) <= 1.0:
        raise InvalidInputError(f"judge_threshold must be a number in [0, 1], got {judge_threshold!r}")
    recursion_limit = recursion_limit_for(max_turns)
    search_fn = as_search_function(retriever)  # before the model is wrapped: a bad retriever fails fast
    chat = _as_chat_model(llm)
    tools: list[BaseTool] = [chunk_search, chunk_delete] if enable_delete else [chunk_search]
    tool_names = {t.name for t in tools}
    try:
        bound = chat.bind_tools(tools)
    except NotImplementedError as e:
        raise InvalidInputError(
            f"{type(chat).__name__} does not implement bind_tools; use a tool-calling chat model or a LocalLM"
        ) from e
    system_prompt = SYSTEM_PROMPT if enable_delete else SYSTEM_PROMPT_NO_DELETE

    def start(state: IterativeAgentState) -> dict[str, Any]:
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

    def agent(state: IterativeAgentState, config: RunnableConfig) -> dict[str, Any]:
        turn = int(state.get("turn", 0)) + 1
        ws = list(state.get("working_set") or [])
        trace = list(state.get("trace") or [])
        actions = [
            f"- turn {e['turn']}: {e['message']}"
            for e in trace
            if e["kind"] in ("search", "delete", "judge_delete", "tool_error")
        ]
        instruction = agent_instruction(
            state["question"], render_working_set(ws), turn=turn, max_turns=max_turns, tokens=context_tokens(ws)
        )
        if actions:
            instruction += "\nDone so far:\n" + "\n".join(actions[-8:])
        prompt: list[BaseMessage] = [SystemMessage(system_prompt), HumanMessage(instruction)]
        writer = _safe_writer()
        writer({"event": "agent", "turn": turn, "working_set": len(ws)})
        st: IterativeAgentState = {**state, "turn": turn}
        try:
            reply = bound.invoke(prompt, config)
        except Exception as e:  # a provider error or timeout: recorded, then the answer node takes over
            trace.append(_event(st, "llm_error", f"agent LLM call failed: {type(e).__name__}: {e}"))
            return {"turn": turn, "trace": trace, "stop_reason": "llm_error"}
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=str(getattr(reply, "content", reply)))
        p, c, estimated = _usage_of(reply, prompt)
        usage = _add_usage(state.get("usage"), p, c)
        meta = reply.response_metadata or {}
        for ev in meta.get("retrievekit_events") or []:
            trace.append(_event(st, str(ev.get("kind", "llm_event")), str(ev.get("message", ""))))
        if meta.get("retrievekit_error"):
            trace.append(_event(st, "invalid_tool_call", str(meta["retrievekit_error"])))
        if estimated:
            trace.append(_event(st, "token_estimate", "the chat model reported no token usage; estimated len//4"))
        calls = [{"name": tc["name"], "args": tc["args"]} for tc in reply.tool_calls]
        writer({"event": "agent_reply", "turn": turn, "tool_calls": calls, "content": reply.text[:200]})
        return {"turn": turn, "messages": [reply], "trace": trace, "usage": usage}

    def route_after_agent(state: IterativeAgentState) -> Literal["tools", "answer"]:
        if state.get("stop_reason"):
            return "answer"
        last = _last_ai(state)
        if last is not None and (last.tool_calls or last.invalid_tool_calls):
            return "tools"
        return "answer"

    def run_search(
        query: str, state: IterativeAgentState, trace: list[dict[str, Any]], writer: Any, role: str
    ) -> tuple[list[Chunk], bool]:
        rk_trace = Trace()
        try:
            found = search_fn(query, search_top_k, rk_trace)[:search_top_k]
        except Exception as e:
            trace.append(_event(state, "retriever_error", f"{role} search {query!r} failed: {type(e).__name__}: {e}"))
            writer({"event": "retriever_error", "turn": state.get("turn", 0), "query": query, "error": str(e)})
            return [], False
        for ev in rk_trace.events:
            trace.append(_event(state, ev.kind, ev.message, **ev.data))
        turn = int(state.get("turn", 0))
        found = [{**c, "query": query, "turn": turn} for c in found]
        if not found:
            trace.append(_event(state, "empty_result", f"{role} search {query!r} returned nothing"))
        return found, True

    def judge_new(
        ws: list[Chunk],
        added: list[str],
        state: IterativeAgentState,
        trace: list[dict[str, Any]],
        usage: dict[str, int],
        writer: Any,
    ) -> tuple[list[Chunk], list[str]]:
        """Score the chunks ``added`` by one search; delete those below the threshold (returns the new set)."""
        if judge is None or not added:
            return ws, []
        by_id = {c["id"]: c for c in ws}
        new = [by_id[i] for i in added if i in by_id]
        texts = [f"{c['title']}\n{c['text']}" if c["title"] else c["text"] for c in new]
        rk_trace = Trace()
        try:
            ps = judge_relevance(judge, state["question"], texts, trace=rk_trace)
        except Exception as e:  # a broken judge must not stop the agent: keep the chunks, say so
            trace.append(_event(state, "judge_error", f"the judge failed ({type(e).__name__}: {e}); chunks kept"))
            return ws, []
        finally:
            usage["judge_calls"] = usage.get("judge_calls", 0) + 1
            usage["llm_calls"] = usage.get("llm_calls", 0) + rk_trace.llm_calls
            usage["prompt_tokens"] = usage.get("prompt_tokens", 0) + rk_trace.prompt_tokens
            usage["completion_tokens"] = usage.get("completion_tokens", 0) + rk_trace.completion_tokens
        scores = {c["id"]: round(p, 4) for c, p in zip(new, ps, strict=True)}
        low = [c["id"] for c, p in zip(new, ps, strict=True) if p < judge_threshold]
        if not low:
            trace.append(_event(state, "judge", f"the judge kept all {len(new)} new chunk(s)", scores=scores))
            return ws, []
        res = delete_chunks(ws, low)
        trace.append(
            _event(
                state,
                "judge_delete",
                f"judge deleted {res.removed} (P(relevant) < {judge_threshold})",
                removed=res.removed,
                scores=scores,
                threshold=judge_threshold,
            )
        )
        writer({"event": "judge_delete", "turn": state.get("turn", 0), "removed": res.removed})
        return res.chunks, res.removed

    def tools_node(state: IterativeAgentState) -> dict[str, Any]:
        writer = _safe_writer()
        last = _last_ai(state)
        ws = list(state.get("working_set") or [])
        trace = list(state.get("trace") or [])
        usage = dict(state.get("usage") or {})
        searches = int(state.get("searches", 0))
        fallback_done = bool(state.get("fallback_done", False))
        turn = int(state.get("turn", 0))
        out_msgs: list[ToolMessage] = []
        if last is None:
            return {}
        for bad in last.invalid_tool_calls:
            msg = f"could not parse the arguments of {bad.get('name')!r}: {bad.get('error') or bad.get('args')}"
            trace.append(_event(state, "invalid_tool_args", msg))
            trace.append(_event(state, "tool_error", f"{bad.get('name')}: unparsable arguments"))
            out_msgs.append(ToolMessage(msg, tool_call_id=str(bad.get("id") or "invalid"), status="error"))
        for call in last.tool_calls:
            name, args, cid = call["name"], call.get("args") or {}, str(call.get("id") or f"call_{turn}")
            if name not in tool_names:
                msg = f"unknown tool {name!r}; available: {', '.join(sorted(tool_names))}"
                trace.append(_event(state, "unknown_tool", msg))
                trace.append(_event(state, "tool_error", f"{name}: unknown tool"))
                out_msgs.append(ToolMessage(msg, tool_call_id=cid, status="error"))
                continue
            try:
                parsed: ChunkSearchArgs | ChunkDeleteArgs = (
                    ChunkSearchArgs.model_validate(args)
                    if name == "chunk_search"
                    else ChunkDeleteArgs.model_validate(args)
                )
            except ValidationError as e:
                errs = "; ".join(f"{'.'.join(str(x) for x in er['loc']) or 'args'}: {er['msg']}" for er in e.errors())
                msg = f"invalid arguments for {name}: {errs}"
                trace.append(_event(state, "invalid_tool_args", msg, args=args))
                trace.append(_event(state, "tool_error", f"{name}: invalid arguments"))
                writer({"event": "invalid_tool_args", "turn": turn, "tool": name, "error": errs})
                out_msgs.append(ToolMessage(msg, tool_call_id=cid, status="error"))
                continue
            if isinstance(parsed, ChunkSearchArgs):
                queries = [(parsed.query, "model")]
                if fallback_on_first_turn and turn == 1 and not fallback_done:
                    fallback_done = True
                    queries.append((state["question"], "fallback"))
                    trace.append(
                        _event(
                            state,
                            "fallback_search",
                            "turn 1: also searching with the original question",
                            query=parsed.query,
                            original=state["question"],
                        )
                    )
                added_all: list[str] = []
                dups = 0
                for q, role in queries:
                    found, ok = run_search(q, state, trace, writer, role)
                    searches += 1
                    merged = merge_chunks(ws, found)
                    ws = merged.chunks
                    added_all += merged.added
                    dups += len(merged.duplicates)
                    if ok:
                        trace.append(
                            _event(
                                state,
                                "search",
                                f"{role} search {q!r}: {len(found)} hits, {len(merged.added)} new",
                                query=q,
                                role=role,
                                hits=[c["id"] for c in found],
                                added=merged.added,
                            )
                        )
                    writer({"event": "search", "turn": turn, "query": q, "role": role, "added": merged.added})
                ws, judged_out = judge_new(ws, added_all, state, trace, usage, writer)
                if added_all:
                    content = f"Added {len(added_all)} chunk(s): " + ", ".join(f"[{i}]" for i in added_all)
                else:
                    content = "No new chunks (nothing found, or only chunks already in the working set)."
                if dups:
                    content += f" Skipped {dups} duplicate(s)."
                if judged_out:
                    content += " The relevance judge removed " + ", ".join(f"[{i}]" for i in judged_out) + "."
                out_msgs.append(ToolMessage(content + f" Working set: {len(ws)} chunk(s).", tool_call_id=cid))
            else:
                res = delete_chunks(ws, parsed.ids)
                ws = res.chunks
                trace.append(
                    _event(
                        state,
                        "delete",
                        f"deleted {res.removed}" + (f"; not in the working set: {res.unknown}" if res.unknown else ""),
                        removed=res.removed,
                        unknown=res.unknown,
                    )
                )
                if res.unknown:
                    trace.append(_event(state, "unknown_ids", f"chunk_delete named ids not in the set: {res.unknown}"))
                writer({"event": "delete", "turn": turn, "removed": res.removed, "unknown": res.unknown})
                content = f"Removed {len(res.removed)} chunk(s)" + (
                    f"; unknown ids {json.dumps(res.unknown)}" if res.unknown else ""
                )
                out_msgs.append(ToolMessage(content + f". Working set: {len(ws)} chunk(s).", tool_call_id=cid))
        update: dict[str, Any] = {
            "messages": out_msgs,
            "working_set": ws,
            "trace": trace,
            "searches": searches,
            "fallback_done": fallback_done,
        }
        if judge is not None:
            update["usage"] = usage
        return update

    def route_after_tools(state: IterativeAgentState) -> Literal["agent", "answer"]:
        return "answer" if int(state.get("turn", 0)) >= max_turns else "agent"

    def answer(state: IterativeAgentState, config: RunnableConfig) -> dict[str, Any]:
        writer = _safe_writer()
        trace = list(state.get("trace") or [])
        ws = list(state.get("working_set") or [])
        usage = dict(state.get("usage") or {})
        last = _last_ai(state)
        reason = state.get("stop_reason")
        update: dict[str, Any] = {}
        if reason is None and last is not None and not last.tool_calls and not last.invalid_tool_calls:
            text = last.text.strip()
            if text:
                writer({"event": "answer", "turn": state.get("turn", 0), "answer": text, "stop_reason": "answered"})
                return {"answer": text, "stop_reason": "answered"}
            reason = "no_action"
            trace.append(_event(state, "no_action", "the model neither called a tool nor answered"))
        if reason is None:
            reason = "turn_cap"
            trace.append(
                _event(
                    state,
                    "turn_cap",
                    f"reached max_turns={max_turns}; answering from the working set",
                    max_turns=max_turns,
                )
            )
        prompt: list[BaseMessage] = [
            SystemMessage(c) if r == "system" else HumanMessage(c)
            for r, c in answer_messages(state["question"], render_working_set(ws))
        ]
        try:
            reply = chat.invoke(prompt, config)
            text = reply.text.strip() if isinstance(reply, BaseMessage) else str(reply).strip()
            p, c, _ = _usage_of(reply, prompt) if isinstance(reply, BaseMessage) else (0, 0, True)
            usage = _add_usage(usage, p, c)
        except Exception as e:
            text = ""
            trace.append(_event(state, "llm_error", f"answer LLM call failed: {type(e).__name__}: {e}"))
        update.update(
            {"answer": text, "stop_reason": reason, "trace": trace, "usage": usage, "messages": [AIMessage(text)]}
        )
        writer({"event": "answer", "turn": state.get("turn", 0), "answer": text, "stop_reason": reason})
        return update

    graph = StateGraph(IterativeAgentState)
    graph.add_node("start", start)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools_node)
    graph.add_node("answer", answer)
    graph.add_edge(START, "start")
    graph.add_edge("start", "agent")
    graph.add_conditional_edges("agent", route_after_agent, ["tools", "answer"])
    graph.add_conditional_edges("tools", route_after_tools, ["agent", "answer"])
    graph.add_edge("answer", END)
    compiled = graph.compile(
        checkpointer=checkpointer, interrupt_before=list(interrupt_before) if interrupt_before else None, name=name
    )
    return compiled.with_config(recursion_limit=recursion_limit)
