"""A model call as a value: what a stage asks of a model, written down before anything is sent.

A stage that talks to a model (LATTICE's slates, a judge's batch, an embedding of the query) is written once, free
of I/O, as a *step*: a generator that ``yield`` s a batch of :class:`ModelCall` values and receives, in the same
order, one reply per call -- a :class:`~retrievekit.core.llm.protocol.Completion` (a chat call), a
:class:`~retrievekit.core.llm.protocol.JsonResult` (a call with a ``schema``), a list of floats (a judge call, an
embedding) -- or, for a call that failed in a way the stage can recover from
(:class:`~retrievekit.core.errors.LLMOutputError`, ``ValueError``), that exception as a value. The step returns its
result. The drivers (:mod:`retrievekit.core.llm.drivers`) send the calls: one sync, one async, so limits, defusing,
deadlines, retries, structured output, concurrency and cancellation are applied in one place for every stage.

Examples:
    >>> call = ModelCall.chat("lattice.slate", "Score these.", max_tokens=8)
    >>> call.kind, call.messages[0].role, call.max_tokens
    ('chat', 'user', 8)
    >>> def step():
    ...     replies = yield [call]
    ...     return replies[0].text.upper()
    >>> from retrievekit.core.llm.drivers import drive
    >>> from retrievekit.core.fakes import FixedReplyLLM
    >>> drive(step(), FixedReplyLLM("ok"))
    'OK'
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.protocol import ChatMessage, JsonSchemaLike, Prompt, as_messages

__all__ = ["CallKind", "ModelCall", "Step", "token_limit"]

CallKind = Literal["chat", "json", "judge", "embed"]
"""What a call asks for: a reply (``chat``), a reply valid against a schema (``json``), relevance probabilities of
candidates (``judge``: a :class:`~retrievekit.core.llm.protocol.RelevanceJudge`), vectors of texts (``embed``)."""

R = TypeVar("R")

Step: TypeAlias = Generator[list["ModelCall"], list[Any], R]
"""A stage written as values: yields batches of :class:`ModelCall`, receives their replies in order, returns."""


def token_limit(max_tokens: object) -> int:
    """A call's reply limit as an int: ``InvalidInputError`` for anything but a whole number >= 1 (a bool included),
    before any request.

    Examples:
        >>> token_limit(8)
        8
        >>> token_limit(0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: max_tokens must be >= 1, got 0
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, float, str)):
        raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens!r}")
    try:
        limit = int(max_tokens)
    except ValueError:
        limit = 0
    if limit < 1 or limit != float(max_tokens):
        raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens!r}")
    return limit


@dataclass(frozen=True)
class ModelCall:
    """One request of a stage to its model, as a value (module docstring).

    Attributes:
        purpose: what the call is for (``"lattice.slate"``, ``"lattice.fallback"``...), named in traces and errors.
        kind: :data:`CallKind`.
        messages: the conversation (chat and JSON calls).
        schema: the reply's JSON schema (JSON calls).
        max_tokens: the reply's token limit (always sent).
        temperature: sampling temperature.
        retries: JSON retries after an invalid reply.
        query: the query (judge calls).
        texts: the candidates (judge calls) or the texts to embed (embedding calls); untrusted text.
        refs: per candidate, the ids of the objects it stands for (judge calls).

    Examples:
        >>> ModelCall.judge("q", ["a", "b"], refs=[("d1",), ("d2",)]).kind
        'judge'
        >>> ModelCall.embed(["query"]).texts
        ('query',)
    """

    purpose: str
    kind: CallKind = "chat"
    messages: tuple[ChatMessage, ...] = ()
    schema: JsonSchemaLike | None = None
    max_tokens: int = 256
    temperature: float = 0.0
    retries: int = 2
    query: str = ""
    texts: tuple[str, ...] = ()
    refs: tuple[Collection[str], ...] | None = None

    @classmethod
    def chat(cls, purpose: str, prompt: Prompt, *, max_tokens: int = 256, temperature: float = 0.0) -> ModelCall:
        """A chat call: ``prompt`` (a string is one user turn) in, a ``Completion`` out.

        Examples:
            >>> ModelCall.chat("summary", "Summarise.").messages[0].content
            'Summarise.'
        """
        return cls(
            purpose, "chat", tuple(as_messages(prompt)), max_tokens=token_limit(max_tokens), temperature=temperature
        )

    @classmethod
    def json(
        cls, purpose: str, prompt: Prompt, schema: JsonSchemaLike, *, max_tokens: int = 256, retries: int = 2
    ) -> ModelCall:
        """A JSON call: a reply valid against ``schema`` (a ``JsonResult``), repaired and retried by the driver.

        Examples:
            >>> ModelCall.json("slate", "Score.", {"type": "object"}).kind
            'json'
        """
        return cls(
            purpose, "json", tuple(as_messages(prompt)), schema, max_tokens=token_limit(max_tokens), retries=retries
        )

    @classmethod
    def judge(
        cls, query: str, candidates: Sequence[str], *, refs: Sequence[Collection[str]] | None = None
    ) -> ModelCall:
        """A relevance-judge call: ``P(relevant)`` of each candidate for ``query`` (a list of floats).

        Examples:
            >>> ModelCall.judge("q", ["a"]).texts
            ('a',)
        """
        return cls("judge", "judge", query=query, texts=tuple(candidates), refs=tuple(refs) if refs else None)

    @classmethod
    def embed(cls, texts: Sequence[str], *, purpose: str = "embed") -> ModelCall:
        """An embedding call: one vector per text (a 2-D array); a ``purpose`` ending in ``.query`` marks one query,
        embedded as a query (``embed_query``).

        Examples:
            >>> ModelCall.embed(["a", "b"]).kind
            'embed'
        """
        return cls(purpose, "embed", texts=tuple(texts))
