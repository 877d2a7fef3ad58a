"""LlamaIndex edge of a living corpus: ``bm25`` / ``dense`` / ``hybrid`` (:class:`RetrieveKitIndex`), LATTICE
(:class:`LatticeIndex`), ARM (:class:`ArmIndex`) and MindRef (:class:`MindRefIndex`) as LlamaIndex ``BaseIndex`` es: ``insert``, ``insert_nodes``,
``delete_ref_doc``, ``delete_nodes``, ``update_ref_doc``, ``refresh_ref_docs`` (and their async forms),
``as_retriever()``, and persistence in its folder. The core is :class:`~retrievekit.core.index.live.LiveIndex`
(LATTICE's :class:`~retrievekit.core.lattice.index.LiveLattice`, ARM's :class:`~retrievekit.core.arm.index.LiveArm`,
MindRef's :class:`~retrievekit.core.generative.mindref_index.LiveMindRef`).

Examples:
    >>> from llama_index.core import Document
    >>> index = RetrieveKitIndex.from_documents([Document(text="red apples", id_="a")], method="bm25")
    >>> index.insert(Document(text="green pears", id_="b"))
    >>> index.as_retriever(similarity_top_k=1).retrieve("pears")[0].node.ref_doc_id
    'b'
    >>> index.delete_ref_doc("b"); sorted(index.ref_doc_info)
    ['a']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core import Settings, StorageContext
from llama_index.core.callbacks import CallbackManager
from llama_index.core.data_structs.data_structs import IndexDict
from llama_index.core.indices.base import BaseIndex
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode, Document, TransformComponent
from llama_index.core.storage.docstore.types import RefDocInfo

from retrievekit.core.arm.index import LiveArm
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.generative.mindref_index import LiveMindRef
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.lattice.index import LiveLattice
from retrievekit.core.llm.bridge import run_off_loop
from retrievekit.llama_index.retriever import RetrieveKitRetriever, nodes_to_objects
from retrievekit.llama_index.settings import or_settings_llm

__all__ = ["ArmIndex", "LatticeIndex", "MindRefIndex", "RetrieveKitIndex"]

_WITH_LLM = (*LiveLattice.METHODS, *LiveArm.METHODS)  # the methods that ask a model (Settings.llm by default)
_EMBEDS_NOTHING = ("bm25", *LiveMindRef.METHODS)  # an embedder given to these is refused by name

_STORAGE = "llama_index"  # the folder (beside the live index's parts) that holds the docstore and index store


class RetrieveKitIndex(BaseIndex[IndexDict]):
    """A LlamaIndex index over a retrievekit method that changes in place: ``method`` is ``"bm25"``, ``"dense"`` or
    ``"hybrid"`` (default), ``options`` its settings (``hybrid``: ``fusion``, ``dense_weight``, ``bm25_weight``,
    ``rrf_k``, ``candidate_k``), ``embedder`` the embedding model of ``dense`` / ``hybrid`` (a LlamaIndex
    ``BaseEmbedding``, a retrievekit ``Embedder`` or ``"openai:MODEL@URL"``; default: ``Settings.embed_model`` when
    you set it, else all-MiniLM-L6-v2), ``path`` its folder (None: in memory). ``method="lattice"`` / ``"arm"`` is
    :class:`LatticeIndex` / :class:`ArmIndex`'s core, with their ``llm`` (default ``Settings.llm`` when you set it).

    Documents are split into nodes by the index's transformations (LlamaIndex's ``Settings.transformations`` by
    default), as every LlamaIndex index does; ``refresh_ref_docs`` redoes only the documents whose hash changed. After
    any sequence of changes, retrieval answers as a fresh build over the held nodes would. With ``path``, the
    method's parts are written on every change; :meth:`persist` writes the docstore (the documents' hashes) beside
    them and :meth:`load` reopens both.

    Examples:
        >>> index = RetrieveKitIndex(method="bm25")  # empty
        >>> index.insert(Document(text="tea and biscuits", id_="d1"))
        >>> [n.node.ref_doc_id for n in index.as_retriever().retrieve("tea")]
        ['d1']
    """

    index_struct_cls = IndexDict
    METHOD: str | None = None  # a method's own index class names its method

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        method: str | None = None,
        path: str | os.PathLike[str] | None = None,
        embedder: Any = None,
        options: dict[str, Any] | None = None,
        llm: Any = None,
        index_struct: IndexDict | None = None,
        storage_context: StorageContext | None = None,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        show_progress: bool = False,
    ) -> None:
        from retrievekit.llama_index.embeddings import user_embed_model

        method = _method_of(type(self), method)
        emb = user_embed_model(embedder) if method not in _EMBEDS_NOTHING else embedder  # they refuse one by name
        llm = or_settings_llm(llm) if method in _WITH_LLM else llm  # the others refuse one by name
        self._live = LiveIndex.create(method, path=path, embedder=emb, options=options, llm=llm)
        super().__init__(
            nodes=list(nodes or []) if index_struct is None else None,
            index_struct=index_struct, storage_context=storage_context, callback_manager=callback_manager,
            transformations=transformations, show_progress=show_progress,
        )  # fmt: skip

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[Document],
        *,
        method: str | None = None,
        path: str | os.PathLike[str] | None = None,
        embedder: Any = None,
        options: dict[str, Any] | None = None,
        llm: Any = None,
        storage_context: StorageContext | None = None,
        callback_manager: CallbackManager | None = None,
        transformations: list[TransformComponent] | None = None,
        show_progress: bool = False,
    ) -> RetrieveKitIndex:
        """Split ``documents`` into nodes (the transformations), record their hashes, and index the nodes.

        Examples:
            >>> RetrieveKitIndex.from_documents([Document(text="x", id_="a")], method="bm25").core.method
            'bm25'
        """
        storage_context = storage_context or StorageContext.from_defaults()
        transformations = transformations or Settings.transformations
        for doc in documents:
            storage_context.docstore.set_document_hash(doc.id_, doc.hash)
        nodes = run_transformations(list(documents), transformations, show_progress=show_progress)
        return cls(
            nodes, method=method, path=path, embedder=embedder, options=options, llm=llm, storage_context=storage_context,
            callback_manager=callback_manager, transformations=transformations, show_progress=show_progress,
        )  # fmt: skip

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, embedder: Any = None, llm: Any = None, **kwargs: Any
    ) -> RetrieveKitIndex:
        """Reopen an index saved with :meth:`persist` (the method's parts and the docstore); ``llm`` is LATTICE's or
        ARM's model (not saved).

        Examples:
            >>> import tempfile
            >>> RetrieveKitIndex.load(tempfile.mkdtemp())
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... has no llama_index/ folder (persist() writes it)
        """
        folder = Path(path)
        if not (folder / _STORAGE).is_dir():
            raise IndexFormatError(f"{folder} has no {_STORAGE}/ folder (persist() writes it)")
        name, options = LiveIndex.saved_method(folder)
        storage = StorageContext.from_defaults(persist_dir=str(folder / _STORAGE))
        structs = storage.index_store.index_structs()
        if len(structs) != 1 or not isinstance(structs[0], IndexDict):
            raise IndexFormatError(f"{folder / _STORAGE} holds {len(structs)} index structures, not this index's one")
        return cls(
            method=name, path=folder, embedder=embedder, options=options, llm=llm, index_struct=structs[0],
            storage_context=storage, **kwargs,
        )  # fmt: skip

    def persist(self) -> None:
        """Write the docstore and index store into the index's folder (``llama_index/``); the method's parts are
        already written on every change.

        Examples:
            >>> RetrieveKitIndex(method="bm25").persist()
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: this index has no folder: create it with path= to persist it
        """
        if self._live.path is None:
            raise InvalidInputError("this index has no folder: create it with path= to persist it")
        self.storage_context.persist(persist_dir=str(self._live.path / _STORAGE))

    @property
    def core(self) -> LiveIndex:
        """The core :class:`~retrievekit.core.index.live.LiveIndex` (its ``last_change`` trace, ``corpus`` record).

        Examples:
            >>> RetrieveKitIndex(method="bm25").core.ids()
            []
        """
        return self._live

    def close(self) -> None:
        """Release the dense part's Chroma client (its folder sealed again).

        Examples:
            >>> RetrieveKitIndex(method="bm25").close()
        """
        self._live.close()

    # ------------------------------------------------------------------ BaseIndex
    def _build_index_from_nodes(self, nodes: Sequence[BaseNode], **build_kwargs: Any) -> IndexDict:
        struct = IndexDict()
        self._live.upsert(nodes_to_objects(nodes))
        for n in nodes:
            struct.add_node(n)
        return struct

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        self._live.upsert(nodes_to_objects(nodes))
        for n in nodes:
            self._index_struct.add_node(n)

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """``insert_nodes``, its embedding and writes off the event loop (retrievekit's bounded pool)."""
        await run_off_loop(self.insert_nodes, nodes, **insert_kwargs)

    def _delete_node(self, node_id: str, **delete_kwargs: Any) -> None:
        self.delete_nodes([node_id], **delete_kwargs)

    def delete_nodes(self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Remove the nodes of ``node_ids`` in one change (and from the docstore when ``delete_from_docstore``)."""
        self._live.delete(list(node_ids))
        for node_id in node_ids:
            self._index_struct.delete(node_id)
            if delete_from_docstore:
                self.docstore.delete_document(node_id, raise_error=False)
        self._storage_context.index_store.add_index_struct(self._index_struct)

    async def adelete_nodes(
        self, node_ids: list[str], delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """:meth:`delete_nodes`, off the event loop."""
        await run_off_loop(self.delete_nodes, node_ids, delete_from_docstore, **delete_kwargs)

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """The ingested documents (by ref doc id) and their nodes, for the nodes this index holds."""
        out: dict[str, RefDocInfo] = {}
        for node in self.docstore.get_nodes(list(self._index_struct.nodes_dict.values()), raise_error=False):
            ref = node.source_node if node is not None else None
            info = self.docstore.get_ref_doc_info(ref.node_id) if ref is not None else None
            if ref is not None and info is not None:
                out[ref.node_id] = info
        return out

    def as_retriever(self, **kwargs: Any) -> RetrieveKitRetriever:
        """A :class:`~retrievekit.llama_index.retriever.RetrieveKitRetriever` over this index
        (:meth:`~retrievekit.llama_index.retriever.RetrieveKitRetriever.from_index`; a method's index: that method's
        retriever class): it sees every later change.

        Examples:
            >>> RetrieveKitIndex(method="bm25").as_retriever(similarity_top_k=3).similarity_top_k
            3
        """
        return self._retriever_class().from_index(self, **kwargs)

    def _retriever_class(self) -> type[RetrieveKitRetriever]:
        return RetrieveKitRetriever


def _method_of(cls: type[RetrieveKitIndex], method: str | None) -> str:
    """The method an index class is given: its own (``LatticeIndex``: ``"lattice"``), else ``method`` (``"hybrid"``
    when None); a method's class given another one refuses it."""
    if cls.METHOD is None:
        return "hybrid" if method is None else method
    if method is not None and method != cls.METHOD:
        raise InvalidInputError(f"{cls.__name__} is a {cls.METHOD} index, not {method!r}: use RetrieveKitIndex")
    return cls.METHOD


class LatticeIndex(RetrieveKitIndex):
    """LATTICE as a LlamaIndex index that changes in place (core:
    :class:`~retrievekit.core.lattice.index.LiveLattice`): made empty, its first nodes build a tree; later ones are
    routed into it and deleted ones pruned from it, the touched summaries refreshed with at most the tree's height
    LLM calls per changed node (none with ``options={"summaries": "extractive"}``; ``index.core.last_report`` and the
    change's trace count them). ``options`` are LATTICE's flat build and search settings and ``builder``; ``llm``
    writes summaries and scores the search (a model's name, a retrievekit model or a LlamaIndex ``LLM``; default
    ``Settings.llm`` when you set it, else LATTICE's default model); :meth:`as_retriever` is a
    :class:`~retrievekit.llama_index.lattice.LatticeRetriever`.

    Examples:
        >>> from retrievekit.core.fakes import LengthEmbedder, WordScoreLLM
        >>> index = LatticeIndex(llm=WordScoreLLM("tea"), embedder=LengthEmbedder(), options={"summaries": "extractive"})
        >>> index.insert(Document(text="green tea", id_="d1")); index.insert(Document(text="black coffee", id_="d2"))
        >>> [n.node.ref_doc_id for n in index.as_retriever(similarity_top_k=1).retrieve("tea")]
        ['d1']
    """

    METHOD = "lattice"

    def _retriever_class(self) -> type[RetrieveKitRetriever]:
        from retrievekit.llama_index.lattice import LatticeRetriever

        return LatticeRetriever


class ArmIndex(RetrieveKitIndex):
    """ARM as a LlamaIndex index that changes in place (core: :class:`~retrievekit.core.arm.index.LiveArm`: its BM25
    and dense parts change in place; its answers are a fresh build's over the held nodes). ``options`` are ARM's
    settings, ``llm`` its model (default ``Settings.llm`` when you set it, else ARM's default model; ``"none"``: no
    LLM stages); :meth:`as_retriever` is an :class:`~retrievekit.llama_index.arm.ArmRetriever`.

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> index = ArmIndex(llm="none", embedder=OnesEmbedder())
        >>> index.insert(Document(text="Prime Suspect was created by Lynda La Plante.", id_="d1"))
        >>> [n.node.ref_doc_id for n in index.as_retriever().retrieve("Who created Prime Suspect?")]
        ['d1']
    """

    METHOD = "arm"

    def _retriever_class(self) -> type[RetrieveKitRetriever]:
        from retrievekit.llama_index.arm import ArmRetriever

        return ArmRetriever


class MindRefIndex(RetrieveKitIndex):
    """MindRef as a LlamaIndex index that changes in place (core:
    :class:`~retrievekit.core.generative.mindref_index.LiveMindRef`): each node is a document whose title enters
    MindRef's title trie in place, and a deleted node's title path leaves it; answers equal MindRef built fresh over
    the held nodes. ``options`` are :class:`~retrievekit.core.generative.mindref.MindRefConfig` fields, ``llm`` its
    local scoring LM (a ``LocalLM`` or a local model's name; default
    :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`; not ``Settings.llm``, a chat model MindRef cannot decode
    with); it embeds nothing. :meth:`as_retriever` is a :class:`~retrievekit.llama_index.mindref.MindRefRetriever`.

    Examples:
        >>> from retrievekit.core.llm import DEFAULT_MODEL, LocalLM
        >>> index = MindRefIndex(llm=LocalLM.load(DEFAULT_MODEL))  # doctest: +SKIP
        >>> index.insert(Document(text="Aspirin thins blood.", metadata={"title": "Aspirin"}))  # doctest: +SKIP
        >>> index.as_retriever(similarity_top_k=1).retrieve("blood")[0].node.metadata["title"]  # doctest: +SKIP
        'Aspirin'
        >>> MindRefIndex(embedder="all-MiniLM-L6-v2")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: embedder= reaches no part of a mindref LiveIndex (it embeds nothing); leave it out
    """

    METHOD = "mindref"

    def _retriever_class(self) -> type[RetrieveKitRetriever]:
        from retrievekit.llama_index.mindref import MindRefRetriever

        return MindRefRetriever
