"""LlamaIndex edge of ARM: a ``BaseRetriever`` that returns ARM's object set with its joins/links in metadata.

Examples (``from_documents`` builds ARM's dense index with all-MiniLM-L6-v2; ``llm=None``: no LLM stages):
    >>> from llama_index.core import Document
    >>> docs = [Document(id_="p", text="Prime Suspect was devised by Lynda La Plante.", metadata={"title": "Prime Suspect"})]
    >>> [n.node.node_id for n in ArmRetriever.from_documents(docs, llm=None).retrieve("Who devised it?")]  # doctest: +SKIP
    ['p']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode

from retrievekit.core.arm.method import Arm, ArmConfig, create_arm
from retrievekit.core.edge import CoreAlias, split_corpus
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.types import DataObject
from retrievekit.llama_index.embeddings import user_embed_model
from retrievekit.llama_index.retriever import RetrieveKitRetriever, nodes_to_objects
from retrievekit.llama_index.settings import or_settings_llm

__all__ = ["ArmRetriever"]


class ArmRetriever(RetrieveKitRetriever):
    """ARM for LlamaIndex: the nodes are ARM's selected objects (passages and tables), best first.

    ``node.metadata`` carries ``arm_links`` (the joins/links connecting the node to the other selected objects),
    ``arm_score``, ``arm_votes``, ``arm_logprob``, ``arm_relevance``, ``arm_set`` and ``arm_selected``; a table
    node's text is its serialisation (title, header, rows). ``similarity_top_k`` caps the set. ``last_trace``
    holds the query's trace (LLM calls, MIP status, fallbacks).

    Args:
        retriever: a built :class:`~retrievekit.core.arm.method.Arm` (also ``.arm``).
        similarity_top_k: at most this many nodes.

    Examples:
        >>> from retrievekit.core.types import Passage, Table
        >>> from retrievekit.core.fakes import OnesEmbedder as Ones
        >>> corpus = [Table(id="t", title="Cast", header=("Role", "Series"), rows=(("Robert", "Prime Suspect"),)),
        ...           Passage(id="p", title="Prime Suspect", text="Prime Suspect was created by Lynda La Plante.")]
        >>> r = ArmRetriever(Arm(corpus, None, embedder=Ones()), similarity_top_k=5)  # None: no LLM stages
        >>> [(n.node.node_id, n.node.metadata["arm_links"]) for n in r.retrieve("Who created the series with Robert?")]
        [('t', ["cell 'Prime Suspect' in table 'Cast' matches passage 'Prime Suspect'"]),
         ('p', ["cell 'Prime Suspect' in table 'Cast' matches passage 'Prime Suspect'"])]
    """

    arm = CoreAlias[Arm]("_core")
    index_method = "arm"  # from_index takes an ArmIndex (its core: a LiveArm)

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[BaseNode | DataObject],
        *,
        llm: Any = DEFAULT_MODEL,
        config: ArmConfig | None = None,
        similarity_top_k: int = 10,
        embedder: Any = None,
        **options: Any,
    ) -> ArmRetriever:
        """Build ARM over LlamaIndex nodes/documents (or retrievekit ``Passage``/``Table`` objects, which keep
        their structure) with ``llm`` (default
        :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`; ``None``: no LLM stages).

        ``llm`` is a retrievekit ``ChatLLM`` / ``LocalLM`` or any LlamaIndex ``LLM`` (wrapped
        by :func:`~retrievekit.core.llm.resolve.resolve_llm`), or a model's name. Hits on the given nodes return those nodes (copies carrying the ``arm_*`` metadata).
        ``options`` are :class:`~retrievekit.core.arm.config.ArmConfig` fields (ignored when ``config`` is given).
        ``embedder``: a LlamaIndex ``BaseEmbedding`` (or anything ``as_embedder`` takes); default
        ``Settings.embed_model`` when you set it, else all-MiniLM-L6-v2.
        """
        nodes, corpus = split_corpus(documents, BaseNode, nodes_to_objects)
        embedder = user_embed_model(embedder)
        arm = create_arm(corpus, llm=or_settings_llm(llm), config=config, embedder=embedder, **options)
        return cls(arm, similarity_top_k=similarity_top_k, nodes=nodes)
