"""A reply cut at its limit while running on (repeating one unit, or counting up) is told from one that was not."""

from __future__ import annotations

import pytest

from retrievekit.core.llm.base import LENGTH_GROWTH_CAP, grown_limit
from retrievekit.core.llm.repetition import MIN_REPEATS, repeats_itself

RUNNING_ON = [
    '{"keep": [' + "0, " * 40,  # a payload's zeros copied
    '{"keep": [' + ", ".join(str(i) for i in range(1, 30)) + ", 3",  # counting past the last id, cut mid-number
    '{"keywords": [' + '"Olympic Games", ' * 9,  # one phrase over and over
    '{"answer": "' + "\n" * 30,  # blank lines
    "[" + ", ".join(str(i) for i in range(-3, MIN_REPEATS)) + ",",  # counting through zero, cut after a comma
]
NOT_RUNNING_ON = [
    '{"keep": [0, 1, 2, 3, 4, 5',  # counting, but fewer than MIN_REPEATS whole numbers
    '{"scores": [3, 7, 1, 0, 5, 2, 8, 9, 4, 6, 3, 1, 0, 7',  # slate scores
    '{"years": [1936, 1948, 1952, 1956, 1960, 1964, 1968, 1972',  # a real list of numbers
    '{"keywords": ["Olympic", "Olympics", "Olympic Games", "Summer Olympics", "Berlin 1936", "Jesse Owens", "athl',
    '{"keep": [' + "0, " * (MIN_REPEATS - 2),  # too few repeats to tell
    "",
]


@pytest.mark.parametrize("text", RUNNING_ON)
def test_running_on_is_seen(text: str) -> None:
    assert repeats_itself(text)
    assert grown_limit(64, 64, text) == 64  # asked again at the same limit


@pytest.mark.parametrize("text", NOT_RUNNING_ON)
def test_a_reply_that_was_not_running_on_gets_more_room(text: str) -> None:
    assert not repeats_itself(text)
    assert grown_limit(64, 64, text) == 128 and grown_limit(256, 64, text) == 64 * LENGTH_GROWTH_CAP


def test_a_unit_longer_than_the_longest_looked_for_is_not_a_repeat() -> None:
    unit = "x" * 33 + ", "
    assert not repeats_itself(unit * 20) and repeats_itself(unit * 20, max_unit=40)
