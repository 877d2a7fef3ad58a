"""LangChain edge of a living corpus: ``bm25`` / ``dense`` / ``hybrid``, ``lattice``, ``arm`` and ``mindref`` as a
``langchain_core`` ``DocumentIndex`` (``upsert``, ``delete``, ``get``, their async twins, and retrieval), which
``langchain_core.indexing.index`` drives with a record manager (incremental or full cleanup). The core is
:class:`~retrievekit.core.index.live.LiveIndex` (LATTICE's :class:`~retrievekit.core.lattice.index.LiveLattice`,
ARM's :class:`~retrievekit.core.arm.index.LiveArm`, MindRef's
:class:`~retrievekit.core.generative.mindref_index.LiveMindRef`).

Examples:
    >>> from langchain_core.documents import Document
    >>> index = RetrieveKitDocumentIndex(method="bm25", k=1)
    >>> index.upsert([Document(id="a", page_content="red apples"), Document(id="b", page_content="green pears")])
    {'succeeded': ['a', 'b'], 'failed': []}
    >>> [d.id for d in index.invoke("pears")]
    ['b']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.indexing import DeleteResponse, DocumentIndex, UpsertResponse
from pydantic import ConfigDict, Field, PrivateAttr

from retrievekit.core.arm.index import LiveArm
from retrievekit.core.edge import atraced_search, traced_search
from retrievekit.core.generative.mindref_index import LiveMindRef
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.lattice.index import LiveLattice
from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.core.trace import last_trace_property
from retrievekit.core.types import DataObject
from retrievekit.langchain.retriever import documents_to_objects, emit_trace
from retrievekit.langchain.typed_init import TypedInit

__all__ = ["LIVING", "RetrieveKitDocumentIndex"]

LIVING = (*LiveLattice.METHODS, *LiveArm.METHODS, *LiveMindRef.METHODS)
"""The methods' own living indexes this edge offers besides bm25 / dense / hybrid."""


def _document(obj: DataObject, **extra: Any) -> Document:
    """The ``Document`` a held object was made from (its id, text and metadata), plus ``extra`` metadata."""
    return Document(id=obj.id, page_content=obj.text, metadata={**obj.metadata, **extra})


