"""LangChain edge: any retrievekit retriever as a ``langchain_core`` ``BaseRetriever``.

Examples:
    >>> from langchain_core.documents import Document
    >>> r = RetrieveKitRetriever.from_documents([Document(page_content="Paris is in France.")], method="bm25")
    >>> r.invoke("Where is Paris?")[0].page_content
    'Paris is in France.'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.callbacks.manager import dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field, PrivateAttr

from retrievekit.core.checks import check_k
from retrievekit.core.edge import (
    CoreAlias,
    atraced_search,
    build_for_edge,
    caller_passage,
    check_core,
    close_core,
    hit_metadata,
    traced_search,
)
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.core.sources import SourceMap
from retrievekit.core.trace import Trace, capture_traces, last_trace_property, publish  # noqa: F401 - examples
from retrievekit.core.types import DataObject, Passage  # noqa: F401 - examples
from retrievekit.langchain.typed_init import TypedInit

__all__ = [
    "RetrieveKitRetriever",
    "documents_to_objects",
    "emit_trace",
    "in_executor_keeping_trace",
    "object_to_document",
]

T = TypeVar("T")


def documents_to_objects(docs: Sequence[Document]) -> list[DataObject]:
    """Convert LangChain documents to retrievekit passages (id = ``doc.id`` or a hash of the text).

    Raises :class:`~retrievekit.core.errors.InvalidInputError` naming the first item that is not a ``Document``.

    Examples:
        >>> documents_to_objects([Document(page_content="hi", id="d1")])[0].id
        'd1'
        >>> documents_to_objects(["hi"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: documents[0] is a str, not a LangChain Document
    """
    out: list[DataObject] = []
    for i, d in enumerate(docs):
        if not isinstance(d, Document):
            raise InvalidInputError(f"documents[{i}] is a {type(d).__name__}, not a LangChain Document")
        out.append(caller_passage(d.id, d.page_content, d.metadata))
    return out


def object_to_document(obj: DataObject, score: float | None = None) -> Document:
    """Convert a retrievekit object to a ``Document`` (score in ``metadata['score']``).

    Examples:
        >>> object_to_document(Passage(id="a", text="x"), 0.5).metadata["score"]
        0.5
    """
    meta = hit_metadata(obj) if score is None else hit_metadata(obj, score=score)
    return Document(page_content=obj.text, metadata=meta, id=obj.id)


def emit_trace(trace: Trace, callbacks: Any) -> None:
    """Send ``trace`` to LangChain callbacks as the custom event ``retrievekit_trace`` (a no-op outside a run).

    The compressors call this at the end of ``compress_documents``; retrievers send the same event from
    ``_get_relevant_documents``.

    Examples:
        >>> emit_trace(Trace(), None)  # no callbacks: nothing to do
    """
    if callbacks is None:
        return
    try:
        dispatch_custom_event("retrievekit_trace", trace.to_dict(), config={"callbacks": callbacks})
    except RuntimeError:  # no parent run to attach the event to
        pass


async def in_executor_keeping_trace(owner: Any, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``call`` off the loop (:func:`~retrievekit.core.llm.bridge.run_off_loop`: a bounded pool, the served
    LLM's requests through its async client on the caller's loop) and make the trace it publishes
    ``owner.last_trace`` for the awaiting asyncio task, not only for the worker thread.

    The edges' async methods (``ainvoke``, ``acompress_documents``) use it.

    Examples:
        >>> import asyncio
        >>> class Edge:
        ...     last_trace = None
        ...     def call(self, query):
        ...         publish(Trace(query=query))
        ...         return query.upper()
        >>> edge = Edge()
        >>> asyncio.run(in_executor_keeping_trace(edge, edge.call, "q")), edge.last_trace.query
        ('Q', 'q')
    """
    with capture_traces() as traces:
        out = await run_off_loop(call, *args, **kwargs)
    if traces:
        owner.last_trace = traces[-1]  # published last: after anything the call itself called
    return out


class RetrieveKitRetriever(TypedInit, BaseRetriever):
    """Wrap any retrievekit retriever for LangChain (``invoke``, ``batch``, chains).

    ``k`` is set on construction and can be overridden per call:
    ``retriever.invoke(query, k=3)``. The query's trace is sent as a custom
    callback event ``retrievekit_trace`` (visible in ``astream_events``).
    :meth:`invoke_with_trace` / :meth:`ainvoke_with_trace` return it with the documents; ``last_trace`` holds the
    trace of the last call made from the current thread or asyncio task (``ainvoke`` included, though LangChain runs
    the search on an executor thread), so concurrent callers each read their own
    (:func:`~retrievekit.core.trace.last_trace_property`).

    Hits on the caller's own documents (``documents=``; ``from_documents`` passes them) return those documents --
    copies, so the caller's objects are never changed -- with their class, id and metadata, plus ``score`` and any
    metadata the method adds (ARM's ``arm_*`` keys, MindRef's spans, Self-Retrieval's scores). Other hits (a span
    or passage cut out of a document, a table given as a core object) are new documents
    (:func:`object_to_document`).

    Examples:
        >>> from retrievekit.core.index import BM25Index
        >>> core = BM25Index.build([Passage(id="a", text="red apples"), Passage(id="b", text="green pears")])
        >>> [d.id for d in RetrieveKitRetriever(retriever=core, k=1).invoke("pears")]
        ['b']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, ignored_types=(CoreAlias,))

    retriever: Any = Field(description="a retrievekit core retriever (search(query, k, trace=))")
    k: int = 4
    documents: Sequence[Document] | None = Field(
        default=None, exclude=True, repr=False, description="the caller's documents the core corpus was made from"
    )
    last_trace = last_trace_property()

    _sources: SourceMap[Document] = PrivateAttr(default_factory=SourceMap)

    def model_post_init(self, __context: Any) -> None:
        check_core(type(self), self.retriever)
        self.k = check_k(self.k)
        caller = [d for d in self.documents or () if isinstance(d, Document)]
        self._sources = SourceMap(zip(caller, documents_to_objects(caller), strict=True))

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        *,
        method: str = "hybrid",
        work_dir: str | os.PathLike[str] | None = None,
        k: int = 4,
        llm: Any = None,
        embedder: Any = None,
        **options: Any,
    ) -> RetrieveKitRetriever:
        """Build a registered method (``bm25``, ``dense``, ``hybrid``, ``llm-rerank``...) over LangChain documents;
        ``llm`` (a LangChain chat model such as ``ChatOpenAI``, or a retrievekit model) is the LLM of an LLM-based
        method (default: its local model). ``embedder`` (a LangChain ``Embeddings``, a retrievekit ``Embedder`` or
        ``"openai:MODEL@URL"``) is the embedding model of ``dense`` / ``hybrid`` / ARM / LATTICE and of every
        method's first stage that embeds (One-SHOT's pool, ``llm-rerank``'s and ``judge-rerank``'s
        ``first_stage=dense``); a method that would not use it refuses it by name (``InvalidInputError``). Default:
        all-MiniLM-L6-v2.

        Examples:
            >>> RetrieveKitRetriever.from_documents([Document(page_content="x")], method="bm25").k
            4
        """
        corpus = documents_to_objects(documents)
        core = build_for_edge(method, corpus, work_dir=work_dir, llm=llm, options=options, embedder=embedder)
        return cls(retriever=core, k=k, documents=documents)

    @classmethod
    def from_vector_store(
        cls,
        vector_store: Any,
        *,
        embedder: Any = None,
        documents: Sequence[Document] | None = None,
        method: str = "dense",
        where: dict[str, Any] | None = None,
        timeout: float | None = 60.0,
        work_dir: str | os.PathLike[str] | None = None,
        k: int = 4,
        llm: Any = None,
        **options: Any,
    ) -> RetrieveKitRetriever:
        """A registered method whose dense side is the user's LangChain ``VectorStore`` (``PGVector``, ...):
        ``dense``, ``hybrid``, ``oneshot``, ``arm``, ``llm-rerank``, ``judge-rerank`` (its ``first_stage=dense`` or
        ``hybrid``).

        ``embedder`` is the model that wrote the store's vectors (a LangChain ``Embeddings``, a retrievekit
        ``Embedder`` or ``"openai:MODEL@URL"``; default: all-MiniLM-L6-v2); a store written by
        another model is refused with :class:`~retrievekit.core.errors.IndexFormatError`. ``documents`` is the
        corpus the methods that also read texts need (BM25, ARM); by default the store's own documents (``PGVector``;
        other stores: pass them). Hits are the store's documents (their ids and metadata). ``where`` filters every
        search on metadata; each call into the store ends within ``timeout`` seconds
        (:class:`~retrievekit.core.errors.StoreUnavailableError`).

        Examples:
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> from langchain_core.vectorstores import InMemoryVectorStore
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> lc = InMemoryVectorStore(DeterministicFakeEmbedding(size=2))
            >>> docs = [Document(id="a", page_content="x")]
            >>> _ = lc.add_documents(docs)
            >>> r = RetrieveKitRetriever.from_vector_store(lc, embedder=OnesEmbedder(), documents=docs, k=1)
            >>> [d.id for d in r.invoke("x")]
            ['a']
        """
        from retrievekit.core.index.store_retriever import StoreRetriever
        from retrievekit.langchain.vector_store import LangChainStore

        store = LangChainStore(vector_store, timeout=timeout)
        dense = StoreRetriever(store, embedder, where=where)
        docs = list(documents) if documents is not None else store.documents()
        corpus = documents_to_objects(docs)
        core = build_for_edge(method, corpus, work_dir=work_dir, llm=llm, options=options, store=dense)
        return cls(retriever=core, k=k, documents=docs)

    def invoke_with_trace(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> tuple[list[Document], Trace]:
        """``invoke(input, config, **kwargs)`` and the trace of this very call: race-free, whatever other threads or
        tasks do.

        Examples:
            >>> from retrievekit.core.index import BM25Index
            >>> r = RetrieveKitRetriever(retriever=BM25Index.build([Passage(id="a", text="red apples")]), k=1)
            >>> docs, trace = r.invoke_with_trace("apples")
            >>> docs[0].id, trace.query
            ('a', 'apples')
        """
        with capture_traces() as traces:
            docs = self.invoke(input, config, **kwargs)
        return docs, traces[-1]  # an edge publishes its trace after everything it called published theirs

    async def ainvoke_with_trace(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> tuple[list[Document], Trace]:
        """``await ainvoke(input, config, **kwargs)`` and the trace of this very call: race-free, whatever other
        tasks do.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.index import BM25Index
            >>> r = RetrieveKitRetriever(retriever=BM25Index.build([Passage(id="a", text="red apples")]), k=1)
            >>> asyncio.run(r.ainvoke_with_trace("apples"))[1].query
            'apples'
        """
        with capture_traces() as traces:
            docs = await self.ainvoke(input, config, **kwargs)
        return docs, traces[-1]

    def close(self) -> None:
        """Close the core retriever it wraps when that holds resources (a ``DenseIndex``'s Chroma client, the
        hybrid baseline's); also ``with RetrieveKitRetriever.from_documents(...) as r:``.

        Examples:
            >>> from retrievekit.core.index import BM25Index
            >>> with RetrieveKitRetriever(retriever=BM25Index.build([Passage(id="a", text="tea")])) as r:
            ...     r.invoke("tea")[0].id
            'a'
        """
        close_core(self.retriever)

    def __enter__(self) -> RetrieveKitRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _document_for(self, obj: DataObject, score: float) -> Document:
        """A copy of the caller's document when ``obj`` is one (with ``score`` and the method's metadata), else a
        new document."""
        found = self._sources.match(obj)
        if found is None:
            return object_to_document(obj, score)
        doc, extra = found
        return doc.model_copy(update={"metadata": {**doc.metadata, **extra, "score": score}})

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        hits, trace = traced_search(self, self.retriever, query, k if k is not None else self.k)
        emit_trace(trace, run_manager.get_child())
        return [self._document_for(h.obj, h.score) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        # awaited to the socket where the method has an async search (LATTICE), else off the loop on a bounded pool
        hits, trace = await atraced_search(self, self.retriever, query, k if k is not None else self.k)
        emit_trace(trace, run_manager.get_child())
        return [self._document_for(h.obj, h.score) for h in hits]
