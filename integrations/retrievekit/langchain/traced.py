"""LangChain edge: what retrievekit's document compressors share -- a trace per call, kept as ``last_trace``, and
``acompress_documents`` off the loop (the async bridge), keeping it.

Examples:
    >>> import asyncio
    >>> from langchain_core.documents import Document
    >>> from retrievekit.core.trace import Trace
    >>> class Keep(TracedCompressor):  # keeps every document, and traces the call
    ...     def compress_documents(self, documents, query, callbacks=None):
    ...         self.last_trace = Trace(query=query)
    ...         return list(documents)
    >>> comp = Keep()
    >>> docs = asyncio.run(comp.acompress_documents([Document(page_content="tea")], "tea"))
    >>> [d.page_content for d in docs], comp.last_trace.query
    (['tea'], 'tea')
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from retrievekit.core.trace import last_trace_property
from retrievekit.langchain.retriever import in_executor_keeping_trace

__all__ = ["TracedCompressor"]


class TracedCompressor(BaseDocumentCompressor):
    """Base of :class:`~retrievekit.langchain.compressor.OneShotCompressor` and
    :class:`~retrievekit.langchain.judge.JudgeCompressor`: ``last_trace`` holds the trace of the last call made from
    the current thread or asyncio task (concurrent callers each read their own), and the async form runs the sync
    one off the loop (:func:`~retrievekit.core.llm.bridge.run_off_loop`: its served-LLM requests await the client's
    async API) so that the awaiting task reads its own call's trace too.

    Examples:
        >>> from retrievekit.langchain import JudgeCompressor, OneShotCompressor
        >>> issubclass(JudgeCompressor, TracedCompressor), issubclass(OneShotCompressor, TracedCompressor)
        (True, True)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    last_trace = last_trace_property()

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """``compress_documents`` off the loop; ``last_trace`` is then this call's trace for the awaiting
        task too (see the module example)."""
        return await in_executor_keeping_trace(self, self.compress_documents, documents, query, callbacks)
