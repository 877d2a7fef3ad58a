"""LlamaIndex edge: the LLM a user set in ``llama_index.core.Settings``, read without side effects.

``Settings.llm`` resolves a default when none was set: it imports ``llama_index.llms.openai`` and asks for an API
key (raising ``ImportError`` or ``ValueError``), or prints that the LLM is disabled. retrievekit never triggers that:
:func:`user_settings_llm` reads what the user assigned (``Settings.llm = OpenAILike(...)``), and nothing touches
``Settings`` at import. A LlamaIndex component built without ``llm=`` uses that LLM (:func:`or_settings_llm`); when the user set none,
the method's embedded default model.

Examples:
    >>> from llama_index.core import Settings
    >>> from llama_index.core.llms import MockLLM
    >>> user_settings_llm() is None  # nothing set
    True
    >>> Settings.llm = MockLLM()
    >>> type(user_settings_llm()).__name__
    'MockLLM'
    >>> Settings._llm = None  # back to "not set" (this example only)
"""

from __future__ import annotations

from typing import Any

__all__ = ["or_settings_llm", "user_settings_llm"]


def user_settings_llm() -> Any | None:
    """The LLM assigned to ``llama_index.core.Settings.llm``, or None when nothing was (LlamaIndex's lazy default
    is never resolved here).

    Examples:
        >>> user_settings_llm() is None
        True
    """
    from llama_index.core import Settings

    return getattr(Settings, "_llm", None)


def or_settings_llm(llm: Any) -> Any:
    """``llm`` as the user passed it, or, when that is None, the LLM they set in ``Settings.llm`` (None when neither):
    what every LlamaIndex component built without ``llm=`` hands to :func:`~retrievekit.core.llm.resolve.resolve_llm`.

    Examples:
        >>> or_settings_llm("my-model") == "my-model", or_settings_llm(None) is None
        (True, True)
    """
    return user_settings_llm() if llm is None else llm
