"""retrievekit for LlamaIndex: retrievers, postprocessors and LLM adapters.

Example:
    >>> from retrievekit.llama_index import RetrieveKitRetriever
    >>> RetrieveKitRetriever.__name__
    'RetrieveKitRetriever'
"""

from retrievekit.llama_index.retriever import RetrieveKitRetriever, RetrieveKitTraceEvent, nodes_to_objects, object_to_node

__all__ = ["RetrieveKitRetriever", "RetrieveKitTraceEvent", "nodes_to_objects", "object_to_node"]

try:  # the chat adapter lives in llm.py
    from retrievekit.llama_index.llm import LlamaIndexChatLLM  # noqa: F401

    __all__.append("LlamaIndexChatLLM")
except ImportError:  # pragma: no cover
    pass
