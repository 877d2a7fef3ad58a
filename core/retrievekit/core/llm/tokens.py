"""A rough token count for LLM APIs that report no usage.

Examples:
    >>> estimate_tokens("one two three four")
    4
"""

from __future__ import annotations

__all__ = ["estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """Rough token count (``len(text) // 4``, at least 1 for non-empty text) for APIs that report none.

    Examples:
        >>> estimate_tokens("one two three four"), estimate_tokens("")
        (4, 0)
    """
    if not text:
        return 0
    return max(1, len(text) // 4)
