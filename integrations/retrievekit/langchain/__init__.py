"""retrievekit for LangChain: retrievers, document compressors and chat-model adapters.

Exports are loaded lazily, so importing one component does not import the
dependencies of every other.

Examples:
    >>> from retrievekit.langchain import RetrieveKitRetriever
    >>> RetrieveKitRetriever.__name__
    'RetrieveKitRetriever'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrievekit.core.edge import lazy_exports, require_extras

_NEEDS = {"langchain_core": 'pip install "retrievekit[langchain]"'}
require_extras(__name__, _NEEDS)  # without the extra: one typed error naming it, not a ModuleNotFoundError

# public name -> module that defines it (add new components here)
_EXPORTS: dict[str, str] = {
    "LangChainStore": "retrievekit.langchain.vector_store",
    "as_chat_llm": "retrievekit.langchain.llm",
    "ArmRetriever": "retrievekit.langchain.arm",
    "JudgeCompressor": "retrievekit.langchain.judge",
    "LangChainChatLLM": "retrievekit.langchain.llm",
    "LatticeRetriever": "retrievekit.langchain.lattice",
    "LocalToolChatModel": "retrievekit.langchain.local_chat",
    "MindRefRetriever": "retrievekit.langchain.mindref",
    "OneShotCompressor": "retrievekit.langchain.compressor",
    "SelfRetrievalRetriever": "retrievekit.langchain.self_retrieval",
    "RetrieveKitDocumentIndex": "retrievekit.langchain.document_index",
    "RetrieveKitRetriever": "retrievekit.langchain.retriever",
    "documents_to_objects": "retrievekit.langchain.retriever",
    "object_to_document": "retrievekit.langchain.retriever",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from retrievekit.langchain.arm import ArmRetriever
    from retrievekit.langchain.compressor import OneShotCompressor
    from retrievekit.langchain.document_index import RetrieveKitDocumentIndex
    from retrievekit.langchain.judge import JudgeCompressor
    from retrievekit.langchain.lattice import LatticeRetriever
    from retrievekit.langchain.llm import LangChainChatLLM, as_chat_llm
    from retrievekit.langchain.local_chat import LocalToolChatModel
    from retrievekit.langchain.mindref import MindRefRetriever
    from retrievekit.langchain.retriever import RetrieveKitRetriever, documents_to_objects, object_to_document
    from retrievekit.langchain.self_retrieval import SelfRetrievalRetriever
    from retrievekit.langchain.vector_store import LangChainStore


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _NEEDS)
