"""The agent's working set of chunks, and the accounting around it (framework-free, JSON-safe).

A *chunk* is a plain dict (:class:`Chunk`): ``id``, ``text``, ``title``, ``score``, the ``query`` that found it and
the ``turn`` it arrived in. Plain dicts keep the LangGraph state serialisable by every checkpointer (SQLite
included). All helpers are pure: they return new lists and report what they did, so the caller can write it into a
trace.

Examples:
    >>> ws = merge_chunks([], [make_chunk("a", "alpha"), make_chunk("b", "beta")]).chunks
    >>> r = delete_chunks(ws, ["b", "zzz"])
    >>> [c["id"] for c in r.chunks], r.removed, r.unknown
    (['a'], ['b'], ['zzz'])
    >>> turns_left(turn=2, max_turns=5), recursion_limit_for(5)
    (3, 16)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.tokens import estimate_tokens
from retrievekit.core.llm.untrusted import fence_one, label
from retrievekit.core.trace import JudgedBatch, Trace
from retrievekit.core.types import ScoredHit

__all__ = [
    "Chunk",
    "DeleteResult",
    "REPLY_REPAIRS",
    "MergeResult",
    "chunk_from_hit",
    "context_tokens",
    "delete_chunks",
    "jsonable",
    "make_chunk",
    "merge_chunks",
    "recursion_limit_for",
    "render_working_set",
    "trace_event",
    "trace_from_events",
    "turns_left",
]


class Chunk(TypedDict):
    """One chunk of the working set (JSON-safe).

    Examples:
        >>> c: Chunk = make_chunk("a", "text", title="T", score=0.5, query="q", turn=1)
        >>> c["title"], c["turn"]
        ('T', 1)
    """

    id: str
    text: str
    title: str
    score: float
    query: str
    turn: int


def make_chunk(
    chunk_id: str, text: str, *, title: str = "", score: float = 0.0, query: str = "", turn: int = 0
) -> Chunk:
    """Build a :class:`Chunk`; the id must be a non-empty string.

    Examples:
        >>> make_chunk("p1", "Water boils at 100 C.")["id"]
        'p1'
        >>> make_chunk("", "x")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: chunk id must be a non-empty string, got ''
    """
    if not isinstance(chunk_id, str) or not chunk_id.strip():
        raise InvalidInputError(f"chunk id must be a non-empty string, got {chunk_id!r}")
    return Chunk(
        id=chunk_id, text=str(text), title=str(title or ""), score=float(score), query=str(query), turn=int(turn)
    )


def chunk_from_hit(hit: ScoredHit, *, query: str = "", turn: int = 0) -> Chunk:
    """Turn a retrievekit :class:`~retrievekit.core.types.ScoredHit` into a chunk.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> chunk_from_hit(ScoredHit(Passage(id="a", text="x", title="A"), 2.0), query="q", turn=1)["score"]
        2.0
    """
    return make_chunk(hit.obj.id, hit.obj.text, title=hit.obj.title, score=hit.score, query=query, turn=turn)


@dataclass(frozen=True)
class MergeResult:
    """What :func:`merge_chunks` did: the new working set, ids added and ids skipped as duplicates.

    Examples:
        >>> MergeResult(chunks=[], added=[], duplicates=["a"]).duplicates
        ['a']
    """

    chunks: list[Chunk]
    added: list[str]
    duplicates: list[str]


def merge_chunks(working: Sequence[Chunk], new: Iterable[Chunk]) -> MergeResult:
    """Append ``new`` chunks whose ids are not in ``working`` yet (first occurrence wins, order kept).

    Examples:
        >>> r = merge_chunks([make_chunk("a", "x")], [make_chunk("b", "y"), make_chunk("a", "x"), make_chunk("b", "y")])
        >>> [c["id"] for c in r.chunks], r.added, r.duplicates
        (['a', 'b'], ['b'], ['a', 'b'])
    """
    out = list(working)
    seen = {c["id"] for c in out}
    added: list[str] = []
    dups: list[str] = []
    for c in new:
        if c["id"] in seen:
            dups.append(c["id"])
            continue
        seen.add(c["id"])
        out.append(c)
        added.append(c["id"])
    return MergeResult(chunks=out, added=added, duplicates=dups)


@dataclass(frozen=True)
class DeleteResult:
    """What :func:`delete_chunks` did: the new working set, ids removed, ids that were not in the set.

    Examples:
        >>> DeleteResult(chunks=[], removed=["a"], unknown=[]).removed
        ['a']
    """

    chunks: list[Chunk]
    removed: list[str]
    unknown: list[str]


def delete_chunks(working: Sequence[Chunk], ids: Iterable[str]) -> DeleteResult:
    """Remove exactly the chunks whose ids are named; report names that matched nothing.

    Examples:
        >>> ws = [make_chunk("a", "x"), make_chunk("b", "y"), make_chunk("c", "z")]
        >>> r = delete_chunks(ws, ["c", "a", "a", "q"])
        >>> [c["id"] for c in r.chunks], r.removed, r.unknown
        (['b'], ['c', 'a'], ['q'])
    """
    present = {label(c["id"]): c["id"] for c in working}  # the id as the prompt shows it (see render_working_set)
    present.update({c["id"]: c["id"] for c in working})
    named = list(dict.fromkeys(str(i) for i in ids))
    removed = list(dict.fromkeys(present[i] for i in named if i in present))
    unknown = [i for i in named if i not in present]
    drop = set(removed)
    return DeleteResult(chunks=[c for c in working if c["id"] not in drop], removed=removed, unknown=unknown)


def context_tokens(chunks: Iterable[Chunk], counter: Callable[[str], int] = estimate_tokens) -> int:
    """Tokens the working set puts into the prompt (title + text per chunk), by ``counter`` (default len/4).

    Examples:
        >>> context_tokens([make_chunk("a", "x" * 40), make_chunk("b", "y" * 8, title="T" * 4)])
        13
    """
    return sum(counter(f"{c['title']}\n{c['text']}" if c["title"] else c["text"]) for c in chunks)


def render_working_set(chunks: Sequence[Chunk], *, max_chars_per_chunk: int | None = 600) -> str:
    """The working set as prompt text: one fenced ``<data id="...">title: text</data>`` block per chunk (long texts
    cut with "..."; document text neutralised, see :mod:`retrievekit.core.llm.untrusted`).

    Examples:
        >>> print(render_working_set([make_chunk("a", "Paris is in France.", title="Paris")]))
        <data id="a">Paris: Paris is in France.</data>
        >>> render_working_set([])
        '(empty: nothing retrieved yet)'
    """
    if not chunks:
        return "(empty: nothing retrieved yet)"
    lines = []
    for c in chunks:
        text = " ".join(c["text"].split())
        if max_chars_per_chunk is not None and len(text) > max_chars_per_chunk:
            text = text[: max(0, max_chars_per_chunk - 3)].rstrip() + "..."
        head = f"{c['title']}: " if c["title"] and c["title"] != c["id"] else ""
        lines.append(fence_one(head + text, c["id"]))
    return "\n".join(lines)


def turns_left(*, turn: int, max_turns: int) -> int:
    """Agent turns still allowed after ``turn`` turns (never negative).

    Examples:
        >>> turns_left(turn=7, max_turns=5)
        0
    """
    return max(0, int(max_turns) - int(turn))


def recursion_limit_for(max_turns: int) -> int:
    """The LangGraph ``recursion_limit`` for an agent of ``max_turns`` turns.

    One turn is two super-steps (agent, tools); ``start`` and ``answer`` add one each, and a final agent step that
    ends the loop one more, plus three steps of slack. The turn counter in the state is what stops the loop; this
    limit only guards against a bug turning into an endless run.

    Examples:
        >>> recursion_limit_for(1)
        8
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise InvalidInputError(f"max_turns must be a positive integer, got {max_turns!r}")
    return 2 * max_turns + 6


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value`` for trace data: dict keys become strings, tuples and sets lists, and anything
    that is not a str, int, float, bool or None its ``str()``.

    Examples:
        >>> from pathlib import PurePosixPath
        >>> jsonable({"ids": ("a", "b"), 1: PurePosixPath("/tmp/x"), "ok": None})
        {'ids': ['a', 'b'], '1': '/tmp/x', 'ok': None}
    """
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    return str(value)


def trace_event(kind: str, message: str, *, turn: int = 0, data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One JSON-safe agent event, as kept in the agent state's ``trace`` list (read by :func:`trace_from_events`).

    Examples:
        >>> trace_event("delete", "deleted ['b']", turn=2, data={"removed": ("b",)})
        {'kind': 'delete', 'message': "deleted ['b']", 'turn': 2, 'data': {'removed': ['b']}}
    """
    return {"kind": str(kind), "message": str(message), "turn": int(turn), "data": jsonable(dict(data or {}))}