class RetrieveKitDocumentIndex(TypedInit, DocumentIndex):
    """A ``DocumentIndex`` over a retrievekit method that changes in place: ``method`` is ``"bm25"``, ``"dense"``,
    ``"hybrid"`` (default), ``"lattice"``, ``"arm"`` or ``"mindref"``, ``options`` its settings (``hybrid``:
    ``fusion``, ``dense_weight``, ``bm25_weight``, ``rrf_k``, ``candidate_k``; ``lattice``: LATTICE's flat build and
    search settings and ``builder``; ``arm``: ARM's; ``mindref``: ``MindRefConfig`` fields), ``embedder`` the
    embedding model of every method but ``bm25`` and ``mindref`` (a LangChain ``Embeddings``, a retrievekit
    ``Embedder`` or ``"openai:MODEL@URL"``; default all-MiniLM-L6-v2), ``llm`` the model of ``lattice`` / ``arm`` (a
    LangChain chat model, a retrievekit model or a model's name; default their default model; ``arm``: ``"none"`` for
    no LLM stages) and of ``mindref`` (a local scoring LM: a ``LocalLM`` or a local model's name; a chat model is
    refused), ``path`` its folder (None: in memory; an existing one is reopened), ``k`` how many documents a
    retrieval returns.

    ``mindref`` changes its title trie in place (a deleted document's title path leaves it); a retrieval returns
    MindRef's passages (``Document.id`` the document's id, or ``"{id}#tok{start}"`` for a further passage of it).

    ``lattice`` made empty builds its tree from the first documents; later ones are routed into the tree and deleted
    ones pruned from it, the touched summaries refreshed with at most the tree's height LLM calls per changed
    document (none with ``options={"summaries": "extractive"}``; ``index.core.last_report`` counts them).

    A document without an id gets the first 16 hex digits of its text's sha1. After any sequence of ``upsert`` and
    ``delete`` calls, retrieval answers as ``RetrieveKitRetriever.from_documents`` over the held documents would.
    Drive it with ``langchain_core.indexing.index`` and a record manager (``SQLRecordManager``) to keep it in step
    with a changing source; see docs/updates.md.

    Examples:
        >>> index = RetrieveKitDocumentIndex(method="bm25")
        >>> _ = index.upsert([Document(id="a", page_content="tea", metadata={"page": 1})])
        >>> index.get(["a", "missing"])
        [Document(id='a', metadata={'page': 1}, page_content='tea')]
        >>> index.delete(["a", "missing"])
        {'succeeded': ['a'], 'num_deleted': 1, 'failed': [], 'num_failed': 0}
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    method: str = "hybrid"
    options: dict[str, Any] = Field(default_factory=dict)
    embedder: Any = Field(default=None, exclude=True, repr=False)
    llm: Any = Field(default=None, exclude=True, repr=False)
    path: str | os.PathLike[str] | None = None
    k: int = 4
    last_trace = last_trace_property()

    _live: LiveIndex = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        opts = self.options or None  # none given: a reopened folder keeps its own
        live = LiveIndex.create  # "lattice" / "arm": their living indexes (imported above); llm= refused by the others
        self._live = live(self.method, path=self.path, embedder=self.embedder, options=opts, llm=self.llm)

    @property
    def core(self) -> LiveIndex:
        """The core :class:`~retrievekit.core.index.live.LiveIndex` (its ``last_change`` trace, ``corpus`` record).

        Examples:
            >>> RetrieveKitDocumentIndex(method="bm25").core.method
            'bm25'
        """
        return self._live

    def upsert(self, items: Sequence[Document], /, **kwargs: Any) -> UpsertResponse:
        """Add the documents, replacing held ones with the same ids; every id is in ``succeeded`` (a failure raises a
        typed error and changes nothing).

        Examples:
            >>> RetrieveKitDocumentIndex(method="bm25").upsert([Document(page_content="x")])["succeeded"]
            ['11f6ad8ec52a2984']
        """
        ids = self._live.upsert(documents_to_objects(list(items)))
        return UpsertResponse(succeeded=ids, failed=[])

    async def aupsert(self, items: Sequence[Document], /, **kwargs: Any) -> UpsertResponse:
        """:meth:`upsert`, off the event loop (embedding and writes run on retrievekit's bounded pool).

        Examples:
            >>> import asyncio
            >>> asyncio.run(RetrieveKitDocumentIndex(method="bm25").aupsert([Document(id="a", page_content="x")]))
            {'succeeded': ['a'], 'failed': []}
        """
        return await run_off_loop(self.upsert, items, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> DeleteResponse:
        """Remove the documents of ``ids``; those that were held are ``succeeded``, missing ones are not a failure.
        No ``ids`` raises :class:`~retrievekit.core.errors.InvalidInputError` (a ``ValueError``).

        Examples:
            >>> RetrieveKitDocumentIndex(method="bm25").delete()
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: delete: ids must be a list of strings, got None
        """
        gone = self._live.delete(ids)  # type: ignore[arg-type]  # None is refused there, typed
        return DeleteResponse(succeeded=gone, num_deleted=len(gone), failed=[], num_failed=0)

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> DeleteResponse:
        """:meth:`delete`, off the event loop.

        Examples:
            >>> import asyncio
            >>> asyncio.run(RetrieveKitDocumentIndex(method="bm25").adelete(["a"]))["num_deleted"]
            0
        """
        return await run_off_loop(self.delete, ids, **kwargs)

    def get(self, ids: Sequence[str], /, **kwargs: Any) -> list[Document]:
        """The held documents of ``ids`` (in the order asked, each once; missing ones left out).

        Examples:
            >>> RetrieveKitDocumentIndex(method="bm25").get(["a"])
            []
        """
        return [_document(o) for o in self._live.get(ids)]

    async def aget(self, ids: Sequence[str], /, **kwargs: Any) -> list[Document]:
        """:meth:`get`, off the event loop.

        Examples:
            >>> import asyncio
            >>> asyncio.run(RetrieveKitDocumentIndex(method="bm25").aget(["a"]))
            []
        """
        return await run_off_loop(self.get, ids, **kwargs)

    def close(self) -> None:
        """Release the dense part's Chroma client (its folder sealed again); also ``with ... as index:``.

        Examples:
            >>> with RetrieveKitDocumentIndex(method="bm25") as index:
            ...     index.get([])
            []
        """
        self._live.close()

    def __enter__(self) -> RetrieveKitDocumentIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        hits, trace = traced_search(self, self._live, query, k if k is not None else self.k)
        emit_trace(trace, run_manager.get_child())
        return [_document(h.obj, score=h.score) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        hits, trace = await atraced_search(self, self._live, query, k if k is not None else self.k)
        emit_trace(trace, run_manager.get_child())
        return [_document(h.obj, score=h.score) for h in hits]
