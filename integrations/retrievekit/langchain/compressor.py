"""LangChain edge: One-SHOT as a ``BaseDocumentCompressor`` (in a ``ContextualCompressionRetriever`` or any chain).

Scores are read from ``metadata["score"]`` or ``metadata["relevance_score"]`` when present (retrievekit retrievers and
most rerankers put them there); without them the input order gives rank-based relevance (noted in the trace).
Returned documents are copies with ``oneshot_relevance`` and ``oneshot_tokens`` in their metadata (and the cropped
text when cropping removed sentences). The trace goes to ``last_trace`` (the last call made from the current thread
or asyncio task: concurrent callers each read their own) and, inside a run, to the ``retrievekit_trace`` custom event
(visible in ``astream_events``). ``last_result`` is the latest selection, whoever called. ``acompress_documents`` is
awaited on the caller's loop: the cropping calls go through the async model driver (a served LLM's async client, no
thread per query or request; cancelling the task sends no more).

Examples:
    >>> from langchain_core.documents import Document
    >>> docs = [Document(page_content="short answer", id="a", metadata={"score": 0.9}),
    ...         Document(page_content="long text " * 20, id="b", metadata={"score": 0.8})]
    >>> [d.id for d in OneShotCompressor(budget=10).compress_documents(docs, "question?")]
    ['a']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from pydantic import Field, PrivateAttr

from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.filters import AddRule, DocumentCatalog, DropRule, MetadataKeys
from retrievekit.core.oneshot.selector import Candidate, OneShotResult, OneShotSelector
from retrievekit.core.trace import Trace, publish
from retrievekit.langchain.retriever import (
    documents_to_objects,
    emit_trace,
    object_to_document,
)
from retrievekit.langchain.traced import TracedCompressor, aemit_trace

__all__ = ["OneShotCompressor"]

_CONFIG_FIELDS = frozenset(f.name for f in fields(OneShotConfig))


def _score(meta: dict[str, Any]) -> float | None:
    for key in ("score", "relevance_score"):
        v = meta.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)  # NaN and infinities too: the selector ranks them last, by its stated rule
    return None


class OneShotCompressor(TracedCompressor):
    """Keep as many relevant documents as fit a token budget (0/1 knapsack); optionally filter and crop.

    Attributes:
        budget, k_max, filter, crop, tokenizer: as in :class:`~retrievekit.core.oneshot.config.OneShotConfig`.
        llm: for cropping: a LangChain chat model or a retrievekit ``ChatLLM``, or a model's name
            (:func:`~retrievekit.core.llm.resolve.resolve_llm`).
        config: a full ``OneShotConfig``, or a mapping of its fields (``OneShotConfig.of``: unknown names refused).
            The scalar fields above that are given explicitly override its fields
            (:meth:`~retrievekit.core.oneshot.config.OneShotConfig.with_overrides`); the others keep the config's
            values (or the ``OneShotConfig`` defaults without ``config=``). After construction ``config`` holds the
            effective settings and ``budget`` ... ``tokenizer`` mirror them.
        corpus: documents to fetch neighbours from (adjacent-chunk adds).
        rules, catalog, keys, token_counter: see :class:`~retrievekit.core.oneshot.selector.OneShotSelector`.

    Examples:
        >>> comp = OneShotCompressor(budget=2000, config=OneShotConfig(budget=200, filter=True))
        >>> comp.config.budget, comp.config.filter, comp.budget
        (2000, True, 2000)

        In a chain: ``RunnableLambda(lambda q: comp.compress_documents(retriever.invoke(q), q))``, or, with
        ``langchain-classic`` installed, ``ContextualCompressionRetriever(base_compressor=comp, base_retriever=...)``.
    """

    budget: int = 4000
    k_max: int | None = None
    filter: bool = False
    crop: bool = False
    tokenizer: str = "regex"
    llm: Any = Field(default=None, exclude=True)
    config: OneShotConfig | None = Field(default=None, exclude=True)
    corpus: Sequence[Document] | None = Field(default=None, exclude=True)
    rules: Sequence[Any] | None = Field(default=None, exclude=True)
    catalog: DocumentCatalog | None = Field(default=None, exclude=True)
    keys: MetadataKeys | None = Field(default=None, exclude=True)
    token_counter: Any = Field(default=None, exclude=True)
    last_result: OneShotResult | None = Field(default=None, exclude=True)

    _selector: OneShotSelector = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        if "config" in data:  # a mapping of its fields is read by the one core rule (unknown names refused)
            data["config"] = OneShotConfig.of(data["config"])
        super().__init__(**data)

    def model_post_init(self, __context: Any) -> None:
        settings = [name for name in type(self).model_fields if name in _CONFIG_FIELDS]
        given = {name: getattr(self, name) for name in settings if name in self.model_fields_set}
        cfg = (self.config or OneShotConfig()).with_overrides(**given)
        for name in settings:  # the scalar fields mirror the effective config
            setattr(self, name, getattr(cfg, name))
        self.config = cfg
        chat: ChatLLM | None = resolve_llm(self.llm, default=None)
        keys = self.keys or MetadataKeys()
        lookup = None
        if self.corpus is not None:
            lookup = OneShotSelector.corpus_lookup(documents_to_objects(list(self.corpus)), keys)
        rules: Sequence[DropRule | AddRule] | None = list(self.rules) if self.rules is not None else None
        self._selector = OneShotSelector(
            cfg, rules=rules, catalog=self.catalog, keys=keys, lookup=lookup, llm=chat, token_counter=self.token_counter
        )

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Select documents for ``query`` within the budget, best first.

        Examples:
            >>> OneShotCompressor().compress_documents([], "q")
            []
        """
        by_id, cands = _candidates(documents)
        trace = Trace()
        result = self._selector.select(query, cands, trace=trace)
        out = self._kept(result, trace, query, by_id)
        emit_trace(trace, callbacks)
        return out

    async def _acompress(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """``compress_documents`` awaited on the caller's loop (``acompress_documents`` awaits it): the selector's
        ``aselect`` sends the cropping calls through the async model driver (a served LLM's async client; no
        worker thread per query or request)."""
        by_id, cands = _candidates(documents)
        trace = Trace()
        result = await self._selector.aselect(query, cands, trace=trace)
        out = self._kept(result, trace, query, by_id)
        await aemit_trace(trace, callbacks)
        return out

    def _kept(self, result: OneShotResult, trace: Trace, query: str, by_id: dict[str, Document]) -> list[Document]:
        """Keep ``result`` and ``trace`` (``last_trace``, published); the selected chunks as documents, best first."""
        self.last_result, self.last_trace = result, trace
        trace.query = query
        publish(trace)
        out: list[Document] = []
        for ch in result.chunks:
            src = by_id.get(ch.id)
            if src is None:
                doc = object_to_document(ch.obj)
            else:
                doc = src.model_copy(  # the caller's document (class kept), not mutated
                    update={
                        "page_content": ch.obj.text if ch.cropped else src.page_content,
                        "metadata": dict(src.metadata or {}),
                        "id": src.id if src.id is not None else ch.id,
                    }
                )
            doc.metadata["oneshot_relevance"] = ch.relevance
            doc.metadata["oneshot_tokens"] = ch.tokens
            if ch.cropped:
                doc.metadata["oneshot_cropped"] = True
            out.append(doc)
        return out


def _candidates(documents: Sequence[Document]) -> tuple[dict[str, Document], list[Candidate]]:
    """The documents by id (the first of each id) and as ranked candidates (scores from their metadata)."""
    objs = documents_to_objects(list(documents))
    by_id: dict[str, Document] = {}
    cands = []
    for doc, obj in zip(documents, objs, strict=True):
        by_id.setdefault(obj.id, doc)
        cands.append(Candidate(obj, _score(doc.metadata or {})))
    return by_id, cands
