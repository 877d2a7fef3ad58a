"""One tool call of the iterative agent, as a pure function over the JSON-safe working set.

Fishing for Answers (mechanism 3): the agent grows a working set of chunks with ``chunk_search`` and prunes it with
``chunk_delete``. On turn 1 a search also runs with the user's original question (the *fallback search*, against
query drift), merged without duplicates. With a relevance judge (ours, not the paper's), the chunks a search added
that score below the threshold are removed again, as if the model had deleted them.

Each step takes the working set and the validated arguments and returns a frozen :class:`StepResult`: the new
working set, the JSON-safe trace events (see :func:`~retrievekit.core.iterative.state.trace_event`), the reply the
model reads as the tool's result, and the progress events a framework may stream. Nothing is mutated and no
framework is needed: a LangGraph ``tools`` node only translates messages into these calls and back.

Examples:
    >>> from retrievekit.core.iterative.arguments import ChunkDeleteArgs, ChunkSearchArgs
    >>> from retrievekit.core.iterative.state import make_chunk
    >>> def search(query, k, trace):
    ...     return [make_chunk("a", "Apples are red."), make_chunk("b", "Bananas are yellow.")][:k]
    >>> r = search_step([], ChunkSearchArgs(query="apples"), search, question="What colour are apples?", turn=1)
    >>> [c["id"] for c in r.working_set], r.searches, r.fallback_done
    (['a', 'b'], 2, True)
    >>> r.reply
    'Added 2 chunk(s): [a], [b] Skipped 2 duplicate(s). Working set: 2 chunk(s).'
    >>> d = delete_step(r.working_set, ChunkDeleteArgs(ids=["b"]), turn=2)
    >>> [c["id"] for c in d.working_set], d.reply
    (['a'], 'Removed 1 chunk(s). Working set: 1 chunk(s).')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from retrievekit.core.errors import InvalidInputError, ToolCallError
from retrievekit.core.iterative.arguments import ChunkDeleteArgs, ChunkSearchArgs
from retrievekit.core.iterative.state import Chunk, delete_chunks, merge_chunks, trace_event
from retrievekit.core.llm.judge_hooks import judge_relevance
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.trace import Trace

__all__ = ["SearchFunction", "SearchSettings", "StepResult", "delete_step", "rejected_step", "search_step"]

SearchFunction = Callable[[str, int, "Trace | None"], list[Chunk]]
"""``search(query, k, trace) -> chunks``, best first (at most ``k``)."""


@dataclass(frozen=True)
class SearchSettings:
    """How ``chunk_search`` runs: results per search, the turn-1 fallback search, and the optional judge.

    ``top_k`` (paper: 5) results per search; ``fallback_on_first_turn`` also searches with the original question on
    turn 1; ``judge`` (a :class:`~retrievekit.core.llm.protocol.RelevanceJudge`) scores the chunks each search added
    and those below ``judge_threshold`` (ours: 0.5, a calibrated judge's decision threshold) are deleted again.

    Examples:
        >>> SearchSettings(top_k=3).top_k
        3
        >>> SearchSettings(top_k=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: search_top_k must be a positive integer, got 0
    """

    top_k: int = 5
    fallback_on_first_turn: bool = True
    judge: Any = None
    judge_threshold: float = 0.5

    def __post_init__(self) -> None:
        k, judge, threshold = self.top_k, self.judge, self.judge_threshold
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"search_top_k must be a positive integer, got {k!r}")
        if judge is not None and not isinstance(judge, RelevanceJudge):
            raise InvalidInputError(
                f"judge must implement score_relevance(query, candidates), got {type(judge).__name__}"
            )
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
            raise InvalidInputError(f"judge_threshold must be a number in [0, 1], got {threshold!r}")


@dataclass(frozen=True)
class StepResult:
    """What one tool call did.

    ``working_set``: the new working set; ``events``: JSON-safe trace events, in order; ``reply``: the text the model
    reads as the tool's result; ``error``: the call was refused (``reply`` says why); ``searches``: retrieval calls
    made; ``fallback_done``: the fallback search has run (this step or before); ``usage``: judge cost to add to the
    agent's usage (``judge_calls``, ``llm_calls``, ``prompt_tokens``, ``completion_tokens``; empty without a judge
    call); ``progress``: JSON-safe progress events for a stream.

    Examples:
        >>> StepResult(working_set=[], events=[], reply="Removed 0 chunk(s).").error
        False
    """

    working_set: list[Chunk]
    events: list[dict[str, Any]]
    reply: str
    error: bool = False
    searches: int = 0
    fallback_done: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    progress: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Found:
    chunks: list[Chunk]
    ok: bool
    events: list[dict[str, Any]]
    progress: list[dict[str, Any]]


def _search_once(search: SearchFunction, query: str, role: str, *, turn: int, top_k: int) -> _Found:
    """One retrieval call; a failing retriever or an empty result is recorded, never raised."""
    rk_trace = Trace()
    try:
        found = search(query, top_k, rk_trace)[:top_k]
    except Exception as e:
        msg = f"{role} search {query!r} failed: {type(e).__name__}: {e}"
        progress = {"event": "retriever_error", "turn": turn, "query": query, "error": str(e)}
        return _Found([], False, [trace_event("retriever_error", msg, turn=turn)], [progress])
    events = [trace_event(ev.kind, ev.message, turn=turn, data=ev.data) for ev in rk_trace.events]
    chunks = [cast(Chunk, {**c, "query": query, "turn": turn}) for c in found]
    if not chunks:
        events.append(trace_event("empty_result", f"{role} search {query!r} returned nothing", turn=turn))
    return _Found(chunks, True, events, [])


@dataclass(frozen=True)
class _Judged:
    working_set: list[Chunk]
    removed: list[str]
    events: list[dict[str, Any]]
    usage: dict[str, int]
    progress: list[dict[str, Any]]


def _judged_data(rk_trace: Trace) -> dict[str, Any]:
    """The judge call's scored pairs as event data (``judged``), for the harness's judge accuracy; {} without any."""
    if not rk_trace.judged:
        return {}
    return {
        "judged": [
            {"judge": dict(b.judge), "refs": [sorted(r) for r in b.refs], "scores": b.scores} for b in rk_trace.judged
        ]
    }


def _judge_added(ws: list[Chunk], added: list[str], *, question: str, turn: int, settings: SearchSettings) -> _Judged:
    """Score the chunks ``added`` by one search in one judge call; delete those below the threshold."""
    if settings.judge is None or not added:
        return _Judged(ws, [], [], {}, [])
    by_id = {c["id"]: c for c in ws}
    new = [by_id[i] for i in added if i in by_id]
    texts = [f"{c['title']}\n{c['text']}" if c["title"] else c["text"] for c in new]
    rk_trace = Trace()
    failure: Exception | None = None
    try:
        ps = judge_relevance(settings.judge, question, texts, trace=rk_trace, refs=[(c["id"],) for c in new])
    except Exception as e:  # a broken judge must not stop the agent: keep the chunks, say so
        failure, ps = e, []
    usage = {
        "judge_calls": 1,
        "llm_calls": rk_trace.llm_calls,
        "prompt_tokens": rk_trace.prompt_tokens,
        "completion_tokens": rk_trace.completion_tokens,
    }
    if failure is not None:
        msg = f"the judge failed ({type(failure).__name__}: {failure}); chunks kept"
        return _Judged(ws, [], [trace_event("judge_error", msg, turn=turn)], usage, [])
    scores = {c["id"]: round(p, 4) for c, p in zip(new, ps, strict=True)}
    judged = _judged_data(rk_trace)
    low = [c["id"] for c, p in zip(new, ps, strict=True) if p < settings.judge_threshold]
    if not low:
        msg = f"the judge kept all {len(new)} new chunk(s)"
        return _Judged(ws, [], [trace_event("judge", msg, turn=turn, data={"scores": scores, **judged})], usage, [])
    res = delete_chunks(ws, low)
    threshold = settings.judge_threshold
    data = {"removed": res.removed, "scores": scores, "threshold": threshold, **judged}
    event = trace_event(
        "judge_delete", f"judge deleted {res.removed} (P(relevant) < {threshold})", turn=turn, data=data
    )
    progress = {"event": "judge_delete", "turn": turn, "removed": res.removed}
    return _Judged(res.chunks, res.removed, [event], usage, [progress])


def _search_reply(added: list[str], duplicates: int, judged_out: list[str], size: int) -> str:
    if added:
        text = f"Added {len(added)} chunk(s): " + ", ".join(f"[{i}]" for i in added)
    else:
        text = "No new chunks (nothing found, or only chunks already in the working set)."
    if duplicates:
        text += f" Skipped {duplicates} duplicate(s)."
    if judged_out:
        text += " The relevance judge removed " + ", ".join(f"[{i}]" for i in judged_out) + "."
    return text + f" Working set: {size} chunk(s)."


def search_step(
    working_set: Sequence[Chunk],
    args: ChunkSearchArgs,
    search: SearchFunction,
    *,
    question: str,
    turn: int,
    settings: SearchSettings | None = None,
    fallback_done: bool = False,
) -> StepResult:
    """Run ``chunk_search(args.query)``: search, merge the hits without duplicates, let the judge delete (if any).

    On ``turn == 1`` (and ``settings.fallback_on_first_turn``, unless ``fallback_done``) the original ``question``
    is searched too, after the model's query. A retriever that raises (``retriever_error``) or finds nothing
    (``empty_result``) is recorded in the events, never raised; so is a judge that fails (``judge_error``: its
    chunks are kept).

    Examples:
        >>> from retrievekit.core.iterative.state import make_chunk
        >>> class Judge:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.9 if "apple" in c.lower() else 0.1 for c in candidates]
        >>> hits = lambda q, k, t: [make_chunk("a", "Apples are red."), make_chunk("s", "The sky is blue.")]
        >>> r = search_step([], ChunkSearchArgs(query="red"), hits, question="Apple colour?", turn=2,
        ...                 settings=SearchSettings(judge=Judge()))
        >>> [c["id"] for c in r.working_set], [e["kind"] for e in r.events], r.usage["judge_calls"]
        (['a'], ['search', 'judge_delete'], 1)
        >>> r.reply
        'Added 2 chunk(s): [a], [s] The relevance judge removed [s]. Working set: 1 chunk(s).'
        >>> def down(q, k, t):
        ...     raise OSError("index offline")
        >>> r = search_step([], ChunkSearchArgs(query="red"), down, question="Apple colour?", turn=2)
        >>> r.events[0]["message"], r.reply
        ("model search 'red' failed: OSError: index offline", 'No new chunks (nothing found, or only chunks already in the working set). Working set: 0 chunk(s).')
    """
    cfg = settings if settings is not None else SearchSettings()
    events: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []
    queries = [(args.query, "model")]
    fallback = bool(cfg.fallback_on_first_turn) and turn == 1 and not fallback_done
    if fallback:
        queries.append((question, "fallback"))
        msg = "turn 1: also searching with the original question"
        events.append(trace_event("fallback_search", msg, turn=turn, data={"query": args.query, "original": question}))
    ws, dups = list(working_set), 0
    added: list[str] = []
    for query, role in queries:
        found = _search_once(search, query, role, turn=turn, top_k=cfg.top_k)
        merged = merge_chunks(ws, found.chunks)
        ws, added, dups = merged.chunks, added + merged.added, dups + len(merged.duplicates)
        events += found.events
        progress += found.progress
        if found.ok:
            msg = f"{role} search {query!r}: {len(found.chunks)} hits, {len(merged.added)} new"
            data = {"query": query, "role": role, "hits": [c["id"] for c in found.chunks], "added": merged.added}
            events.append(trace_event("search", msg, turn=turn, data=data))
        progress.append({"event": "search", "turn": turn, "query": query, "role": role, "added": merged.added})
    judged = _judge_added(ws, added, question=question, turn=turn, settings=cfg)
    return StepResult(
        working_set=judged.working_set,
        events=events + judged.events,
        reply=_search_reply(added, dups, judged.removed, len(judged.working_set)),
        searches=len(queries),
        fallback_done=fallback_done or fallback,
        usage=judged.usage,
        progress=progress + judged.progress,
    )


def delete_step(working_set: Sequence[Chunk], args: ChunkDeleteArgs, *, turn: int) -> StepResult:
    """Run ``chunk_delete(args.ids)``: remove exactly the named chunks; ids not in the set are reported.

    Examples:
        >>> from retrievekit.core.iterative.state import make_chunk
        >>> r = delete_step([make_chunk("a", "x"), make_chunk("b", "y")], ChunkDeleteArgs(ids=["b", "zz"]), turn=3)
        >>> [c["id"] for c in r.working_set], [e["kind"] for e in r.events]
        (['a'], ['delete', 'unknown_ids'])
        >>> r.reply
        'Removed 1 chunk(s); unknown ids ["zz"]. Working set: 1 chunk(s).'
    """
    res = delete_chunks(working_set, args.ids)
    msg = f"deleted {res.removed}" + (f"; not in the working set: {res.unknown}" if res.unknown else "")
    events = [trace_event("delete", msg, turn=turn, data={"removed": res.removed, "unknown": res.unknown})]
    if res.unknown:
        events.append(trace_event("unknown_ids", f"chunk_delete named ids not in the set: {res.unknown}", turn=turn))
    reply = f"Removed {len(res.removed)} chunk(s)" + (f"; unknown ids {json.dumps(res.unknown)}" if res.unknown else "")
    return StepResult(
        working_set=res.chunks,
        events=events,
        reply=reply + f". Working set: {len(res.chunks)} chunk(s).",
        progress=[{"event": "delete", "turn": turn, "removed": res.removed, "unknown": res.unknown}],
    )


def rejected_step(working_set: Sequence[Chunk], error: ToolCallError, *, turn: int) -> StepResult:
    """A tool call that cannot run (see :func:`~retrievekit.core.iterative.arguments.parse_tool_call`): the working
    set is unchanged, the error is recorded (its ``kind``, then a ``tool_error`` the model sees on later turns) and
    the reply is the error message.

    Examples:
        >>> from retrievekit.core.iterative.arguments import parse_tool_call
        >>> try:
        ...     parse_tool_call("chunk_search", {"query": "   "})
        ... except ToolCallError as e:
        ...     r = rejected_step([], e, turn=1)
        >>> r.error, [e["kind"] for e in r.events], r.events[1]["message"]
        (True, ['invalid_tool_args', 'tool_error'], 'chunk_search: invalid arguments')
    """
    data = {"args": error.arguments} if error.errors else {}
    events = [
        trace_event(error.kind, str(error), turn=turn, data=data),
        trace_event("tool_error", f"{error.tool}: {error.label}", turn=turn),
    ]
    progress = []
    if error.errors:
        progress.append({"event": "invalid_tool_args", "turn": turn, "tool": error.tool, "error": error.errors})
    return StepResult(working_set=list(working_set), events=events, reply=str(error), error=True, progress=progress)
