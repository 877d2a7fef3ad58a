"""The two model protocols every method is written against.

* :class:`ChatLLM` -- prompt in, text or schema-validated JSON out (any API or local chat model).
* :class:`ScoringLM` -- a local causal LM with logits: constrained beam search under a stateless
  allowed-next-tokens function, log-likelihood of a fixed continuation, next-token scores.
* :class:`RelevanceJudge` -- the scoring use of a chat model, served directly: query and candidate texts in,
  calibrated relevance probabilities out (a fine-tuned judge). Methods that judge relevance with a prompt
  use it instead of the prompt when the ``llm=`` they were given implements it.

Both are :func:`typing.runtime_checkable` protocols, so ``isinstance(obj, ChatLLM)`` checks the
methods are present. The small frozen dataclasses here are the values they exchange.

Examples:
    >>> msgs = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")]
    >>> msgs[1].role, msgs[1].content
    ('user', 'Hi')
    >>> Completion(text="Hello", prompt_tokens=5, completion_tokens=1).text
    'Hello'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from pydantic import BaseModel

    from retrievekit.core.trace import Trace

__all__ = [
    "AllowedTokensFn",
    "Beam",
    "ChatLLM",
    "ChatMessage",
    "Completion",
    "JsonResult",
    "JsonSchemaLike",
    "Prompt",
    "RelevanceJudge",
    "ScoringLM",
    "TokenPrompt",
    "as_messages",
]

_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn.

    ``role`` is one of ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``.

    Examples:
        >>> ChatMessage("user", "What is BM25?").role
        'user'
        >>> ChatMessage("robot", "x")
        Traceback (most recent call last):
        ...
        ValueError: unknown chat role 'robot'; expected one of ('system', 'user', 'assistant', 'tool')
    """

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"unknown chat role {self.role!r}; expected one of {_ROLES}")
        if not isinstance(self.content, str):
            raise TypeError(f"chat message content must be str, got {type(self.content).__name__}")


Prompt: TypeAlias = "str | Sequence[ChatMessage]"
"""A chat prompt: a plain string (one user turn) or a sequence of :class:`ChatMessage`."""

TokenPrompt: TypeAlias = "str | Sequence[int]"
"""A scoring prompt: raw text (encoded without special tokens) or token ids."""

JsonSchemaLike: TypeAlias = "type[BaseModel] | dict[str, Any]"
"""A pydantic model class or a JSON-schema dict."""

AllowedTokensFn: TypeAlias = Callable[[Sequence[int]], Sequence[int]]
"""``allowed(generated_so_far) -> allowed next token ids``; must be stateless (beam-safe)."""


def as_messages(prompt: str | Sequence[ChatMessage]) -> list[ChatMessage]:
    """Normalise a :data:`Prompt` to a list of messages (a string becomes one user turn).

    Examples:
        >>> as_messages("Hi")
        [ChatMessage(role='user', content='Hi')]
    """
    if isinstance(prompt, str):
        return [ChatMessage("user", prompt)]
    msgs = list(prompt)
    for m in msgs:
        if not isinstance(m, ChatMessage):
            raise TypeError(
                f"prompt must be a str or a sequence of ChatMessage, got an item of type {type(m).__name__}"
            )
    if not msgs:
        raise ValueError("prompt has no messages")
    return msgs


