"""retrievekit for LlamaIndex: retrievers, node postprocessors, LLM adapters and an offline local ``LLM``.

Exports are loaded lazily, so importing one component does not import the
dependencies of every other (e.g. LangGraph for the agent retriever).

Examples:
    >>> from retrievekit.llama_index import RetrieveKitRetriever
    >>> RetrieveKitRetriever.__name__
    'RetrieveKitRetriever'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrievekit.core.edge import lazy_exports, require_extras

_NEEDS = {"llama_index.core": 'pip install "retrievekit[llama-index]"'}
require_extras(__name__, _NEEDS)  # without the extra: one typed error naming it, not a ModuleNotFoundError

# public name -> module that defines it (add new components here)
_EXPORTS: dict[str, str] = {
    "LlamaIndexStore": "retrievekit.llama_index.vector_store",
    "as_chat_llm": "retrievekit.llama_index.llm",
    "ArmIndex": "retrievekit.llama_index.index",
    "ArmRetriever": "retrievekit.llama_index.arm",
    "IterativeAgentRetriever": "retrievekit.llama_index.agent_retriever",
    "JudgeReranker": "retrievekit.llama_index.judge",
    "LatticeIndex": "retrievekit.llama_index.index",
    "LatticeRetriever": "retrievekit.llama_index.lattice",
    "LlamaIndexChatLLM": "retrievekit.llama_index.llm",
    "LocalLlamaIndexLLM": "retrievekit.llama_index.local_llm",
    "MindRefIndex": "retrievekit.llama_index.index",
    "MindRefRetriever": "retrievekit.llama_index.mindref",
    "OneShotPostprocessor": "retrievekit.llama_index.postprocessor",
    "SelfRetrievalRetriever": "retrievekit.llama_index.self_retrieval",
    "RetrieveKitIndex": "retrievekit.llama_index.index",
    "RetrieveKitRetriever": "retrievekit.llama_index.retriever",
    "RetrieveKitTraceEvent": "retrievekit.llama_index.retriever",
    "nodes_to_objects": "retrievekit.llama_index.retriever",
    "object_to_node": "retrievekit.llama_index.retriever",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from retrievekit.llama_index.agent_retriever import IterativeAgentRetriever
    from retrievekit.llama_index.arm import ArmRetriever
    from retrievekit.llama_index.index import ArmIndex, LatticeIndex, MindRefIndex, RetrieveKitIndex
    from retrievekit.llama_index.judge import JudgeReranker
    from retrievekit.llama_index.lattice import LatticeRetriever
    from retrievekit.llama_index.llm import LlamaIndexChatLLM, as_chat_llm
    from retrievekit.llama_index.local_llm import LocalLlamaIndexLLM
    from retrievekit.llama_index.mindref import MindRefRetriever
    from retrievekit.llama_index.postprocessor import OneShotPostprocessor
    from retrievekit.llama_index.retriever import (
        RetrieveKitRetriever,
        RetrieveKitTraceEvent,
        nodes_to_objects,
        object_to_node,
    )
    from retrievekit.llama_index.self_retrieval import SelfRetrievalRetriever
    from retrievekit.llama_index.vector_store import LlamaIndexStore


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _NEEDS)
