"""LlamaIndex edge: the relevance judge as a reranking ``BaseNodePostprocessor``.

Scores every node with a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` (a trained
:class:`~retrievekit.core.judge.Judge`, or any object with ``score_relevance``), sorts by the judge's probability and
keeps ``top_n``. A kept node's score becomes the judge's probability; the incoming score is kept in
``metadata["first_stage_score"]`` (on a copy of the node). Emits ``ReRankStartEvent`` / ``ReRankEndEvent``,
``CBEventType.RERANKING`` and a :class:`~retrievekit.llama_index.retriever.RetrieveKitTraceEvent` with the judge's
calls and tokens, like the LlamaIndex rerankers.

Examples:
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> class Overlap:
    ...     def score_relevance(self, query, candidates, *, trace=None):
    ...         q = set(query.lower().split())
    ...         return [len(q & set(c.lower().split())) / len(q) for c in candidates]
    >>> nodes = [NodeWithScore(node=TextNode(id_="a", text="rome is old"), score=2.0),
    ...          NodeWithScore(node=TextNode(id_="b", text="aspirin eases pain"), score=1.0)]
    >>> out = JudgeReranker(judge=Overlap(), top_n=1).postprocess_nodes(nodes, query_str="aspirin pain")
    >>> out[0].node.node_id, out[0].score, out[0].node.metadata["first_stage_score"]
    ('b', 1.0, 1.0)
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CBEventType, EventPayload
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankStartEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.judge.data import object_text
from retrievekit.core.lattice.listwise import resolve_reranking_judge
from retrievekit.core.llm.judge_hooks import judge_relevance
from retrievekit.core.trace import Trace
from retrievekit.llama_index.retriever import nodes_to_objects
from retrievekit.llama_index.traced import TracedPostprocessor

__all__ = ["JudgeReranker"]

dispatcher = get_dispatcher(__name__)

_MODEL_NAME = "retrievekit-judge"


class JudgeReranker(TracedPostprocessor):
    """Rerank nodes by a relevance judge's probability and keep the ``top_n``.

    Attributes:
        top_n: nodes kept (default 5).
        judge: a ``RelevanceJudge`` (e.g. ``load_judge("runs/judge")``); or give ``judge_dir`` (a trained judge
            folder) or nothing: the zero-shot judge of ``llm`` (a loaded ``LocalLM`` or a model's name; default
            :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`), or the listwise judge of a chat LLM without logits
            (a served one, a LlamaIndex ``LLM``).

    ``last_trace`` holds the trace of the last call made from the current thread or asyncio task (concurrent callers
    each read their own).

    Examples:
        >>> from llama_index.core import Document
        >>> from llama_index.core.llms import MockLLM
        >>> from llama_index.core.query_engine import RetrieverQueryEngine
        >>> from retrievekit.llama_index.retriever import RetrieveKitRetriever
        >>> from retrievekit.core.fakes import WordJudge
        >>> docs = [Document(text="Pain, pain and more pain."), Document(text="Aspirin eases pain.")]
        >>> retriever = RetrieveKitRetriever.from_documents(docs, method="bm25", similarity_top_k=2)
        >>> engine = RetrieverQueryEngine.from_args(
        ...     retriever, llm=MockLLM(), node_postprocessors=[JudgeReranker(judge=WordJudge("aspirin"), top_n=1)])
        >>> [n.node.get_content() for n in engine.query("pain").source_nodes]
        ['Aspirin eases pain.']
    """

    top_n: int = Field(default=5, description="nodes kept after reranking")

    _judge: Any = PrivateAttr()

    model_config = {"arbitrary_types_allowed": True}

    def __init__(
        self,
        top_n: int = 5,
        *,
        judge: Any = None,
        judge_dir: str | None = None,
        llm: Any = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
            raise InvalidInputError(f"top_n must be a positive integer, got {top_n!r}")
        super().__init__(top_n=top_n, **kwargs)
        self._judge = resolve_reranking_judge(judge, judge_dir, llm=llm)

    @property
    def judge(self) -> Any:
        """The judge in use."""
        return self._judge

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise InvalidInputError("JudgeReranker needs the query (postprocess_nodes(nodes, query_str=...))")
        query = query_bundle.query_str
        dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n, model_name=_MODEL_NAME))
        payload = {
            EventPayload.NODES: nodes,
            EventPayload.MODEL_NAME: _MODEL_NAME,
            EventPayload.QUERY_STR: query,
            EventPayload.TOP_K: self.top_n,
        }
        trace = Trace()
        with self.callback_manager.event(CBEventType.RERANKING, payload=payload) as event:
            out: list[NodeWithScore] = []
            if nodes:
                objs = nodes_to_objects([n.node for n in nodes])
                texts = [object_text(o) for o in objs]
                probs = judge_relevance(self._judge, query, texts, trace=trace, refs=[[o.id] for o in objs])
                order = sorted(range(len(nodes)), key=lambda i: (-float(probs[i]), i))[: self.top_n]
                for i in order:
                    src = nodes[i]
                    node = src.node.model_copy()
                    node.metadata = {**dict(src.node.metadata or {}), "first_stage_score": src.score}
                    out.append(NodeWithScore(node=node, score=float(probs[i])))
            event.on_end(payload={EventPayload.NODES: out})
        return self._finish(trace, query, out)