@dataclass(frozen=True)
class Completion:
    """A chat completion and its token counts.

    ``finish_reason`` is the server's (``"stop"``, ``"length"`` when ``max_tokens`` cut the reply; None when not
    reported) and ``usage_estimated`` is True when the token counts are estimates (``len(text) // 4``) because the
    provider reported none.

    Examples:
        >>> c = Completion("yes", prompt_tokens=10, completion_tokens=1)
        >>> c.prompt_tokens + c.completion_tokens, c.finish_reason
        (11, None)
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    usage_estimated: bool = False


@dataclass(frozen=True)
class JsonResult:
    """A schema-validated JSON reply.

    Attributes:
        value: the validated value (a pydantic model instance for a model schema, plain JSON data for a dict schema).
        raw: the model's raw text of the successful attempt.
        repaired: whether the raw text needed repair (fences, trailing commas, quotes...) before it parsed.
        attempts: how many LLM calls it took (1 = first try).

    Examples:
        >>> JsonResult(value={"a": 1}, raw='{"a": 1,}', repaired=True, attempts=1).repaired
        True
    """

    value: Any
    raw: str
    repaired: bool = False
    attempts: int = 1


@dataclass(frozen=True)
class Beam:
    """One hypothesis of a constrained beam search.

    Attributes:
        token_ids: generated tokens, without the prompt and without the final EOS.
        text: ``decode(token_ids)``.
        score: length-normalised log-probability ``logprob / n ** length_penalty`` (higher is better),
            where ``n`` counts the scored tokens (``token_ids`` plus EOS when ``finished``).
        logprob: the un-normalised sum of token log-probabilities (EOS included when ``finished``).
        finished: True when the hypothesis ended with EOS (a complete sequence), False when it ran out of
            ``max_new_tokens``.
        token_logprobs: per-token log-probabilities of the scored tokens.

    Examples:
        >>> b = Beam(token_ids=(5, 7), text="ab", score=-1.5, logprob=-4.5, finished=True)
        >>> b.text, b.finished
        ('ab', True)
    """

    token_ids: tuple[int, ...]
    text: str
    score: float
    logprob: float = 0.0
    finished: bool = True
    token_logprobs: tuple[float, ...] = field(default=(), repr=False)


@runtime_checkable
class ChatLLM(Protocol):
    """Prompt in, text or schema-validated JSON out.

    Implemented by :class:`~retrievekit.core.llm.local.LocalLM` and by the LlamaIndex / LangChain adapters
    (``retrievekit.llama_index.LlamaIndexChatLLM``, ``retrievekit.langchain.LangChainChatLLM``).
    Implementations record every call (and every JSON repair/retry) in ``trace`` when one is given.

    Examples:
        >>> from retrievekit.core.llm.base import ChatLLMBase
        >>> class Echo(ChatLLMBase):
        ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        ...         return Completion('{"ok": true}', 1, 1)
        >>> isinstance(Echo(), ChatLLM)
        True
        >>> Echo().complete_json("Say ok", {"type": "object"}).value
        {'ok': True}
    """

    def complete(
        self,
        prompt: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        trace: Trace | None = None,
    ) -> Completion:
        """Return the model's reply to ``prompt``."""
        ...

    def complete_json(
        self,
        prompt: str | Sequence[ChatMessage],
        schema: type[BaseModel] | dict[str, Any],
        *,
        max_tokens: int = 256,
        trace: Trace | None = None,
        retries: int = 2,
    ) -> JsonResult:
        """Return a reply validated against ``schema``; raise ``LLMOutputError`` when that is impossible."""
        ...


@runtime_checkable
class ScoringLM(Protocol):
    """A local causal LM with logits.

    Token-id prompts are used as given; text prompts are encoded with :meth:`encode` (no special tokens added, none
    read from the text; apply a chat template yourself when you want one).

    Examples:
        >>> from retrievekit.core.index.token_trie import TokenTrie
        >>> def search(lm: ScoringLM, titles: list[str]) -> list[str]:
        ...     trie = TokenTrie.from_texts(titles, lm.encode, lm.eos_token_id)
        ...     return [b.text for b in lm.constrained_beam_search("Title:", trie.allowed, num_beams=3)]
    """

    @property
    def eos_token_id(self) -> int:
        """Id of the end-of-sequence token."""
        ...

    @property
    def vocab_size(self) -> int:
        """Size of the logits vector."""
        ...

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``: no special token added, and none read from the text (a query or document holding
        ``<|im_end|>`` must not yield its id: ``LocalLM`` breaks control strings first,
        :func:`~retrievekit.core.llm.untrusted.defuse_control_tokens`)."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (special tokens skipped)."""
        ...

    def constrained_beam_search(
        self,
        prompt: str | Sequence[int],
        allowed_tokens: Callable[[Sequence[int]], Sequence[int]],
        *,
        num_beams: int = 5,
        num_return_sequences: int | None = None,
        max_new_tokens: int = 32,
        length_penalty: float = 1.0,
        trace: Trace | None = None,
    ) -> list[Beam]:
        """Beam search where step ``t`` may only emit ``allowed_tokens(generated[:t])``; best first."""
        ...

    def sequence_logprob(
        self, prompt: str | Sequence[int], continuation: str | Sequence[int], *, trace: Trace | None = None
    ) -> float:
        """Sum of the log-probabilities of ``continuation``'s tokens after ``prompt``."""
        ...

    def token_logprobs(
        self, prompt: str | Sequence[int], continuation: str | Sequence[int], *, trace: Trace | None = None
    ) -> list[float]:
        """Per-token log-probabilities of ``continuation`` after ``prompt``."""
        ...

    def next_token_logprobs(self, prompt: str | Sequence[int], *, trace: Trace | None = None) -> np.ndarray:
        """Log-softmax over the vocabulary for the token following ``prompt`` (shape ``(vocab_size,)``)."""
        ...


@runtime_checkable
class RelevanceJudge(Protocol):
    """Query and candidates in, calibrated relevance probabilities out (batched, one number per candidate).

    A judge is usually also a :class:`ChatLLM` (it delegates free-text tasks such as summaries to its base
    model). LATTICE slate scoring, ARM verification, One-SHOT cropping and the iterative agent's relevance
    checks call :meth:`score_relevance` instead of prompting when their ``llm=`` implements this protocol.

    Examples:
        >>> class Overlap:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         q = set(query.lower().split())
        ...         return [len(q & set(c.lower().split())) / max(len(q), 1) for c in candidates]
        >>> isinstance(Overlap(), RelevanceJudge)
        True
        >>> Overlap().score_relevance("aspirin pain", ["Aspirin relieves pain.", "Rome"])
        [0.5, 0.0]
    """

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """P(relevant) in [0, 1] for each candidate text, in input order; deterministic for fixed weights."""
        ...
