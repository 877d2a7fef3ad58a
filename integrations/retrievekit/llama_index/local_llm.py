"""A LlamaIndex ``LLM`` over retrievekit's local transformers model, so a query engine runs offline.

:class:`LocalLlamaIndexLLM` is a LlamaIndex ``CustomLLM`` around :class:`~retrievekit.core.llm.local.LocalLM`:
``RetrieverQueryEngine.from_args(retriever, llm=LocalLlamaIndexLLM(DEFAULT_MODEL))`` answers from the retrieved nodes
with the embedded SmolLM2-135M-Instruct (or ``"qwen0.5b"``, or any transformers causal LM wrapped in ``LocalLM``),
with no server and no network. It is a chat model: messages go through the tokenizer's chat template; generation is
greedy unless ``temperature > 0``.

Examples:
    >>> from llama_index.core import Document
    >>> from llama_index.core.query_engine import RetrieverQueryEngine
    >>> from retrievekit.llama_index.retriever import RetrieveKitRetriever
    >>> llm = LocalLlamaIndexLLM(DEFAULT_MODEL, max_new_tokens=64, context_window=2048)  # nothing is loaded yet
    >>> llm.model_name == DEFAULT_MODEL
    True
    >>> docs = [Document(text="Aspirin thins the blood."), Document(text="Wind farms make power.")]
    >>> engine = RetrieverQueryEngine.from_args(RetrieveKitRetriever.from_documents(docs, method="bm25"), llm=llm)
    >>> engine.query("What thins the blood?").source_nodes[0].node.get_content()  # SmolLM2 answers  # doctest: +SKIP
    'Aspirin thins the blood.'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from pydantic import ConfigDict, Field, PrivateAttr

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.llm.protocol import ChatMessage as RKChatMessage
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.trace import Trace, recall, remember
from retrievekit.llama_index.named import NamedByClass

__all__ = ["LocalLlamaIndexLLM"]

DEFAULT_CONTEXT_WINDOW = 2048
"""Context window reported for a model whose config names no ``max_position_embeddings``."""

_ROLES = {
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
    MessageRole.TOOL: "tool",
    MessageRole.FUNCTION: "tool",
}


def _registry_names() -> list[str]:
    from retrievekit.core.llm.models import MODEL_REGISTRY

    return sorted(MODEL_REGISTRY)


class LocalLlamaIndexLLM(NamedByClass, CustomLLM):
    """LlamaIndex chat LLM over a local :class:`~retrievekit.core.llm.local.LocalLM` (offline, CPU or GPU).

    Args:
        llm: a registry model name (:data:`~retrievekit.core.llm.models.DEFAULT_MODEL`, the default, or
            ``"qwen0.5b"``), loaded lazily (:func:`~retrievekit.core.llm.resolve.resolve_llm`) on the first call (shared with every other retrievekit component of the process
            that loads it), or a ready ``LocalLM`` (e.g. ``LocalLM(model, tokenizer)`` around any HF causal LM).
        max_new_tokens: generation cap per call (a call's ``max_new_tokens=`` / ``max_tokens=`` keyword overrides it).
        temperature: 0 (default) decodes greedily; above 0 samples.
        context_window: what ``metadata`` reports to LlamaIndex's prompt packing; default: the model's
            ``max_position_embeddings`` (which loads a lazily named model), else 2048.

    ``chat`` renders the messages with the tokenizer's chat template; ``complete`` sends the prompt as one user turn
    through the same template (the models are instruct models; ``formatted`` is accepted and changes nothing).
    ``stream_complete`` / ``stream_chat`` yield the whole reply once. Token counts are in each response's
    ``additional_kwargs`` (``prompt_tokens``, ``completion_tokens``) and ``last_trace``.

    Raises:
        InvalidInputError: an unknown registry name, an ``llm`` without ``complete``, or ``max_new_tokens < 1``.

    Examples:
        >>> LocalLlamaIndexLLM(DEFAULT_MODEL, context_window=2048).metadata.is_chat_model  # loads nothing
        True
        >>> LocalLlamaIndexLLM("gpt-9")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown local model 'gpt-9'; known: qwen0.5b, qwen1.5b, smollm2 (or pass a LocalLM)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())

    model_name: str = Field(default=DEFAULT_MODEL, description="registry name of the model, or the LocalLM's name")
    max_new_tokens: int = Field(default=256, description="generation cap per call")
    temperature: float = Field(default=0.0, description="0: greedy; above 0: sampling")
    context_window: int | None = Field(default=None, description="None: the model's max_position_embeddings")

    _lm: Any = PrivateAttr(default=None)
    _usage_trace: Trace = PrivateAttr(default_factory=Trace)

    def __init__(
        self,
        llm: Any = None,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        context_window: int | None = None,
        **data: Any,
    ) -> None:
        if llm is None:
            llm = data.pop("model_name", DEFAULT_MODEL)
        if isinstance(llm, str):
            if llm not in _registry_names():
                raise InvalidInputError(
                    f"unknown local model {llm!r}; known: {', '.join(_registry_names())} (or pass a LocalLM)"
                )
            name, instance = llm, None
        else:
            if not callable(getattr(llm, "complete", None)):
                raise InvalidInputError(f"llm must be a registry name or a LocalLM, got {type(llm).__name__}")
            name, instance = str(getattr(llm, "name", type(llm).__name__)), llm
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise InvalidInputError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        super().__init__(
            model_name=name,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            context_window=context_window,
            **data,
        )
        self._lm = instance

    @property
    def lm(self) -> Any:
        """The wrapped ``LocalLM`` (loaded on first access when a registry name was given)."""
        if self._lm is None:
            self._lm = resolve_llm(self.model_name)
        return self._lm

    @property
    def last_trace(self) -> Trace | None:
        """Trace of the last call made from the current thread or asyncio task (one LLM call, its prompt and
        completion tokens): concurrent callers each read their own.

        Examples:
            >>> LocalLlamaIndexLLM(DEFAULT_MODEL).last_trace is None
            True
        """
        return recall(self)

    @property
    def usage(self) -> Trace:
        """Every call since this object was made (or since :meth:`reset_usage`): LLM calls and tokens.

        Lets a caller account for what a LlamaIndex component (a ``TreeIndex``, a query engine) spent.

        Examples:
            >>> LocalLlamaIndexLLM(DEFAULT_MODEL).usage.llm_calls
            0
        """
        return self._usage_trace

    def reset_usage(self) -> None:
        """Start counting :attr:`usage` afresh.

        Examples:
            >>> llm = LocalLlamaIndexLLM(DEFAULT_MODEL); llm.reset_usage(); llm.usage.prompt_tokens
            0
        """
        self._usage_trace = Trace()

    @property
    def metadata(self) -> LLMMetadata:
        """Context window, output cap, ``is_chat_model=True`` and the model name.

        Examples:
            >>> LocalLlamaIndexLLM(DEFAULT_MODEL, context_window=4096).metadata.context_window
            4096
        """
        window = self.context_window
        if window is None:
            positions = getattr(
                getattr(getattr(self.lm, "model", None), "config", None), "max_position_embeddings", None
            )
            window = int(positions) if isinstance(positions, int) and positions > 0 else DEFAULT_CONTEXT_WINDOW
        return LLMMetadata(
            context_window=window,
            num_output=self.max_new_tokens,
            is_chat_model=True,
            is_function_calling_model=False,
            model_name=self.model_name,
        )

    # ------------------------------------------------------------------ generation
    def _generate(self, prompt: str | Sequence[RKChatMessage], kwargs: dict[str, Any]) -> Completion:
        max_tokens = kwargs.get("max_new_tokens", kwargs.get("max_tokens", self.max_new_tokens))
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(f"max_new_tokens must be a positive integer, got {max_tokens!r}")
        temperature = float(kwargs.get("temperature", self.temperature))
        trace = Trace()
        out: Completion = self.lm.complete(prompt, max_tokens=max_tokens, temperature=temperature, trace=trace)
        remember(self, trace)
        self._usage_trace.merge(trace)
        return out

    @staticmethod
    def _usage(out: Completion) -> dict[str, Any]:
        return {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens}

    @staticmethod
    def to_messages(messages: Sequence[ChatMessage]) -> list[RKChatMessage]:
        """LlamaIndex chat messages as retrievekit ones (developer -> system; chatbot/model -> assistant; function ->
        tool).

        Examples:
            >>> LocalLlamaIndexLLM.to_messages([ChatMessage(role="developer", content="Be brief.")])
            [ChatMessage(role='system', content='Be brief.')]
        """
        out = [RKChatMessage(_ROLES.get(MessageRole(m.role), "user"), m.content or "") for m in messages]
        if not out:
            raise InvalidInputError("chat() got no messages")
        return out

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Reply to ``prompt`` (one user turn, rendered with the chat template).

        Examples:
            >>> from retrievekit.core.llm.base import ChatLLMBase
            >>> from retrievekit.core.llm.protocol import Completion
            >>> class Hi(ChatLLMBase):  # a stand-in for LocalLM.load(DEFAULT_MODEL)
            ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
            ...         return Completion("Hi there!", prompt_tokens=4, completion_tokens=3)
            >>> r = LocalLlamaIndexLLM(Hi(), max_new_tokens=8).complete("Say hi.")
            >>> r.text, r.additional_kwargs
            ('Hi there!', {'prompt_tokens': 4, 'completion_tokens': 3})
        """
        out = self._generate(prompt, kwargs)
        return CompletionResponse(text=out.text, additional_kwargs=self._usage(out))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """Stream the reply to ``prompt``: the whole completion, once."""
        out = self._generate(prompt, kwargs)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=out.text, delta=out.text, additional_kwargs=self._usage(out))

        return gen()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Reply to a conversation rendered with the tokenizer's chat template.

        Examples:
            >>> from retrievekit.core.llm.base import ChatLLMBase
            >>> from retrievekit.core.llm.protocol import Completion
            >>> class Echo(ChatLLMBase):  # a stand-in for LocalLM.load(DEFAULT_MODEL): repeats the last message
            ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
            ...         return Completion(prompt[-1].content)
            >>> msgs = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Say hi.")]
            >>> LocalLlamaIndexLLM(Echo()).chat(msgs).message.content
            'Say hi.'
        """
        out = self._generate(self.to_messages(messages), kwargs)
        return ChatResponse(
            message=ChatMessage(role=MessageRole.ASSISTANT, content=out.text), additional_kwargs=self._usage(out)
        )

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        """Stream the reply to a conversation: the whole reply, once."""
        out = self._generate(self.to_messages(messages), kwargs)

        def gen() -> ChatResponseGen:
            yield ChatResponse(
                message=ChatMessage(role=MessageRole.ASSISTANT, content=out.text),
                delta=out.text,
                additional_kwargs=self._usage(out),
            )

        return gen()
