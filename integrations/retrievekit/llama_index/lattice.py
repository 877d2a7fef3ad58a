"""LlamaIndex edge of LATTICE: a ``BaseRetriever`` that searches a semantic tree with an LLM.

Examples:
    >>> from llama_index.core import Document
    >>> from retrievekit.core.fakes import WordScoreLLM  # a stand-in LLM (default: DEFAULT_MODEL, loaded)
    >>> from retrievekit.core.fakes import OnesEmbedder as Ones  # a stand-in embedder (default: all-MiniLM-L6-v2)
    >>> docs = [Document(text="Aspirin thins the blood.", id_="a"), Document(text="Wind farms.", id_="b")]
    >>> r = LatticeRetriever.from_documents(docs, llm=WordScoreLLM("blood"), embedder=Ones(), similarity_top_k=1)
    >>> [n.node.node_id for n in r.retrieve("What thins the blood?")], r.last_state.expanded
    (['a'], ['root'])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import CoreAlias
from retrievekit.core.lattice.method import create_lattice, lattice_from_tree
from retrievekit.core.lattice.search import Lattice, SearchState
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.llama_index.embeddings import user_embed_model
from retrievekit.llama_index.retriever import RetrieveKitRetriever, nodes_to_objects
from retrievekit.llama_index.settings import or_settings_llm

__all__ = ["LatticeRetriever"]


class LatticeRetriever(RetrieveKitRetriever):
    """LATTICE for LlamaIndex: LLM-guided beam search over a semantic tree of the documents.

    Node ids are the documents' ids, scores the final LATTICE leaf scores; only leaves the search reached are
    returned. ``last_trace`` holds the query's trace (LLM calls, tokens, a ``lattice.explored`` event with the
    expanded node ids) and ``last_state`` the full search state (for
    :func:`~retrievekit.core.lattice.draw.draw_search`).

    Args:
        retriever: a :class:`~retrievekit.core.lattice.search.Lattice` (also ``.lattice``).
        similarity_top_k: nodes to return.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import WordScoreLLM  # a stand-in chat LLM; items mentioning "sun" score 90
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun"), Passage(id="b", text="rain")])
        >>> r = LatticeRetriever(Lattice(tree, WordScoreLLM("sun")), similarity_top_k=2)
        >>> [(n.node.node_id, n.score > 0) for n in r.retrieve("solar power")]
        [('a', True), ('b', True)]
    """

    lattice = CoreAlias[Lattice]("_core")
    index_method = "lattice"  # from_index takes a LatticeIndex (its core: a LiveLattice)

    @property
    def last_state(self) -> SearchState | None:
        """Search state of the latest query."""
        return self.lattice.last_state

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[BaseNode],
        *,
        llm: Any = None,
        embedder: Any = None,
        tree_dir: str | os.PathLike[str] | None = None,
        builder: str = "bottom_up",
        similarity_top_k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Build (or load from ``tree_dir``) a tree over LlamaIndex documents and search it with ``llm``.

        ``llm`` is a model's name (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`), a retrievekit
        ``ChatLLM`` or any LlamaIndex ``LLM`` (:func:`~retrievekit.core.llm.resolve.resolve_llm`). The retrieved
        nodes are the given ones. ``options`` are :class:`~retrievekit.core.lattice.config.TreeBuildConfig` /
        :class:`~retrievekit.core.lattice.config.LatticeConfig` fields. ``embedder``: a LlamaIndex ``BaseEmbedding``
        (or anything ``as_embedder`` takes); default ``Settings.embed_model`` when you set it, else all-MiniLM-L6-v2.
        """
        corpus = check_corpus(nodes_to_objects(documents))  # before the LLM and embedder are loaded
        embedder = user_embed_model(embedder)
        lattice = create_lattice(
            corpus, llm=or_settings_llm(llm), embedder=embedder, tree_dir=tree_dir, builder=builder, **options
        )
        return cls(lattice, similarity_top_k=similarity_top_k, nodes=documents)

    @classmethod
    def from_tree(
        cls,
        tree: SemanticTree | str | os.PathLike[str],
        *,
        llm: Any = None,
        embedder: Any = None,
        similarity_top_k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Search a persisted tree (a folder) or a tree object."""
        embedder = user_embed_model(embedder)
        lattice = lattice_from_tree(tree, llm=or_settings_llm(llm), embedder=embedder, **options)
        return cls(lattice, similarity_top_k=similarity_top_k)
