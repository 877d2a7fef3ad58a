"""Free text for judges that only score: :class:`ChatDelegate` hands ``complete``/``complete_json`` to a base model.

A method given a judge as ``llm=`` may still need free text from it (ARM decomposes keywords, a new LATTICE tree
needs summaries); the trained :class:`~retrievekit.core.judge.Judge` answers those with the untuned base model it was
trained from. A judge that is not a language model (the gold-label oracle, the embedding-cosine judge) gets the same
behaviour from this mixin: a ``base`` chat model, or a ``load_base`` callable run on the first free-text request
only (so a LATTICE run over a saved tree never loads one).

Examples:
    >>> from retrievekit.core.llm.protocol import Completion
    >>> class Echo:
    ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
    ...         return Completion("base: " + prompt)
    >>> class Scores(ChatDelegate):
    ...     def __init__(self, base=None, load_base=None):
    ...         self.base, self.load_base = base, load_base
    >>> Scores(base=Echo()).complete("hi").text
    'base: hi'
    >>> Scores().complete("hi")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: Scores scores relevance only and has no base model for free text (summaries, keywords): give it base= (on the command line: --llm smollm2)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion, JsonResult, JsonSchemaLike, Prompt
from retrievekit.core.trace import Trace

__all__ = ["ChatDelegate"]

_LOAD_LOCK = threading.Lock()


class ChatDelegate(ChatLLMBase):
    """Mixin: ``complete`` / ``complete_json`` go to ``self.base`` (loaded once by ``self.load_base()`` when None).

    The class using it sets ``base`` (a chat model or None) and ``load_base`` (a callable returning one, or None).

    Examples:
        >>> class J(ChatDelegate):
        ...     base, load_base = None, staticmethod(lambda: None)
        >>> J().chat_model() is None
        True
    """

    base: Any = None
    load_base: Callable[[], Any] | None = None

    def chat_model(self) -> Any:
        """The base chat model: ``base``, else the result of ``load_base()`` (called once), else None.

        Examples:
            >>> class J(ChatDelegate):
            ...     base, load_base = "model", None
            >>> J().chat_model()
            'model'
        """
        with _LOAD_LOCK:  # methods score slates from several threads; the base model loads once
            if self.base is None and self.load_base is not None:
                self.base = self.load_base()
                self.load_base = None
        return self.base

    def _base_or_raise(self) -> Any:
        model = self.chat_model()
        if model is None:
            raise InvalidInputError(
                f"{type(self).__name__} scores relevance only and has no base model for free text (summaries, "
                "keywords): give it base= (on the command line: --llm smollm2)"
            )
        return model

    def _reply(self, prompt: Prompt, max_tokens: int, temperature: float, trace: Trace | None) -> Completion:
        """Free text from the base model (see the module example)."""
        out: Completion = self._base_or_raise().complete(
            prompt, max_tokens=max_tokens, temperature=temperature, trace=trace
        )
        return out

    def _json(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> JsonResult:
        """Schema-constrained JSON from the base model (as :meth:`complete`)."""
        out: JsonResult = self._base_or_raise().complete_json(
            prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries
        )
        return out
