"""Character spans of the pieces of a text between boundary matches, whitespace-trimmed, empty pieces skipped.

Sentence splitters (One-SHOT cropping, Self-Retrieval passages) differ only in their boundary regex; the span
arithmetic, which keeps every piece an exact substring of the text, lives here once.

Examples:
    >>> import re
    >>> t = "One two.  Three!"
    >>> [t[a:b] for a, b in trimmed_spans(t, re.compile(r"(?<=[.!?])\\s+"))]
    ['One two.', 'Three!']
"""

from __future__ import annotations

import re

__all__ = ["trimmed_spans"]


def trimmed_spans(text: str, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    """``(start, end)`` spans of the text between ``boundary`` matches, trimmed of whitespace; empty ones skipped.

    Examples:
        >>> import re
        >>> trimmed_spans("  a |  | b ", re.compile(r"\\|"))
        [(2, 3), (9, 10)]
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in boundary.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for a, b in spans:
        seg = text[a:b]
        lead = len(seg) - len(seg.lstrip())
        trail = len(seg.rstrip())
        if trail > lead:
            out.append((a + lead, a + trail))
    return out
