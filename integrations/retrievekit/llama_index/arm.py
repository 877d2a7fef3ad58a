"""LlamaIndex edge of ARM: a ``BaseRetriever`` that returns ARM's object set with its joins/links in metadata.

Examples:
    >>> from llama_index.core import Document
    >>> docs = [Document(id_="p", text="Prime Suspect was devised by Lynda La Plante.", metadata={"title": "Prime Suspect"})]
    >>> r = ArmRetriever.from_documents(docs, llm_name=None)  # doctest: +SKIP
    >>> r.retrieve("Who devised Prime Suspect?")[0].node.metadata["arm_links"]  # doctest: +SKIP
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode

from retrievekit.core.arm.method import Arm, ArmConfig, create_arm
from retrievekit.core.checks import check_corpus
from retrievekit.core.llm.names import split_llm_argument
from retrievekit.core.types import DataObject
from retrievekit.llama_index.llm import as_chat_llm
from retrievekit.llama_index.retriever import RetrieveKitRetriever, nodes_to_objects

__all__ = ["ArmRetriever"]


class ArmRetriever(RetrieveKitRetriever):
    """ARM for LlamaIndex: the nodes are ARM's selected objects (passages and tables), best first.

    ``node.metadata`` carries ``arm_links`` (the joins/links connecting the node to the other selected objects),
    ``arm_score``, ``arm_votes``, ``arm_logprob``, ``arm_relevance``, ``arm_set`` and ``arm_selected``; a table
    node's text is its serialisation (title, header, rows). ``similarity_top_k`` caps the set. ``last_trace``
    holds the query's trace (LLM calls, MIP status, fallbacks).

    Args:
        arm: a built :class:`~retrievekit.core.arm.method.Arm`.
        similarity_top_k: at most this many nodes.

    Examples:
        >>> r = ArmRetriever(Arm(corpus, LocalLM.load("smollm2")), similarity_top_k=5)  # doctest: +SKIP
        >>> RetrieverQueryEngine.from_args(r, llm=my_llm)  # doctest: +SKIP
    """

    def __init__(
        self,
        arm: Arm,
        *,
        similarity_top_k: int = 10,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        nodes: Sequence[BaseNode] | None = None,
    ) -> None:
        self.arm = arm
        super().__init__(
            arm, similarity_top_k=similarity_top_k, callback_manager=callback_manager, verbose=verbose, nodes=nodes
        )

    @classmethod
    def from_documents(  # type: ignore[override]
        cls,
        documents: Sequence[BaseNode | DataObject],
        *,
        llm: Any = None,
        llm_name: str | None = "smollm2",
        config: ArmConfig | None = None,
        similarity_top_k: int = 10,
        **options: Any,
    ) -> ArmRetriever:
        """Build ARM over LlamaIndex nodes/documents (or retrievekit ``Passage``/``Table`` objects, which keep
        their structure) with ``llm`` (default ``LocalLM.load(llm_name)``; ``llm_name=None``: no LLM stages).

        ``llm`` is a retrievekit ``ChatLLM`` / ``LocalLM`` or any LlamaIndex ``LLM`` (wrapped by
        :func:`~retrievekit.llama_index.llm.as_chat_llm`); ``llm="smollm2"`` (a name) is the deprecated spelling of
        ``llm_name``. Hits on the given nodes return those nodes (copies carrying the ``arm_*`` metadata).
        ``options`` are :class:`~retrievekit.core.arm.config.ArmConfig` fields (ignored when ``config`` is given).

        Examples:
            >>> ArmRetriever.from_documents(docs, llm_name=None, base_k=3).arm.config.base_k  # doctest: +SKIP
            3
        """
        llm, llm_name = split_llm_argument(llm, llm_name, where="ArmRetriever.from_documents")
        nodes = [d for d in documents if isinstance(d, BaseNode)]
        converted = iter(nodes_to_objects(nodes))
        objs = check_corpus([next(converted) if isinstance(d, BaseNode) else d for d in documents])
        arm = create_arm(objs, llm=as_chat_llm(llm), llm_name=llm_name, config=config, **options)
        return cls(arm, similarity_top_k=similarity_top_k, nodes=nodes)
