"""Whether a reply cut off at its token limit was running on: repeating itself, or counting.

A small model that copies a pattern from its prompt (``"0, 0, 0, ..."``, the same phrase over and over, blank lines)
or counts (``[1, 2, 3, ...`` past the last id it was shown) goes on until the limit; asked again with a larger limit,
it goes on for longer. The JSON paths (:func:`~retrievekit.core.llm.base.grown_limit`) ask such a reply again
without growing the limit.

Examples:
    >>> repeats_itself('{"keep": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0')
    True
    >>> repeats_itself('{"keep": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 2')
    True
    >>> repeats_itself('{"keywords": ["Olympic", "Olympics", "Olympic Games", "Summer Olympics", "1936"')
    False
"""

from __future__ import annotations

import re

__all__ = ["MAX_UNIT_CHARS", "MIN_REPEATS", "repeats_itself"]

MAX_UNIT_CHARS = 32
"""The longest repeated unit looked for, in characters (a short phrase with its separator)."""

MIN_REPEATS = 8
"""How many times in a row, up to the end of the reply, the unit (or the counting step) must occur."""

_LIST_TAIL = re.compile(r"(?:-?\d+\s*,\s*)+-?\d*$")
"""The comma-separated integers a reply ends with (the last one perhaps cut mid-number)."""


def repeats_itself(text: str, *, max_unit: int = MAX_UNIT_CHARS, min_repeats: int = MIN_REPEATS) -> bool:
    """True when ``text`` ends in one unit of at most ``max_unit`` characters repeated ``min_repeats`` times or more,
    or in a list of ``min_repeats`` or more integers counting up by one.

    A run of blank lines repeats one unit. A list of different numbers (scores, years) is not counting and does not
    repeat.

    Examples:
        >>> repeats_itself('["a b", "a b", "a b", "a b", "a b", "a b", "a b", "a b", "a b"')
        True
        >>> repeats_itself('{"scores": [3, 7, 1, 0, 5, 2, 8, 9, 4, 6, 3, 1')
        False
        >>> repeats_itself("[1, 2, 3, 4, 5, 6, 7"), repeats_itself("\\n" * 20), repeats_itself("")
        (False, True, False)
    """
    for unit in range(1, max_unit + 1):
        span = unit * min_repeats
        if len(text) < span:
            break
        tail = text[-span:]
        if tail == tail[:unit] * min_repeats:
            return True
    return _counts_up(text.rstrip(), min_repeats)


def _counts_up(text: str, min_run: int) -> bool:
    """Whether ``text`` ends in a list of at least ``min_run`` whole integers, each one more than the one before."""
    found = _LIST_TAIL.search(text)
    if found is None:
        return False
    parts = [p.strip() for p in found.group(0).split(",")]
    numbers = [int(p) for p in parts[:-1]]  # the last one may be cut mid-number (or be empty)
    run = 1
    for before, after in zip(reversed(numbers[:-1]), reversed(numbers[1:]), strict=True):
        if after - before != 1:
            break
        run += 1
    return run >= min_run
