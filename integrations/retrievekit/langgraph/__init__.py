"""retrievekit for LangGraph: the iterative search/delete agent as a compiled ``StateGraph``.

Examples:
    >>> from retrievekit.langgraph import build_iterative_agent
    >>> build_iterative_agent.__name__
    'build_iterative_agent'
"""

from retrievekit.core.edge import require_extras

require_extras(  # without the extra: one typed error naming it, not a ModuleNotFoundError
    __name__,
    {"langgraph": 'pip install "retrievekit[langgraph]"', "langchain_core": 'pip install "retrievekit[langgraph]"'},
)

from retrievekit.langgraph.graph import (  # noqa: E402 - after the check
    ChunkDeleteArgs,
    ChunkSearchArgs,
    IterativeAgentState,
    IterativeToolNode,
    build_iterative_agent,
    chunk_delete,
    chunk_search,
)
from retrievekit.langgraph.method import IterativeAgentMethod, arun_agent, build_iterative, run_agent  # noqa: E402
from retrievekit.langgraph.retrievers import SearchFunction, as_search_function  # noqa: E402
from retrievekit.langgraph.testing import ScriptedToolChatModel  # noqa: E402

__all__ = [
    "ChunkDeleteArgs",
    "ChunkSearchArgs",
    "IterativeAgentMethod",
    "IterativeAgentState",
    "IterativeToolNode",
    "ScriptedToolChatModel",
    "SearchFunction",
    "arun_agent",
    "as_search_function",
    "build_iterative",
    "build_iterative_agent",
    "chunk_delete",
    "chunk_search",
    "run_agent",
]
