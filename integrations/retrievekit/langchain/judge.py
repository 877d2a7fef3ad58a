"""LangChain edge: the relevance judge as a reranking ``BaseDocumentCompressor``.

Scores documents with a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` (a trained
:class:`~retrievekit.core.judge.Judge`, or any object with ``score_relevance``), sorts by probability and keeps
``top_n``; returned documents are copies with ``relevance_score`` (the judge's probability) in their metadata, as
LangChain's rerankers do. Use it in a ``ContextualCompressionRetriever`` (``langchain``) or compose it in LCEL.

Examples:
    >>> from langchain_core.documents import Document
    >>> class Overlap:
    ...     def score_relevance(self, query, candidates, *, trace=None):
    ...         q = set(query.lower().split())
    ...         return [len(q & set(c.lower().split())) / len(q) for c in candidates]
    >>> docs = [Document(page_content="rome is old", id="a"), Document(page_content="aspirin eases pain", id="b")]
    >>> out = JudgeCompressor(judge=Overlap(), top_n=1).compress_documents(docs, "aspirin pain")
    >>> out[0].id, out[0].metadata["relevance_score"]
    ('b', 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from pydantic import Field, PrivateAttr

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.judge.data import object_text
from retrievekit.core.lattice.listwise import resolve_reranking_judge
from retrievekit.core.llm.judge_hooks import judge_relevance
from retrievekit.core.trace import Trace, publish
from retrievekit.langchain.retriever import documents_to_objects, emit_trace
from retrievekit.langchain.traced import TracedCompressor

__all__ = ["JudgeCompressor"]


class JudgeCompressor(TracedCompressor):
    """Rerank documents by a relevance judge's probability and keep the ``top_n``.

    Attributes:
        top_n: documents kept (default 5).
        judge: a ``RelevanceJudge`` (e.g. ``load_judge("runs/judge")``).
        judge_dir: a trained judge folder, loaded when ``judge`` is not given.
        llm: the model judged with when neither is given: the zero-shot judge of a loaded ``LocalLM`` or a model's
            name (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`), or the listwise judge of a chat LLM
            without logits (a served one, a LangChain chat model).

    ``last_trace`` holds the trace of the last call made from the current thread or asyncio task (concurrent callers
    each read their own); inside a run it is also sent as the ``retrievekit_trace`` custom event.

    Examples:
        >>> from langchain_core.documents import Document
        >>> from langchain_core.runnables import RunnableLambda
        >>> from retrievekit.langchain.retriever import RetrieveKitRetriever
        >>> from retrievekit.core.fakes import WordJudge
        >>> docs = [Document(page_content="Pain, pain and more pain."), Document(page_content="Aspirin eases pain.")]
        >>> retriever = RetrieveKitRetriever.from_documents(docs, method="bm25", k=2)
        >>> comp = JudgeCompressor(judge=WordJudge("aspirin"), top_n=1)
        >>> chain = RunnableLambda(lambda q: comp.compress_documents(retriever.invoke(q), q))
        >>> [(d.page_content, d.metadata["relevance_score"]) for d in chain.invoke("pain")]
        [('Aspirin eases pain.', 0.9)]
    """

    top_n: int = 5
    judge: Any = Field(default=None, exclude=True)
    judge_dir: str | None = None
    llm: Any = Field(default=None, exclude=True)

    _judge: Any = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        if isinstance(self.top_n, bool) or not isinstance(self.top_n, int) or self.top_n < 1:
            raise InvalidInputError(f"top_n must be a positive integer, got {self.top_n!r}")
        self._judge = resolve_reranking_judge(self.judge, self.judge_dir, llm=self.llm)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """The ``top_n`` documents by judge probability, best first, with ``relevance_score`` in metadata."""
        docs = list(documents)
        trace = Trace()
        out: list[Document] = []
        if docs:
            objs = documents_to_objects(docs)
            texts = [object_text(o) for o in objs]
            probs = judge_relevance(self._judge, query, texts, trace=trace, refs=[[o.id] for o in objs])
            order = sorted(range(len(docs)), key=lambda i: (-float(probs[i]), i))[: self.top_n]
            for i in order:
                src = docs[i]
                meta = {**dict(src.metadata or {}), "relevance_score": float(probs[i])}
                out.append(src.model_copy(update={"metadata": meta}))  # the caller's document, not mutated
        self.last_trace = trace
        trace.query = query
        publish(trace)
        emit_trace(trace, callbacks)
        return out
