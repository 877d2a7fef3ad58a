"""retrievekit for LangGraph: the iterative search/delete agent as a compiled ``StateGraph``.

Examples:
    >>> from retrievekit.langgraph import build_iterative_agent
    >>> build_iterative_agent.__name__
    'build_iterative_agent'
"""

from retrievekit.langgraph.graph import (
    ChunkDeleteArgs,
    ChunkSearchArgs,
    IterativeAgentState,
    IterativeToolNode,
    build_iterative_agent,
    chunk_delete,
    chunk_search,
)
from retrievekit.langgraph.method import IterativeAgentMethod, arun_agent, build_iterative, run_agent
from retrievekit.langgraph.retrievers import SearchFunction, as_search_function
from retrievekit.langgraph.testing import ScriptedToolChatModel

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
