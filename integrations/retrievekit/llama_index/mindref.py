"""LlamaIndex edge of MindRef: a ``BaseRetriever`` that recalls titles, then passages, with a local LM.
See :class:`MindRefRetriever` for an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import CoreAlias, edge_llm
from retrievekit.core.generative.mindref import MindRef, MindRefConfig, create_mindref
from retrievekit.core.llm.protocol import ScoringLM
from retrievekit.llama_index.llm import as_chat_llm
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
        >>> from retrievekit.core.llm import LocalLM
        >>> docs = [Document(text="Aspirin thins the blood.", metadata={"title": "Aspirin"})]
        >>> r = MindRefRetriever.from_documents(docs, lm=LocalLM.load("smollm2"))  # doctest: +SKIP
        >>> r.retrieve("What thins the blood?")[0].node.metadata["title"]  # doctest: +SKIP
        'Aspirin'
    """

    similarity_top_k: int = 2
    mindref = CoreAlias[MindRef]("_core")

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[BaseNode],
        *,
        lm: ScoringLM | None = None,
        llm_name: str = "smollm2",
        config: MindRefConfig | None = None,
        similarity_top_k: int = 2,
        llm: Any = None,
        **options: Any,
    ) -> MindRefRetriever:
        """Build MindRef over LlamaIndex documents with ``lm`` (or ``LocalLM.load(llm_name)``).

        ``llm`` is another name for ``lm`` (a model object, as in every edge); ``llm="smollm2"`` (a name) is the
        former spelling of ``llm_name`` and still works for one release, with a :class:`DeprecationWarning`.
        ``options`` are :class:`MindRefConfig` fields (ignored when ``config`` is given). A passage that is a whole
        given document comes back as that node; a span of one is a new node.
        """
        llm, llm_name = edge_llm(llm, llm_name, where="MindRefRetriever.from_documents", wrap=as_chat_llm)
        mindref = create_mindref(
            check_corpus(nodes_to_objects(documents)), lm=lm, llm_name=llm_name, config=config, llm=llm, **options
        )
        return cls(mindref, similarity_top_k=similarity_top_k, nodes=documents)
