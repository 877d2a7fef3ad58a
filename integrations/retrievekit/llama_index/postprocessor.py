"""LlamaIndex edge: One-SHOT as a ``BaseNodePostprocessor`` (token-budgeted selection, metadata filter, cropping).

Emits what LlamaIndex rerankers emit: ``ReRankStartEvent`` / ``ReRankEndEvent`` through the instrumentation
dispatcher, ``CBEventType.RERANKING`` through the callback manager, and a
:class:`~retrievekit.llama_index.retriever.RetrieveKitTraceEvent` carrying the One-SHOT trace (every drop, add,
crop and fallback with its reason).

Examples:
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> pp = OneShotPostprocessor(budget=6)
    >>> nodes = [NodeWithScore(node=TextNode(id_="a", text="one two three"), score=0.9),
    ...          NodeWithScore(node=TextNode(id_="b", text="four five six seven"), score=0.8)]
    >>> [n.node.node_id for n in pp.postprocess_nodes(nodes, query_str="numbers?")]
    ['a']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankStartEvent
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.filters import AddRule, DocumentCatalog, DropRule, MetadataKeys
from retrievekit.core.oneshot.selector import Candidate, OneShotResult, OneShotSelector
from retrievekit.core.trace import Trace
from retrievekit.llama_index.retriever import nodes_to_objects, object_to_node
from retrievekit.llama_index.settings import or_settings_llm
from retrievekit.llama_index.traced import TracedPostprocessor

__all__ = ["OneShotPostprocessor"]

dispatcher = get_dispatcher(__name__)

_MODEL_NAME = "retrievekit-oneshot"


class _FromConfig:
    """Default of the scalar arguments: not given, so the value comes from ``config=`` (or its default)."""

    def __repr__(self) -> str:
        return "<from config>"


_FROM_CONFIG: Any = _FromConfig()


class OneShotPostprocessor(TracedPostprocessor):
    """Select as many relevant nodes as fit a token budget (0/1 knapsack), optionally filter by metadata and crop.

    Attributes:
        budget: token budget for the returned nodes' text.
        k_max: optional cap on the number of nodes.
        filter: apply the rule-based metadata filter (drop misaligned, add same-document/adjacent nodes).
        crop: let an LLM keep only the needed sentences of each node (needs ``llm``).
        tokenizer: ``"regex"`` (default estimate), ``"tiktoken"``, or pass ``token_counter=`` (callable/tokenizer).
        llm: for cropping: a LlamaIndex ``LLM`` or any retrievekit ``ChatLLM``, or a model's name
            (:func:`~retrievekit.core.llm.resolve.resolve_llm`).
        config: a full :class:`~retrievekit.core.oneshot.config.OneShotConfig`, or a mapping of its fields (read by
            ``OneShotConfig.of``: unknown names refused). The scalar arguments above that are
            given explicitly override its fields (``OneShotConfig.with_overrides``); the others keep the config's
            values (or the ``OneShotConfig`` defaults without ``config=``). The effective settings are
            :attr:`config`; ``budget`` ... ``tokenizer`` mirror them.
        corpus: nodes to fetch neighbours from (adjacent-chunk adds); the input nodes are always searched.
        rules, catalog, keys, token_counter: see :class:`~retrievekit.core.oneshot.selector.OneShotSelector`.

    Without a query (``postprocess_nodes(nodes)``) selection still works; cropping is skipped and noted.
    ``apostprocess_nodes`` is awaited on the caller's loop: the cropping calls go through the async model driver
    (a served LLM's async client, no thread per query or request; cancelling the task sends no more).
    ``last_trace`` holds the trace of the last call made from the current thread or asyncio task (concurrent callers
    each read their own); ``last_result`` is the latest selection, whoever called.

    Examples:
        >>> pp = OneShotPostprocessor(budget=1000, config=OneShotConfig(budget=200, filter=True))
        >>> pp.config.budget, pp.config.filter, pp.budget
        (1000, True, 1000)

        In a query engine: ``RetrieverQueryEngine.from_args(retriever, llm=llm, node_postprocessors=[pp])``.
    """

    budget: int = Field(default=4000, description="token budget")
    k_max: int | None = Field(default=None, description="max number of nodes")
    filter: bool = Field(default=False, description="rule-based metadata filter")
    crop: bool = Field(default=False, description="LLM sentence cropping")
    tokenizer: str = Field(default="regex", description="token counter spec")

    _selector: OneShotSelector = PrivateAttr()
    _corpus_nodes: dict[str, BaseNode] = PrivateAttr(default_factory=dict)
    last_result: OneShotResult | None = Field(default=None, exclude=True)

    model_config = {"arbitrary_types_allowed": True}

    def __init__(
        self,
        budget: int = _FROM_CONFIG,
        *,
        k_max: int | None = _FROM_CONFIG,
        filter: bool = _FROM_CONFIG,
        crop: bool = _FROM_CONFIG,
        tokenizer: str = _FROM_CONFIG,
        llm: Any = None,
        config: OneShotConfig | Mapping[str, Any] | None = None,
        corpus: Sequence[BaseNode] | None = None,
        rules: Sequence[DropRule | AddRule] | None = None,
        catalog: DocumentCatalog | None = None,
        keys: MetadataKeys | None = None,
        token_counter: Any = None,
        **kwargs: Any,
    ) -> None:
        config = OneShotConfig.of(config)
        scalars = {"budget": budget, "k_max": k_max, "filter": filter, "crop": crop, "tokenizer": tokenizer}
        cfg = (config or OneShotConfig()).with_overrides(**{k: v for k, v in scalars.items() if v is not _FROM_CONFIG})
        super().__init__(**{name: getattr(cfg, name) for name in scalars}, **kwargs)
        chat: ChatLLM | None = resolve_llm(or_settings_llm(llm), default=None)
        keys = keys or MetadataKeys()
        lookup = None
        if corpus is not None:
            self._corpus_nodes = {n.node_id: n for n in corpus}
            lookup = OneShotSelector.corpus_lookup(nodes_to_objects(list(corpus)), keys)
        self._selector = OneShotSelector(
            cfg, rules=rules, catalog=catalog, keys=keys, lookup=lookup, llm=chat, token_counter=token_counter
        )

    @property
    def config(self) -> OneShotConfig:
        """The effective settings: ``config=`` with the explicitly given scalar arguments applied.

        Examples:
            >>> OneShotPostprocessor(k_max=3).config.k_max
            3
        """
        return self._selector.config

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query, by_id, cands, payload = self._begin(nodes, query_bundle)
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            trace = Trace()
            result = self._selector.select(query, cands, trace=trace)
            out = self._nodes_of(result, by_id)
            event.on_end(payload={EventPayload.NODES: out})
        self.last_result = result
        return self._finish(trace, query, out)

    async def _aprocess(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """``_postprocess_nodes`` awaited on the caller's loop: the selector's ``aselect`` sends the cropping calls
        through the async model driver (a served LLM's async client; no worker thread per query or request)."""
        query, by_id, cands, payload = self._begin(nodes, query_bundle)
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            trace = Trace()
            result = await self._selector.aselect(query, cands, trace=trace)
            out = self._nodes_of(result, by_id)
            event.on_end(payload={EventPayload.NODES: out})
        self.last_result = result
        return self._finish(trace, query, out)

    def _begin(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> tuple[str, dict[str, NodeWithScore], list[Candidate], dict[Any, Any]]:
        """A call's start: the query, the nodes by id, the candidates, the reranking event's payload (the start
        event dispatched)."""
        query = query_bundle.query_str if query_bundle is not None else ""
        dispatcher.event(
            ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.k_max or len(nodes), model_name=_MODEL_NAME)
        )
        by_id: dict[str, NodeWithScore] = {}
        cands: list[Candidate] = []
        for nws, obj in zip(nodes, nodes_to_objects([n.node for n in nodes]), strict=True):
            by_id.setdefault(obj.id, nws)
            cands.append(Candidate(obj, nws.score))
        payload = {
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: _MODEL_NAME,
            EventPayload.QUERY_STR: query,
            EventPayload.TOP_K: self.k_max or len(nodes),
        }
        return query, by_id, cands, payload

    def _nodes_of(self, result: OneShotResult, by_id: dict[str, NodeWithScore]) -> list[NodeWithScore]:
        """The selected chunks as nodes (the caller's, a cropped copy, or a corpus neighbour), in relevance order."""
        out: list[NodeWithScore] = []
        for ch in result.chunks:
            src = by_id.get(ch.id)
            node: BaseNode
            if src is not None:
                node = src.node
                score = ch.score if ch.score is not None else ch.relevance  # merged copies: the best score
            else:  # added from the corpus (a neighbour)
                node = self._corpus_nodes.get(ch.id) or object_to_node(ch.obj)
                score = ch.relevance
            if ch.cropped and isinstance(node, TextNode):
                node = node.model_copy(update={"text": ch.obj.text})
            out.append(NodeWithScore(node=node, score=score))
        return out
