"""LangChain edge of MindRef: a ``BaseRetriever`` that recalls titles, then passages, with a local LM.
See :class:`MindRefRetriever` for an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import CoreAlias, edge_llm
from retrievekit.core.generative.mindref import MindRef, MindRefConfig, create_mindref
from retrievekit.core.llm.protocol import ScoringLM
from retrievekit.langchain.llm import as_chat_llm
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
        >>> from retrievekit.core.llm import LocalLM
        >>> docs = [Document(page_content="Aspirin thins the blood.", metadata={"title": "Aspirin"}, id="a")]
        >>> r = MindRefRetriever.from_documents(docs, lm=LocalLM.load("smollm2"))  # doctest: +SKIP
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
        lm: ScoringLM | None = None,
        llm_name: str = "smollm2",
        config: MindRefConfig | None = None,
        k: int = 2,
        llm: Any = None,
        **options: Any,
    ) -> MindRefRetriever:
        """Build MindRef over LangChain documents with ``lm`` (or ``LocalLM.load(llm_name)``).

        ``llm`` is another name for ``lm`` (a model object, as in every edge); ``llm="smollm2"`` (a name) is the
        former spelling of ``llm_name`` and still works for one release, with a :class:`DeprecationWarning`.
        ``options`` are :class:`MindRefConfig` fields (ignored when ``config`` is given). A passage that is a whole
        given document comes back as a copy of that document; a span of one is a new document.
        """
        llm, llm_name = edge_llm(llm, llm_name, where="MindRefRetriever.from_documents", wrap=as_chat_llm)
        corpus = check_corpus(documents_to_objects(documents))  # before the model is loaded
        return cls(
            retriever=create_mindref(corpus, lm=lm, llm_name=llm_name, config=config, llm=llm, **options),
            k=k,
            documents=documents,
        )
