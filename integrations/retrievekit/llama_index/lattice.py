"""LlamaIndex edge of LATTICE: a ``BaseRetriever`` that searches a semantic tree with an LLM.

Examples:
    >>> import numpy as np
    >>> from llama_index.core import Document
    >>> from retrievekit.core.llm.json_output import ChatLLMBase
    >>> from retrievekit.core.llm.protocol import Completion
    >>> class Like(ChatLLMBase):  # a stand-in chat LLM (default: LocalLM.load("smollm2")); "blood" scores 90
    ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
    ...         items = [l for l in prompt[-1].content.splitlines() if l.startswith("<data")]
    ...         return Completion('{"scores": [%s]}' % ", ".join("90" if "blood" in l else "10" for l in items))
    >>> class Ones:  # a stand-in embedder (default: all-MiniLM-L6-v2)
    ...     name, dim = "ones", 2
    ...     def embed_documents(self, texts, **kw): return np.ones((len(texts), 2), dtype=np.float32)
    ...     def embed_query(self, text): return np.ones(2, dtype=np.float32)
    >>> docs = [Document(text="Aspirin thins the blood.", id_="a"), Document(text="Wind farms.", id_="b")]
    >>> r = LatticeRetriever.from_documents(docs, llm=Like(), embedder=Ones(), similarity_top_k=1)
    >>> [n.node.node_id for n in r.retrieve("What thins the blood?")], r.last_state.expanded
    (['a'], ['root'])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode

from retrievekit.core.checks import check_corpus
from retrievekit.core.edge import edge_llm
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.method import Lattice, create_lattice, lattice_from_tree
from retrievekit.core.lattice.search import SearchState
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.llama_index.llm import as_chat_llm
from retrievekit.llama_index.retriever import RetrieveKitRetriever, nodes_to_objects

__all__ = ["LatticeRetriever"]


class LatticeRetriever(RetrieveKitRetriever):
    """LATTICE for LlamaIndex: LLM-guided beam search over a semantic tree of the documents.

    Node ids are the documents' ids, scores the final LATTICE leaf scores; only leaves the search reached are
    returned. ``last_trace`` holds the query's trace (LLM calls, tokens, a ``lattice.explored`` event with the
    expanded node ids) and ``last_state`` the full search state (for
    :func:`~retrievekit.core.lattice.draw.draw_search`).

    Args:
        lattice: a :class:`~retrievekit.core.lattice.method.Lattice`.
        similarity_top_k: nodes to return.

    Examples:
        >>> from retrievekit.core.llm.json_output import ChatLLMBase
        >>> from retrievekit.core.llm.protocol import Completion
        >>> from retrievekit.core.types import Passage
        >>> class Like(ChatLLMBase):  # a stand-in chat LLM; items mentioning "sun" score 90
        ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        ...         items = [l for l in prompt[-1].content.splitlines() if l.startswith("<data")]
        ...         return Completion('{"scores": [%s]}' % ", ".join("90" if "sun" in l else "10" for l in items))
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun"), Passage(id="b", text="rain")])
        >>> r = LatticeRetriever(Lattice(tree, Like()), similarity_top_k=2)
        >>> [(n.node.node_id, n.score > 0) for n in r.retrieve("solar power")]
        [('a', True), ('b', True)]
    """

    def __init__(
        self,
        lattice: Lattice,
        *,
        similarity_top_k: int = 10,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        nodes: Sequence[BaseNode] | None = None,
    ) -> None:
        self.lattice = lattice
        super().__init__(
            lattice, similarity_top_k=similarity_top_k, callback_manager=callback_manager, verbose=verbose, nodes=nodes
        )

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
        llm_name: str = "smollm2",
        embedder: Embedder | None = None,
        tree_dir: str | os.PathLike[str] | None = None,
        builder: str = "bottom_up",
        similarity_top_k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Build (or load from ``tree_dir``) a tree over LlamaIndex documents and search it with ``llm``.

        ``llm`` is a retrievekit ``ChatLLM`` or any LlamaIndex ``LLM`` (wrapped by
        :func:`~retrievekit.llama_index.llm.as_chat_llm`); default ``LocalLM.load(llm_name)``. The retrieved nodes are
        the given ones. ``options`` are :class:`~retrievekit.core.lattice.config.TreeBuildConfig` /
        :class:`~retrievekit.core.lattice.config.LatticeConfig` fields.
        """
        llm, llm_name = edge_llm(llm, llm_name, where="LatticeRetriever.from_documents", wrap=as_chat_llm)
        corpus = check_corpus(nodes_to_objects(documents))  # before the LLM and embedder are loaded
        lattice = create_lattice(
            corpus, llm=llm, llm_name=llm_name, embedder=embedder, tree_dir=tree_dir, builder=builder, **options
        )
        return cls(lattice, similarity_top_k=similarity_top_k, nodes=documents)

    @classmethod
    def from_tree(
        cls,
        tree: SemanticTree | str | os.PathLike[str],
        *,
        llm: Any = None,
        llm_name: str = "smollm2",
        embedder: Embedder | None = None,
        similarity_top_k: int = 10,
        **options: Any,
    ) -> LatticeRetriever:
        """Search a persisted tree (a folder) or a tree object."""
        llm, llm_name = edge_llm(llm, llm_name, where="LatticeRetriever.from_tree", wrap=as_chat_llm)
        lattice = lattice_from_tree(tree, llm=llm, llm_name=llm_name, embedder=embedder, **options)
        return cls(lattice, similarity_top_k=similarity_top_k)