REPLY_REPAIRS = ("text_tool_call", "forced_search", "invalid_tool_args", "unknown_tool")
"""Agent events that mark a model reply that was not a valid tool call: a call written as text and parsed, a turn-1
search forced after a text answer, a call with bad arguments, a call of a tool that does not exist. Each is also
counted as ``iterative.<kind>``, so a benchmark reports how often the model's replies needed repair."""


def trace_from_events(
    events: Iterable[dict[str, Any]],
    usage: dict[str, float] | None = None,
    counters: dict[str, float] | None = None,
    trace: Trace | None = None,
) -> Trace:
    """Fill a :class:`~retrievekit.core.trace.Trace` from the agent state's JSON-safe event list and counts.

    ``usage`` holds ``llm_calls`` (also the LLM rounds: the agent's calls are sequential), ``prompt_tokens`` and
    ``completion_tokens``; ``counters`` go to ``trace.counters``. Each event dict has ``kind``, ``message`` and
    optionally ``turn`` and ``data``; a ``judged`` list in an event's data (the judge's scored pairs) goes to
    ``trace.judged`` instead.

    Examples:
        >>> t = trace_from_events([{"kind": "fallback_search", "message": "x", "turn": 1}],
        ...                       {"llm_calls": 2, "prompt_tokens": 30, "completion_tokens": 5}, {"iterative.retrieval_calls": 2})
        >>> t.llm_calls, t.llm_rounds, t.events[0].data["turn"], t.counters["iterative.retrieval_calls"]
        (2, 2, 1, 2)
        >>> trace_from_events([{"kind": "forced_search", "message": "answered in text"}]).counters
        {'iterative.forced_search': 1}
    """
    t = trace if trace is not None else Trace()
    u = usage or {}
    t.llm_calls += int(u.get("llm_calls", 0))
    t.llm_rounds += int(u.get("llm_calls", 0))  # the agent calls its model once per turn, one turn after another
    t.prompt_tokens += int(u.get("prompt_tokens", 0))
    t.completion_tokens += int(u.get("completion_tokens", 0))
    for e in events:
        data = dict(e.get("data") or {})
        for b in data.pop("judged", None) or ():
            t.judged.append(JudgedBatch(dict(b["judge"]), tuple(frozenset(r) for r in b["refs"]), tuple(b["scores"])))
        if "turn" in e:
            data.setdefault("turn", e["turn"])
        kind = str(e.get("kind", "event"))
        t.note(kind, str(e.get("message", "")), **data)
        if kind in REPLY_REPAIRS:
            t.count(f"iterative.{kind}")
    for k, v in (counters or {}).items():
        t.count(k, v)
    return t
