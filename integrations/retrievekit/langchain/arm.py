"""LangChain edge of ARM: a ``BaseRetriever`` that returns ARM's object set with its joins/links in metadata.

Examples (``from_documents`` builds ARM's dense index with all-MiniLM-L6-v2; ``llm=None``: no LLM stages):
    >>> from langchain_core.documents import Document
    >>> docs = [Document(page_content="Prime Suspect was devised by Lynda La Plante.", id="p")]
    >>> [d.id for d in ArmRetriever.from_documents(docs, llm=None).invoke("Who devised it?")]  # doctest: +SKIP
    ['p']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from retrievekit.core.arm.method import Arm, ArmConfig, create_arm
from retrievekit.core.edge import CoreAlias, split_corpus
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.types import DataObject
from retrievekit.langchain.retriever import RetrieveKitRetriever, documents_to_objects

__all__ = ["ArmRetriever"]


class ArmRetriever(RetrieveKitRetriever):
    """ARM for LangChain: each ``Document`` is a selected object (passage or serialised table), best first.

    ``metadata`` carries ``arm_links``, ``arm_score``, ``arm_votes``, ``arm_logprob``, ``arm_relevance``,
    ``arm_set``, ``arm_selected`` and ``score``. ``k`` (default 10) caps the set and can be overridden per call;
    with ``ArmConfig(fill_to_k=True)`` the set is padded to exactly ``k`` with unselected candidates
    (``arm_selected=False``) for chains that expect ``k`` documents.

    Examples:
        >>> from retrievekit.core.types import Passage, Table
        >>> from retrievekit.core.fakes import OnesEmbedder as Ones
        >>> corpus = [Table(id="t", title="Cast", header=("Role", "Series"), rows=(("Robert", "Prime Suspect"),)),
        ...           Passage(id="p", title="Prime Suspect", text="Prime Suspect was created by Lynda La Plante.")]
        >>> r = ArmRetriever(retriever=Arm(corpus, None, embedder=Ones()), k=5)  # None: no LLM stages
        >>> [(d.id, d.metadata["arm_selected"]) for d in r.invoke("Who created the series with Robert?", k=3)]
        [('t', True), ('p', True)]
        >>> r.arm.config.base_k
        5
    """

    k: int = 10

    arm = CoreAlias[Arm]("retriever")

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[Document | DataObject],
        *,
        llm: Any = DEFAULT_MODEL,
        config: ArmConfig | None = None,
        k: int = 10,
        embedder: Any = None,
        **options: Any,
    ) -> ArmRetriever:
        """Build ARM over LangChain documents (or retrievekit ``Passage``/``Table`` objects, which keep their
        structure) with ``llm`` (default
        :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`; ``None``: no LLM stages).

        ``llm`` is a retrievekit ``ChatLLM`` / ``LocalLM`` or any LangChain chat model (wrapped
        by :func:`~retrievekit.core.llm.resolve.resolve_llm`), or a model's name. Hits on the given documents return copies of them with the ``arm_*`` metadata.
        ``options`` are :class:`~retrievekit.core.arm.config.ArmConfig` fields (ignored when ``config`` is given).
        ``embedder``: a LangChain ``Embeddings`` (or anything ``as_embedder`` takes; default all-MiniLM-L6-v2).
        """
        docs, corpus = split_corpus(documents, Document, documents_to_objects)
        return cls(
            retriever=create_arm(corpus, llm=llm, config=config, embedder=embedder, **options), k=k, documents=docs
        )
