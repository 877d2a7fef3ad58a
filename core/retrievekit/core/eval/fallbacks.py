"""Fallback rates per method stage, as ``retrievekit bench`` reports them: the one mechanism lives in
:mod:`retrievekit.core.fallbacks` (the retrievers warn with it too); this module keeps its old import path.

Examples:
    >>> from retrievekit.core.eval.fallbacks import FALLBACK_WARN_RATE
    >>> FALLBACK_WARN_RATE
    0.05
"""

from __future__ import annotations

from retrievekit.core.fallbacks import FALLBACK_WARN_RATE, fallback_block, fallback_warnings, stage_counts

__all__ = ["FALLBACK_WARN_RATE", "fallback_block", "fallback_warnings", "stage_counts"]
