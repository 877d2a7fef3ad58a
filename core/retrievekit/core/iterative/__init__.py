"""Framework-free parts of the iterative search/delete agent (Fishing for Answers, mechanism 3).

The LangGraph graph lives in :mod:`retrievekit.langgraph`; this package holds what does not need a framework:

* :mod:`~retrievekit.core.iterative.state` -- chunks of the working set, merge without duplicates, delete by id,
  context-token accounting, rendering the working set into a prompt, turn accounting;
* :mod:`~retrievekit.core.iterative.answers` -- SQuAD-style answer exact match and token F1 (over aliases);
* :mod:`~retrievekit.core.iterative.prompts` -- every prompt the agent sends, in one place.

Examples:
    >>> from retrievekit.core.iterative import make_chunk, merge_chunks, delete_chunks
    >>> ws = merge_chunks([], [make_chunk("a", "Paris is in France.")]).chunks
    >>> ws = merge_chunks(ws, [make_chunk("a", "dup"), make_chunk("b", "Rome is in Italy.")]).chunks
    >>> [c["id"] for c in ws], [c["id"] for c in delete_chunks(ws, ["a"]).chunks]
    (['a', 'b'], ['b'])
"""

from retrievekit.core.iterative.answers import answer_exact_match, answer_f1, answer_scores, normalize_answer
from retrievekit.core.iterative.prompts import (
    ANSWER_PROMPT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTIONS,
    agent_instruction,
    answer_messages,
)
from retrievekit.core.iterative.state import (
    Chunk,
    DeleteResult,
    MergeResult,
    chunk_from_hit,
    context_tokens,
    delete_chunks,
    make_chunk,
    merge_chunks,
    recursion_limit_for,
    render_working_set,
    trace_from_events,
    turns_left,
)

__all__ = [
    "ANSWER_PROMPT",
    "SYSTEM_PROMPT",
    "TOOL_DESCRIPTIONS",
    "Chunk",
    "DeleteResult",
    "MergeResult",
    "agent_instruction",
    "answer_exact_match",
    "answer_f1",
    "answer_messages",
    "answer_scores",
    "chunk_from_hit",
    "context_tokens",
    "delete_chunks",
    "make_chunk",
    "merge_chunks",
    "normalize_answer",
    "recursion_limit_for",
    "render_working_set",
    "trace_from_events",
    "turns_left",
]
