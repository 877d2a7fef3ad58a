"""LangChain edge of MindRef: a ``BaseRetriever`` that recalls titles, then passages, with a local LM.
See :class:`MindRefRetriever` for an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import CoreAlias
from retrievekit.core.generative.mindref import MindRef, MindRefConfig, create_mindref
from retrievekit.langchain.retriever import RetrieveKitRetriever, documents_to_objects

__all__ = ["MindRefRetriever"]


class MindRefRetriever(RetrieveKitRetriever):
    """MindRef for LangChain: each ``Document`` is a passage located inside a recalled document.

    ``Document.id`` is the source document's id; ``metadata`` carries ``title``, ``token_start``/``token_end``,
    ``title_score``, ``passage_score``, ``prefix`` and ``score``. ``k`` (default 2) can be overridden per call, and
    ``k`` documents come back when the corpus allows: above the 2 recalled titles' passages, the next titles of the
    same title search fill in (``MindRefConfig.widen_to_k``; ``widen_to_k`` / ``short_of_k`` trace events).

    Examples:
        >>> from langchain_core.documents import Document
        >>> from retrievekit.core.llm import DEFAULT_MODEL, LocalLM
        >>> docs = [Document(page_content="Aspirin thins the blood.", metadata={"title": "Aspirin"}, id="a")]
        >>> r = MindRefRetriever.from_documents(docs, llm=LocalLM.load(DEFAULT_MODEL))  # doctest: +SKIP
        >>> [(d.id, d.metadata["title"]) for d in r.invoke("What thins the blood?", k=1)]  # doctest: +SKIP
        [('a', 'Aspirin')]
    """

    k: int = 2

    mindref = CoreAlias[MindRef]("retriever")

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[Document],
        *,
        llm: Any = None,
        config: MindRefConfig | None = None,
        k: int = 2,
        **options: Any,
    ) -> MindRefRetriever:
        """Build MindRef over LangChain documents with ``llm`` (default: the default model, loaded).

        ``llm`` is a scoring LM or a local model's name (:func:`~retrievekit.core.llm.resolve.resolve_llm`).
        ``options`` are :class:`MindRefConfig` fields (ignored when ``config`` is given). A passage that is a whole
        given document comes back as a copy of that document; a span of one is a new document.
        """
        corpus = check_corpus(documents_to_objects(documents))  # before the model is loaded
        return cls(
            retriever=create_mindref(corpus, llm=llm, config=config, **options),
            k=k,
            documents=documents,
        )
