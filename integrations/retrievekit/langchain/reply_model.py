"""LangChain edge: a chat model that answers each call with one message, the ``_generate`` boilerplate written once.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> class Shout(OneReplyChatModel):
    ...     @property
    ...     def _llm_type(self): return "shout"
    ...     def _reply(self, messages, stop, kwargs): return AIMessage(content=messages[-1].content.upper())
    >>> Shout().invoke("hello").content
    'HELLO'
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from retrievekit.core.llm.bridge import run_off_loop

__all__ = ["OneReplyChatModel"]


class OneReplyChatModel(BaseChatModel):
    """Base of retrievekit's LangChain chat models (the local model, the plan replayer, the scripted test model):
    a subclass writes ``_reply(messages, stop, kwargs) -> AIMessage`` and this class wraps it as LangChain's
    ``ChatResult``; the async form runs it off the loop (:func:`~retrievekit.core.llm.bridge.run_off_loop`).

    Examples:
        >>> from retrievekit.langchain.local_chat import LocalToolChatModel
        >>> issubclass(LocalToolChatModel, OneReplyChatModel)
        True
    """

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> AIMessage:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, stop, kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # off the loop (a local model never blocks it); a served model inside awaits its async client
        return await run_off_loop(self._generate, messages, stop, None, **kwargs)
