"""What ARM's LLM stages fall back on, and the model as the drivers see it for ARM's steps.

ARM's keyword decomposition and its draft verification fall back (and say so) on any failure of the model's reply or
of the model itself (:func:`falls_back`: a reply that stays invalid, a missing dependency of an in-process model, a
store behind it that did not answer...), except a served model that cannot be reached in time
(:class:`~retrievekit.core.errors.LLMUnavailableError`), which the caller hears of. The drivers
(:mod:`retrievekit.core.llm.drivers`) hand a step only the failures every stage recovers from (``LLMOutputError``,
``ValueError``) and raise the rest; :func:`recovering` is the same model whose other failures ARM falls back on come
back to ARM's steps as values too, wrapped in :class:`ModelFailure` (:func:`failure_of` unwraps them).

Examples:
    >>> from retrievekit.core.errors import StoreUnavailableError
    >>> from retrievekit.core.llm.calls import ModelCall
    >>> from retrievekit.core.llm.drivers import send_call
    >>> class StoreBehind:
    ...     def complete_json(self, prompt, schema, **kwargs):
    ...         raise StoreUnavailableError("the cache store did not answer")
    >>> reply = send_call(ModelCall.json("arm.keywords", "Q?", {"type": "object"}), recovering(StoreBehind()))
    >>> type(failure_of(reply)).__name__
    'StoreUnavailableError'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from retrievekit.core.errors import LLMUnavailableError, RetrieveKitError
from retrievekit.core.llm.bridge import run_in_pool
from retrievekit.core.llm.concurrency import llm_concurrency
from retrievekit.core.llm.protocol import RelevanceJudge

__all__ = ["ModelFailure", "RecoveringModel", "failure_of", "falls_back", "recovering"]

T = TypeVar("T")
_WIDEST = 1 << 16


class ModelFailure(ValueError):
    """A failure ARM falls back on that the drivers would raise, handed to the step as a value (``error``).

    Examples:
        >>> ModelFailure(KeyError("x")).error
        KeyError('x')
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def falls_back(error: BaseException) -> bool:
    """Whether ARM falls back on ``error`` from its model: any retrievekit error or ``ValueError`` but an
    unreachable or slow served model (``LLMUnavailableError``, the caller hears of it).

    Examples:
        >>> from retrievekit.core.errors import LLMOutputError, LLMTimeoutError
        >>> falls_back(LLMOutputError("bad")), falls_back(LLMTimeoutError("slow")), falls_back(KeyError("x"))
        (True, False, False)
    """
    return isinstance(error, (RetrieveKitError, ValueError)) and not isinstance(error, LLMUnavailableError)


def failure_of(reply: Any) -> BaseException | None:
    """The failure a step received in a reply's slot (unwrapped from :class:`ModelFailure`), or None for a reply.

    Examples:
        >>> failure_of(ModelFailure(OSError("gone"))), failure_of("a reply")
        (OSError('gone'), None)
    """
    if isinstance(reply, ModelFailure):
        return reply.error
    return reply if isinstance(reply, BaseException) else None


def _guarded(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        if falls_back(e):
            raise ModelFailure(e) from e
        raise


class RecoveringModel:
    """``llm`` as ARM's steps are driven through (module docstring): the same calls, the same budget of calls at
    once (``max_concurrency``, ``thread_safe``: what :func:`~retrievekit.core.llm.concurrency.llm_concurrency` gives
    the model itself), the async API awaited where the model has one, else its sync one on the bridge's pool.

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> RecoveringModel(FixedReplyLLM("ok")).complete("hi").text
        'ok'
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    @property
    def max_concurrency(self) -> int:
        """The model's own cap on calls at once (1 for a local or thread-unsafe model)."""
        return llm_concurrency(self.llm, _WIDEST)

    @property
    def thread_safe(self) -> bool:
        """False when the model takes one call at a time."""
        return self.max_concurrency > 1

    def complete(self, prompt: Any, **kwargs: Any) -> Any:
        """The model's ``complete``; a failure ARM falls back on raised as :class:`ModelFailure`."""
        return _guarded(self.llm.complete, prompt, **kwargs)

    def complete_json(self, prompt: Any, schema: Any, **kwargs: Any) -> Any:
        """The model's ``complete_json``; a failure ARM falls back on raised as :class:`ModelFailure`."""
        return _guarded(self.llm.complete_json, prompt, schema, **kwargs)

    async def acomplete(self, prompt: Any, **kwargs: Any) -> Any:
        """The model's ``acomplete`` when it has an async API, else ``complete`` on the bridge's pool."""
        if not hasattr(self.llm, "acomplete_json"):
            return await run_in_pool(functools.partial(self.complete, prompt, **kwargs))
        try:
            return await self.llm.acomplete(prompt, **kwargs)
        except Exception as e:
            if falls_back(e):
                raise ModelFailure(e) from e
            raise

    async def acomplete_json(self, prompt: Any, schema: Any, **kwargs: Any) -> Any:
        """The model's ``acomplete_json`` when it has an async API, else ``complete_json`` on the bridge's pool."""
        if not hasattr(self.llm, "acomplete_json"):
            return await run_in_pool(functools.partial(self.complete_json, prompt, schema, **kwargs))
        try:
            return await self.llm.acomplete_json(prompt, schema, **kwargs)
        except Exception as e:
            if falls_back(e):
                raise ModelFailure(e) from e
            raise

    def __getattr__(self, name: str) -> Any:
        if name == "llm":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.llm, name)

    def __repr__(self) -> str:
        return f"RecoveringModel({self.llm!r})"


class _RecoveringJudge(RecoveringModel):
    """A :class:`RecoveringModel` of a relevance judge (it is one too)."""

    def score_relevance(self, query: str, candidates: Sequence[str], **kwargs: Any) -> Any:
        return _guarded(self.llm.score_relevance, query, candidates, **kwargs)


def recovering(llm: Any) -> RecoveringModel:
    """``llm`` as ARM's steps are driven through (:class:`RecoveringModel`; a judge stays a judge).

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> isinstance(recovering(WordJudge("aspirin")), RelevanceJudge)
        True
    """
    if isinstance(llm, RecoveringModel):
        return llm
    return _RecoveringJudge(llm) if isinstance(llm, RelevanceJudge) else RecoveringModel(llm)
