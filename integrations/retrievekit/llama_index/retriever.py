"""LlamaIndex edge: any retrievekit retriever as a ``llama_index`` ``BaseRetriever``.

Examples:
    >>> from llama_index.core import Document
    >>> r = RetrieveKitRetriever.from_documents([Document(text="Paris is in France.")], method="bm25")
    >>> r.retrieve("Where is Paris?")[0].node.get_content()
    'Paris is in France.'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from llama_index.core.callbacks import CallbackManager
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, QueryType, TextNode

from retrievekit.core.checks import check_k
from retrievekit.core.edge import (
    atraced_search,
    build_for_edge,
    caller_passage,
    check_core,
    close_core,
    core_argument,
    hit_metadata,
    traced_search,
)
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.retriever import Retriever
from retrievekit.core.sources import SourceMap
from retrievekit.core.trace import Trace, capture_traces, last_trace_property
from retrievekit.core.types import DataObject, Passage  # noqa: F401 - examples
from retrievekit.llama_index.settings import or_settings_llm

__all__ = ["RetrieveKitRetriever", "RetrieveKitTraceEvent", "nodes_to_objects", "object_to_node"]

dispatcher = get_dispatcher(__name__)


class RetrieveKitTraceEvent(BaseEvent):
    """Emitted after every retrieval with the query's trace (LLM calls, tokens, seconds, fallbacks).

    Examples:
        >>> RetrieveKitTraceEvent(query="q", trace={"llm_calls": 0}).class_name()
        'RetrieveKitTraceEvent'
    """

    query: str
    trace: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        """Event name."""
        return "RetrieveKitTraceEvent"


def nodes_to_objects(nodes: Sequence[BaseNode]) -> list[DataObject]:
    """Convert LlamaIndex nodes/documents to retrievekit passages (id = node id, metadata kept JSON-safe).

    Raises :class:`~retrievekit.core.errors.InvalidInputError` naming the first item that is not a node.

    Examples:
        >>> nodes_to_objects([TextNode(id_="n1", text="hi")])[0].id
        'n1'
        >>> nodes_to_objects(["hi"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: documents[0] is a str, not a LlamaIndex Document or node
    """
    out: list[DataObject] = []
    for i, n in enumerate(nodes):
        if not isinstance(n, BaseNode):
            raise InvalidInputError(f"documents[{i}] is a {type(n).__name__}, not a LlamaIndex Document or node")
        out.append(caller_passage(n.node_id, n.get_content(), n.metadata))
    return out


def object_to_node(obj: DataObject) -> TextNode:
    """Convert a retrievekit object to a ``TextNode`` (same id; kind and title in metadata).

    Examples:
        >>> object_to_node(Passage(id="a", text="x", title="T")).metadata["title"]
        'T'
    """
    return TextNode(id_=obj.id, text=obj.text, metadata=hit_metadata(obj))


class RetrieveKitRetriever(BaseRetriever):
    """Wrap any retrievekit retriever (``search(query, k, trace=)``) for LlamaIndex.

    Use it anywhere LlamaIndex takes a retriever, e.g.
    ``RetrieverQueryEngine.from_args(RetrieveKitRetriever(...), llm=...)``.
    Each call's :class:`~retrievekit.core.trace.Trace` (with its ``query``) is dispatched to LlamaIndex
    instrumentation handlers as a :class:`RetrieveKitTraceEvent`. :meth:`retrieve_with_trace` /
    :meth:`aretrieve_with_trace` return it with the nodes; ``last_trace`` holds the trace of the last call made from
    the current thread or asyncio task, so concurrent callers each read their own
    (:func:`~retrievekit.core.trace.last_trace_property`).

    Hits on the caller's own nodes (``nodes=``; ``from_documents`` passes its documents) return those very node
    objects, as ``llama_index.retrievers.bm25`` does: same class, relationships and excluded-metadata keys. When the
    method adds metadata to a hit (ARM's ``arm_*`` keys, Self-Retrieval's scores) the node is a copy with those
    keys added; the caller's node is never changed. Other hits (a span or passage cut out of a document, a table
    given as a core object) are new ``TextNode`` s (:func:`object_to_node`).

    Args:
        retriever: a core retriever (``BM25Index``, ``DenseIndex``, ``HybridRetriever``, ...); a method's edge
            class names it too (``ArmRetriever(...).arm``, a :class:`~retrievekit.core.edge.CoreAlias`).
        similarity_top_k: how many nodes to return (default: the class's ``similarity_top_k``, 10).
        nodes: the LlamaIndex nodes/documents the core corpus was made from (:func:`nodes_to_objects`).

    Examples:
        >>> from retrievekit.core.index import BM25Index
        >>> core = BM25Index.build([Passage(id="a", text="red apples")])
        >>> RetrieveKitRetriever(core, similarity_top_k=1).retrieve("apples")[0].node.node_id
        'a'
    """

    last_trace = last_trace_property()
    similarity_top_k: int = 10  # the default; a method's edge class sets its own (MindRef: 2)
    index_method: ClassVar[str | None] = None  # the living index's method a method's edge class takes (from_index)

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        similarity_top_k: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        nodes: Sequence[BaseNode] | None = None,
        **renamed: Any,
    ) -> None:
        self._core = check_core(type(self), core_argument(type(self), retriever, renamed))
        self.similarity_top_k = check_k(type(self).similarity_top_k if similarity_top_k is None else similarity_top_k)
        caller = [n for n in nodes or () if isinstance(n, BaseNode)]
        self._sources: SourceMap[BaseNode] = SourceMap(zip(caller, nodes_to_objects(caller), strict=True))
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[BaseNode],
        *,
        method: str = "hybrid",
        work_dir: str | os.PathLike[str] | None = None,
        similarity_top_k: int = 10,
        llm: Any = None,
        embedder: Any = None,
        **options: Any,
    ) -> RetrieveKitRetriever:
        """Build a registered method (``bm25``, ``dense``, ``hybrid``, ``llm-rerank``...) over LlamaIndex
        documents/nodes.

        ``work_dir`` caches the built indexes on disk (reopened when the corpus is unchanged). ``llm`` (a LlamaIndex
        ``LLM`` such as ``OpenAILike``, or a retrievekit model) is the LLM of an LLM-based method (default: its local
        model). ``embedder`` (a LlamaIndex ``BaseEmbedding``, a retrievekit ``Embedder`` or ``"openai:MODEL@URL"``) is
        the embedding model of ``dense`` / ``hybrid`` / ARM / LATTICE and of every method's first stage that embeds
        (One-SHOT's pool, ``llm-rerank``'s and ``judge-rerank``'s ``first_stage=dense``); a method that would not use
        it refuses it by name (``InvalidInputError``). Default: ``Settings.embed_model`` when you set it (used where a
        method embeds), else all-MiniLM-L6-v2.

        Examples:
            >>> from llama_index.core import Document
            >>> RetrieveKitRetriever.from_documents([Document(text="x")], method="bm25").similarity_top_k
            10
        """
        from retrievekit.llama_index.embeddings import user_embed_model

        corpus = nodes_to_objects(documents)
        core = build_for_edge(
            method, corpus, work_dir=work_dir, llm=or_settings_llm(llm), options=options, embedder=embedder,
            default_embedder=user_embed_model(None),  # Settings.embed_model: for the methods that embed, unrefused
        )  # fmt: skip
        return cls(core, similarity_top_k=similarity_top_k, nodes=documents)

    @classmethod
    def from_vector_store(
        cls,
        vector_store: Any,
        *,
        embedder: Any = None,
        documents: Sequence[BaseNode] | None = None,
        method: str = "dense",
        where: dict[str, Any] | None = None,
        timeout: float | None = 60.0,
        work_dir: str | os.PathLike[str] | None = None,
        similarity_top_k: int = 10,
        llm: Any = None,
        **options: Any,
    ) -> RetrieveKitRetriever:
        """A registered method whose dense side is the user's LlamaIndex vector store (a ``BasePydanticVectorStore``
        such as ``PGVectorStore``, or a ``VectorStoreIndex``): ``dense``, ``hybrid``, ``oneshot``, ``arm``,
        ``llm-rerank``, ``judge-rerank`` (its ``first_stage=dense`` or ``hybrid``).

        ``embedder`` is the model that wrote the store's vectors (a LlamaIndex ``BaseEmbedding``, a retrievekit
        ``Embedder`` or ``"openai:MODEL@URL"``; default: ``Settings.embed_model`` when you set it, else
        all-MiniLM-L6-v2); a store written by another model is refused with
        :class:`~retrievekit.core.errors.IndexFormatError`. ``documents`` is the
        corpus the methods that also read texts need (BM25, ARM); by default the store's own nodes. Hits are the
        store's nodes (their ids and metadata). ``where`` filters every search on metadata; each call into the
        store ends within ``timeout`` seconds (:class:`~retrievekit.core.errors.StoreUnavailableError`).

        Examples:
            >>> from llama_index.core import VectorStoreIndex
            >>> from llama_index.core.embeddings import MockEmbedding
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> index = VectorStoreIndex([TextNode(id_="a", text="x")], embed_model=MockEmbedding(embed_dim=2))
            >>> r = RetrieveKitRetriever.from_vector_store(index, embedder=OnesEmbedder(), similarity_top_k=1)
            >>> r.retrieve("x")[0].node.node_id
            'a'
        """
        from retrievekit.core.index.store_retriever import StoreRetriever
        from retrievekit.llama_index.embeddings import user_embed_model
        from retrievekit.llama_index.vector_store import LlamaIndexStore

        store = LlamaIndexStore(vector_store, timeout=timeout)
        dense = StoreRetriever(store, user_embed_model(embedder), where=where)
        nodes = list(documents) if documents is not None else store.nodes()
        corpus = nodes_to_objects(nodes)
        core = build_for_edge(method, corpus, work_dir=work_dir, llm=or_settings_llm(llm), options=options, store=dense)
        return cls(core, similarity_top_k=similarity_top_k, nodes=nodes)

    @classmethod
    def from_index(cls, index: Any, *, similarity_top_k: int | None = None, **kwargs: Any) -> RetrieveKitRetriever:
        """A retriever over a living :class:`~retrievekit.llama_index.index.RetrieveKitIndex`: it searches the index's
        core as it changes, and returns the index's own nodes from its docstore (hits on a node since replaced or
        removed are new ``TextNode`` s). ``kwargs`` are LlamaIndex's (``callback_manager``, ``verbose``). A method's
        own retriever class takes an index of its method only (``LatticeRetriever``: a ``LatticeIndex``,
        ``ArmRetriever``: an ``ArmIndex``, ``MindRefRetriever``: a ``MindRefIndex``;
        :class:`~retrievekit.core.errors.InvalidInputError` for another).

        Examples:
            >>> from llama_index.core import Document
            >>> from retrievekit.llama_index import RetrieveKitIndex
            >>> index = RetrieveKitIndex.from_documents([Document(text="red apples", id_="a")], method="bm25")
            >>> RetrieveKitRetriever.from_index(index, similarity_top_k=1).retrieve("apples")[0].node.ref_doc_id
            'a'
        """
        core = getattr(index, "core", None)
        own = cls is RetrieveKitRetriever or getattr(core, "method", None) == cls.index_method
        if not own or core is None or not hasattr(index, "docstore"):
            what = f"a {cls.index_method} index" if cls.index_method else "an index over bm25, dense or hybrid"
            raise InvalidInputError(
                f"{cls.__name__}.from_index takes {what} (retrievekit.llama_index.RetrieveKitIndex, LatticeIndex, "
                f"ArmIndex, MindRefIndex), not {type(index).__name__} of {getattr(core, 'method', None)!r}"
            )
        out = cls(core, similarity_top_k=similarity_top_k, **kwargs)
        out._sources = _DocstoreNodes(index.docstore)  # type: ignore[assignment]
        return out

    def retrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        """``retrieve(query)`` and the trace of this very call: race-free, whatever other threads or tasks do.

        Examples:
            >>> from retrievekit.core.index import BM25Index
            >>> r = RetrieveKitRetriever(BM25Index.build([Passage(id="a", text="red apples")]), similarity_top_k=1)
            >>> nodes, trace = r.retrieve_with_trace("apples")
            >>> nodes[0].node.node_id, trace.query
            ('a', 'apples')
        """
        with capture_traces() as traces:
            nodes = self.retrieve(query)
        return nodes, traces[-1]  # an edge publishes its trace after everything it called published theirs

    async def aretrieve_with_trace(self, query: QueryType) -> tuple[list[NodeWithScore], Trace]:
        """``await aretrieve(query)`` and the trace of this very call: race-free, whatever other tasks do.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.index import BM25Index
            >>> r = RetrieveKitRetriever(BM25Index.build([Passage(id="a", text="red apples")]), similarity_top_k=1)
            >>> asyncio.run(r.aretrieve_with_trace("apples"))[1].query
            'apples'
        """
        with capture_traces() as traces:
            nodes = await self.aretrieve(query)
        return nodes, traces[-1]

    def close(self) -> None:
        """Close the core retriever it wraps when that holds resources (a ``DenseIndex``'s Chroma client, the
        hybrid baseline's); also ``with RetrieveKitRetriever.from_documents(...) as r:``.

        Examples:
            >>> from retrievekit.core.index import BM25Index
            >>> with RetrieveKitRetriever(BM25Index.build([Passage(id="a", text="tea")])) as r:
            ...     r.retrieve("tea")[0].node.node_id
            'a'
        """
        close_core(self._core)

    def __enter__(self) -> RetrieveKitRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _node_for(self, obj: DataObject) -> BaseNode:
        """The caller's node when ``obj`` is one (a copy when the method added metadata), else a new node."""
        found = self._sources.match(obj)
        if found is None:
            return object_to_node(obj)
        node, extra = found
        return node.model_copy(update={"metadata": {**node.metadata, **extra}}) if extra else node

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # awaited to the socket where the method has an async search (LATTICE), else off the loop on a bounded pool
        hits, trace = await atraced_search(self, self._core, query_bundle.query_str, self.similarity_top_k)
        return self._nodes(query_bundle, hits, trace)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits, trace = traced_search(self, self._core, query_bundle.query_str, self.similarity_top_k)
        return self._nodes(query_bundle, hits, trace)

    def _nodes(self, query_bundle: QueryBundle, hits: list[Any], trace: Trace) -> list[NodeWithScore]:
        dispatcher.event(RetrieveKitTraceEvent(query=query_bundle.query_str, trace=trace.to_dict()))
        return [NodeWithScore(node=self._node_for(h.obj), score=h.score) for h in hits]


class _DocstoreNodes:
    """The caller's nodes of a living index, looked up in its docstore when a hit comes (a ``SourceMap`` that
    follows changes): a hit is the stored node when it has that node's id and text."""

    def __init__(self, docstore: Any) -> None:
        self._docstore = docstore

    def match(self, hit: DataObject) -> tuple[BaseNode, dict[str, Any]] | None:
        node = self._docstore.get_node(hit.id, raise_error=False)
        if node is None or node.get_content() != hit.text:
            return None
        own = nodes_to_objects([node])[0].metadata
        return node, {k: v for k, v in hit.metadata.items() if own.get(k, _MISSING) != v}


_MISSING = object()
