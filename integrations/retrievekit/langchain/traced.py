"""LangChain edge: what retrievekit's document compressors share -- a trace per call, kept as ``last_trace``, and
``acompress_documents`` awaited on the loop where the compressor's core has an async form (One-SHOT's), else off the
loop (the async bridge), keeping it.

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
from typing import Any, cast

from langchain_core.callbacks import Callbacks
from langchain_core.callbacks.manager import adispatch_custom_event
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from retrievekit.core.trace import Trace, last_trace_property
from retrievekit.langchain.retriever import in_executor_keeping_trace
from retrievekit.langchain.typed_init import TypedInit

__all__ = ["TracedCompressor", "aemit_trace"]


class TracedCompressor(TypedInit, BaseDocumentCompressor):
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
        """Awaited on the caller's loop when the compressor's core has an async form (an ``_acompress`` method:
        One-SHOT's ``aselect`` on the async model driver, no worker thread); else ``compress_documents`` off the
        loop. Either way ``last_trace`` is then this call's trace for the awaiting task too (see the module
        example)."""
        acompress = getattr(self, "_acompress", None)
        if acompress is not None:
            return cast(Sequence[Document], await acompress(documents, query, callbacks))
        return await in_executor_keeping_trace(self, self.compress_documents, documents, query, callbacks)


async def aemit_trace(trace: Trace, callbacks: Any) -> None:
    """:func:`~retrievekit.langchain.retriever.emit_trace` awaited: the custom event ``retrievekit_trace`` sent
    through LangChain's async dispatch (an async handler runs on the caller's loop, not on a thread started for it);
    a no-op outside a run.

    Examples:
        >>> import asyncio
        >>> asyncio.run(aemit_trace(Trace(), None))  # no callbacks: nothing to do
    """
    if callbacks is None:
        return
    try:
        await adispatch_custom_event("retrievekit_trace", trace.to_dict(), config={"callbacks": callbacks})
    except RuntimeError:  # no parent run to attach the event to
        pass
