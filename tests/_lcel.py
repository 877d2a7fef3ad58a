"""One LangChain RAG chain (retriever → context → prompt → scripted chat model) for the integration tests."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough


def _rag_chain(retriever: Any, reply: str, seen: list[Document]) -> Any:
    """``{"context": retriever | fmt, "question": ...} | prompt | model | parser``; ``fmt`` records what it formats."""

    def fmt(docs: list[Document]) -> str:
        seen.extend(docs)
        return "\n\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    return (
        {"context": retriever | fmt, "question": RunnablePassthrough()}
        | prompt
        | FakeListChatModel(responses=[reply])
        | StrOutputParser()
    )


def run_rag_chain(retriever: Any, question: str, reply: str) -> tuple[str, list[Document]]:
    """Invoke ``{"context": retriever | fmt, "question": ...} | prompt | model | parser``.

    Returns the chain's answer and the documents the retriever handed to the prompt, in order.
    """
    seen: list[Document] = []
    return _rag_chain(retriever, reply, seen).invoke(question), seen


async def arun_rag_chain(retriever: Any, question: str, reply: str) -> tuple[str, list[Document]]:
    """:func:`run_rag_chain` awaited (``ainvoke``): the retriever's async path."""
    seen: list[Document] = []
    return await _rag_chain(retriever, reply, seen).ainvoke(question), seen
