"""LangChain edge of LATTICE: a ``BaseRetriever`` that searches a semantic tree with an LLM.

Examples:
    >>> from langchain_core.documents import Document
    >>> docs = [Document(page_content="Aspirin thins the blood.", id="a"), Document(page_content="Wind.", id="b")]
    >>> r = LatticeRetriever.from_documents(docs, tree_dir="tree")  # doctest: +SKIP
    >>> r.invoke("What thins the blood?")[0].id  # doctest: +SKIP
    'a'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from retrievekit.core.checks import check_corpus
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.method import Lattice, create_lattice
from retrievekit.core.lattice.search import SearchState
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.llm.names import split_llm_argument
from retrievekit.langchain.llm import as_chat_llm
from retrievekit.langchain.retriever import RetrieveKitRetriever, documents_to_objects

__all__ = ["LatticeRetriever"]


class LatticeRetriever(RetrieveKitRetriever):
    """LATTICE for LangChain: LLM-guided beam search over a semantic tree of the documents.

    ``Document.id`` is the leaf's id and ``metadata["score"]`` its final LATTICE score; ``k`` (default 10) can be
    overridden per call. ``last_trace`` holds the query's trace; ``lattice.last_state`` the search state.

    Examples:
        >>> r = LatticeRetriever(retriever=create_lattice(tree_dir="tree"), k=5)  # doctest: +SKIP
        >>> r.invoke("question", k=3)  # doctest: +SKIP
    """

    k: int = 10

    @property
    def lattice(self) -> Lattice:
        """The wrapped core retriever.

        Examples:
            >>> r.lattice.config.beam_size  # doctest: +SKIP
            2
        """
        core: Lattice = self.retriever
        return core

    @property
    def last_state(self) -> SearchState | None:
        """Search state of the latest query.

        Examples:
            >>> r.last_state.expanded[:1]  # doctest: +SKIP
            ['root']
        """
        return self.lattice.last_state

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[Document],
        *,
        llm: Any = None,
        llm_name: str = "smollm2",
        embedder: Embedder | None = None,
        tree_dir: str | os.PathLike[str] | None = None,
        builder: str = "bottom_up",
        k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Build (or load from ``tree_dir``) a tree over LangChain documents and search it with ``llm``.

        ``llm`` is a retrievekit ``ChatLLM`` or any LangChain chat model (wrapped by
        :func:`~retrievekit.langchain.llm.as_chat_llm`); default ``LocalLM.load(llm_name)``. The documents returned
        are copies of the given ones, with ``metadata["score"]``.

        Examples:
            >>> LatticeRetriever.from_documents(docs, llm=chat_model, beam_size=1).k  # doctest: +SKIP
            10
        """
        llm, llm_name = split_llm_argument(llm, llm_name, where="LatticeRetriever.from_documents")
        lattice = create_lattice(
            check_corpus(documents_to_objects(documents)),  # before the LLM and embedder are loaded
            llm=as_chat_llm(llm),
            llm_name=llm_name,
            embedder=embedder,
            tree_dir=tree_dir,
            builder=builder,
            **options,
        )
        return cls(retriever=lattice, k=k, documents=documents)

    @classmethod
    def from_tree(
        cls,
        tree: SemanticTree | str | os.PathLike[str],
        *,
        llm: Any = None,
        llm_name: str = "smollm2",
        embedder: Embedder | None = None,
        k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Search a persisted tree (a folder) or a tree object.

        Examples:
            >>> LatticeRetriever.from_tree("tree", llm=chat_model).k  # doctest: +SKIP
            10
        """
        llm, llm_name = split_llm_argument(llm, llm_name, where="LatticeRetriever.from_tree")
        kwargs: dict[str, Any] = {"tree": tree} if isinstance(tree, SemanticTree) else {"tree_dir": tree}
        lattice = create_lattice(None, llm=as_chat_llm(llm), llm_name=llm_name, embedder=embedder, **kwargs, **options)
        return cls(retriever=lattice, k=k)
