"""LlamaIndex edge: a component's serialisation name is its class's own name, written once.

Examples:
    >>> from retrievekit.llama_index import JudgeReranker, OneShotPostprocessor
    >>> JudgeReranker.class_name(), OneShotPostprocessor.class_name()
    ('JudgeReranker', 'OneShotPostprocessor')
"""

from __future__ import annotations

__all__ = ["NamedByClass"]


class NamedByClass:
    """Mixin (listed before the LlamaIndex base) whose ``class_name()`` -- the name LlamaIndex serialises a component
    under -- is the class's ``__name__``, so a subclass is named for itself.

    Examples:
        >>> from retrievekit.llama_index import LocalLlamaIndexLLM
        >>> LocalLlamaIndexLLM.class_name()
        'LocalLlamaIndexLLM'
    """

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name: the class's own name."""
        return cls.__name__
