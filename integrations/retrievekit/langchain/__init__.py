"""retrievekit for LangChain: retrievers, document compressors and chat-model adapters.

Example:
    >>> from retrievekit.langchain import RetrieveKitRetriever
    >>> RetrieveKitRetriever.__name__
    'RetrieveKitRetriever'
"""

from retrievekit.langchain.retriever import RetrieveKitRetriever, documents_to_objects, object_to_document

__all__ = ["RetrieveKitRetriever", "documents_to_objects", "object_to_document"]

try:
    from retrievekit.langchain.llm import LangChainChatLLM  # noqa: F401

    __all__.append("LangChainChatLLM")
except ImportError:  # pragma: no cover
    pass
