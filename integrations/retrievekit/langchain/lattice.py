"""LangChain edge of LATTICE: a ``BaseRetriever`` that searches a semantic tree with an LLM.

Examples:
    >>> from langchain_core.documents import Document
    >>> from langchain_core.language_models import BaseChatModel
    >>> from retrievekit.core.fakes import OnesEmbedder as Ones  # a stand-in embedder (default: all-MiniLM-L6-v2)
    >>> docs = [Document(page_content="Aspirin thins the blood.", id="a"), Document(page_content="Wind.", id="b")]
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_core.outputs import ChatGeneration, ChatResult
    >>> class ByWord(BaseChatModel):  # any chat model (default LocalLM smollm2); this one scores by a word
    ...     @property
    ...     def _llm_type(self): return "by-word"
    ...     def _generate(self, messages, stop=None, run_manager=None, **kw):
    ...         blocks = [b for b in messages[-1].content.splitlines() if b.startswith("<data")]
    ...         reply = '{"scores": [%s]}' % ", ".join("90" if "blood" in b else "10" for b in blocks)
    ...         return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])
    >>> chat = ByWord()
    >>> r = LatticeRetriever.from_documents(docs, llm=chat, embedder=Ones(), k=1)
    >>> [d.id for d in r.invoke("What thins the blood?")], r.lattice.config.beam_size, r.last_state.expanded
    (['a'], 2, ['root'])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import CoreAlias
from retrievekit.core.lattice.method import create_lattice, lattice_from_tree
from retrievekit.core.lattice.search import Lattice, SearchState
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.langchain.retriever import RetrieveKitRetriever, documents_to_objects

__all__ = ["LatticeRetriever"]


class LatticeRetriever(RetrieveKitRetriever):
    """LATTICE for LangChain: LLM-guided beam search over a semantic tree of the documents.

    ``Document.id`` is the leaf's id and ``metadata["score"]`` its final LATTICE score; ``k`` (default 10) can be
    overridden per call. ``last_trace`` holds the query's trace; ``lattice.last_state`` the search state.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import WordScoreLLM  # a stand-in chat LLM; items mentioning "sun" score 90
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun"), Passage(id="b", text="rain")])
        >>> r = LatticeRetriever(retriever=Lattice(tree, WordScoreLLM("sun")), k=5)
        >>> [d.id for d in r.invoke("solar power", k=1)]
        ['a']
    """

    k: int = 10

    lattice = CoreAlias[Lattice]("retriever")

    @property
    def last_state(self) -> SearchState | None:
        """Search state of the latest query."""
        return self.lattice.last_state

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[Document],
        *,
        llm: Any = None,
        embedder: Any = None,
        tree_dir: str | os.PathLike[str] | None = None,
        builder: str = "bottom_up",
        k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Build (or load from ``tree_dir``) a tree over LangChain documents and search it with ``llm``.

        ``llm`` is a model's name (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`), a retrievekit
        ``ChatLLM`` or any LangChain chat model (:func:`~retrievekit.core.llm.resolve.resolve_llm`). The documents
        returned are copies of the given ones, with ``metadata["score"]``.
        """
        corpus = check_corpus(documents_to_objects(documents))  # before the LLM and embedder are loaded
        lattice = create_lattice(corpus, llm=llm, embedder=embedder, tree_dir=tree_dir, builder=builder, **options)
        return cls(retriever=lattice, k=k, documents=documents)

    @classmethod
    def from_tree(
        cls,
        tree: SemanticTree | str | os.PathLike[str],
        *,
        llm: Any = None,
        embedder: Any = None,
        k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Search a persisted tree (a folder) or a tree object."""
        return cls(retriever=lattice_from_tree(tree, llm=llm, embedder=embedder, **options), k=k)
