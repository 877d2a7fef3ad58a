"""How many calls to one LLM may run at once (LATTICE builds and searches run LLM calls on a bounded pool).

Examples:
    >>> class Api:
    ...     pass
    >>> llm_concurrency(Api(), 4)
    4
"""

from __future__ import annotations

__all__ = ["llm_concurrency"]


def llm_concurrency(llm: object, requested: int) -> int:
    """How many calls to ``llm`` may run at once: 1 for a local model (one shared model and cached, stateful
    Outlines generators) or any LLM with ``thread_safe = False``; else ``requested``.

    Examples:
        >>> class Api:
        ...     pass
        >>> llm_concurrency(Api(), 8)
        8
        >>> class Serial:
        ...     thread_safe = False
        >>> llm_concurrency(Serial(), 8)
        1
    """
    if getattr(llm, "thread_safe", True) is False:
        return 1
    from retrievekit.core.llm.local import LocalLM

    return 1 if isinstance(llm, LocalLM) else max(1, int(requested))
