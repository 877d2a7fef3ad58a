"""Framework-free parts of the iterative search/delete agent (Fishing for Answers, mechanism 3).

The LangGraph graph lives in :mod:`retrievekit.langgraph`; this package holds what does not need a framework:

* :mod:`~retrievekit.core.iterative.state` -- chunks of the working set, merge without duplicates, delete by id,
  context-token accounting, rendering the working set into a prompt, turn accounting, JSON-safe trace events;
* :mod:`~retrievekit.core.iterative.arguments` -- the two tools' argument schemas and the check of a tool call;
* :mod:`~retrievekit.core.iterative.steps` -- one tool call as a pure function: ``search_step`` (with the turn-1
  fallback search and the optional judge deletion), ``delete_step``, ``rejected_step``;
* :mod:`~retrievekit.core.iterative.answers` -- SQuAD-style answer exact match and token F1 (over aliases);
* :mod:`~retrievekit.core.iterative.prompts` -- every prompt the agent sends, in one place.

Examples:
    >>> from retrievekit.core.iterative import make_chunk, merge_chunks, delete_chunks
    >>> ws = merge_chunks([], [make_chunk("a", "Paris is in France.")]).chunks
    >>> ws = merge_chunks(ws, [make_chunk("a", "dup"), make_chunk("b", "Rome is in Italy.")]).chunks
    >>> [c["id"] for c in ws], [c["id"] for c in delete_chunks(ws, ["a"]).chunks]
    (['a', 'b'], ['b'])
"""

from retrievekit.core.iterative import state, steps
from retrievekit.core.iterative.answers import answer_exact_match, answer_f1, answer_scores, normalize_answer
from retrievekit.core.iterative.arguments import (
    TOOL_NAMES,
    ChunkDeleteArgs,
    ChunkSearchArgs,
    parse_tool_call,
    unparsable_call,
)
from retrievekit.core.iterative.prompts import (
    ACTION_KINDS,
    ANSWER_PROMPT,
    SYSTEM_PROMPT,
    TOOL_DESCRIPTIONS,
    agent_instruction,
    answer_messages,
    turn_instruction,
)
from retrievekit.core.iterative.state import *  # noqa: F403 - the working set: state.__all__
from retrievekit.core.iterative.steps import *  # noqa: F403 - one tool call each: steps.__all__

__all__ = [
    "ACTION_KINDS",
    "ANSWER_PROMPT",
    "SYSTEM_PROMPT",
    "TOOL_DESCRIPTIONS",
    "TOOL_NAMES",
    "ChunkDeleteArgs",
    "ChunkSearchArgs",
    "agent_instruction",
    "answer_exact_match",
    "answer_f1",
    "answer_messages",
    "answer_scores",
    "normalize_answer",
    "parse_tool_call",
    "turn_instruction",
    "unparsable_call",
]
__all__ += state.__all__
__all__ += steps.__all__
