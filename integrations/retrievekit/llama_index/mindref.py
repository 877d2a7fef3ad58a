"""LlamaIndex edge of MindRef: a ``BaseRetriever`` that recalls titles, then passages, with a local LM.
See :class:`MindRefRetriever` for an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import CoreAlias
from retrievekit.core.generative.mindref import MindRef, MindRefConfig, create_mindref
from retrievekit.llama_index.retriever import RetrieveKitRetriever, nodes_to_objects

__all__ = ["MindRefRetriever"]


class MindRefRetriever(RetrieveKitRetriever):
    """MindRef for LlamaIndex: each node is a passage located inside a recalled document (no pre-chunking).

    Node ids are document ids; ``node.metadata`` carries ``title``, ``token_start``/``token_end``, ``title_score``,
    ``passage_score`` and the generated ``prefix``. Titles come from ``metadata["title"]`` (or the first
    sentence, see :class:`~retrievekit.core.generative.mindref.MindRefConfig`). ``last_trace`` holds the query's
    trace. ``similarity_top_k`` nodes come back when the corpus allows: above the 2 recalled titles' passages, the
    next titles of the same title search fill in (``MindRefConfig.widen_to_k``; ``widen_to_k`` / ``short_of_k``
    trace events).

    Args:
        retriever: a built :class:`~retrievekit.core.generative.mindref.MindRef` (also ``.mindref``).
        similarity_top_k: nodes to return (MindRef recalls ``title_return`` documents, 2 by default).

    Examples:
        >>> from llama_index.core import Document
        >>> from retrievekit.core.llm import DEFAULT_MODEL, LocalLM
        >>> docs = [Document(text="Aspirin thins the blood.", metadata={"title": "Aspirin"})]
        >>> r = MindRefRetriever.from_documents(docs, llm=LocalLM.load(DEFAULT_MODEL))  # doctest: +SKIP
        >>> r.retrieve("What thins the blood?")[0].node.metadata["title"]  # doctest: +SKIP
        'Aspirin'
    """

    similarity_top_k: int = 2
    mindref = CoreAlias[MindRef]("_core")
    index_method = "mindref"  # from_index takes a MindRefIndex (its core: a LiveMindRef)

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[BaseNode],
        *,
        llm: Any = None,
        config: MindRefConfig | None = None,
        similarity_top_k: int = 2,
        **options: Any,
    ) -> MindRefRetriever:
        """Build MindRef over LlamaIndex documents with ``llm`` (default: the default model, loaded).

        ``llm`` is a scoring LM or a local model's name (:func:`~retrievekit.core.llm.resolve.resolve_llm`).
        ``options`` are :class:`MindRefConfig` fields (ignored when ``config`` is given). A passage that is a whole
        given document comes back as that node; a span of one is a new node.
        """
        mindref = create_mindref(check_corpus(nodes_to_objects(documents)), llm=llm, config=config, **options)
        return cls(mindref, similarity_top_k=similarity_top_k, nodes=documents)
