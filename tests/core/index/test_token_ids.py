"""Token ids that are not integers in range are refused, the same way, wherever a sequence enters a trie or a suffix
array (NumPy would have made ``1.5`` into ``1`` and ``2**64 - 1`` into ``-1`` without a word)."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray
from retrievekit.core.index.suffix_array import ShardedTokenSuffixArray, TokenSuffixArray
from retrievekit.core.index.suffix_array_folder import write_suffix_array
from retrievekit.core.index.token_trie import TokenTrie

BAD = [
    ([1, 1.5], "must be integers, got float64"),
    ([2.0], "must be integers, got float64"),
    ([True, False], "must be integers, got bool"),
    ("abc", "must be integers, got str"),
    (["7"], "must be integers, got <U1"),
    ([1, None], "must be integers, got object"),
    ([[1, 2]], "one flat sequence"),
    ([[1], [2, 3]], "must be integers"),
    (np.asarray([2**64 - 1], dtype=np.uint64), "below 2\\*\\*31, got 18446744073709551615"),
    ([2**70], "below 2\\*\\*31, got 1180591620717411303424"),
    ([3, -1], ">= 0 and below"),
    ([2**31], "below 2\\*\\*31, got 2147483648"),
]


def _ways_in(tmp_path):
    """Every way a token sequence enters a structure, each with a check that nothing was kept."""
    live = LiveTokenSuffixArray({"a": [1, 2]})
    keyed = TokenTrie.keyed({"a": [1, 2]})
    plain = TokenTrie([[1, 2]])
    return [
        ("document 0", lambda bad: TokenSuffixArray([bad]), None),
        ("document 1", lambda bad: ShardedTokenSuffixArray([[1], bad]), None),
        (
            "document 1",
            lambda bad: write_suffix_array(tmp_path / "sa", iter([[1], bad])),
            lambda: not (tmp_path / "sa").exists(),
        ),
        ("add: id 'b'", lambda bad: live.add({"b": bad}), lambda: live.ids() == ["a"]),
        ("update: id 'a'", lambda bad: live.update({"a": bad}), lambda: live.document("a").tolist() == [1, 2]),
        ("a sequence", lambda bad: TokenTrie([bad]), None),
        ("add: id 'b'", lambda bad: keyed.add({"b": bad}), lambda: keyed.ids() == ["a"]),
        ("a sequence", lambda bad: plain.add(bad), lambda: sorted(plain) == [(1, 2)]),
    ]


@pytest.mark.parametrize(("bad", "message"), BAD, ids=[repr(b)[:30] for b, _ in BAD])
def test_bad_token_ids_are_refused_the_same_way_everywhere(tmp_path, bad, message):
    for where, enter, unchanged in _ways_in(tmp_path):
        with pytest.raises(InvalidInputError, match=message) as caught:
            enter(bad)
        assert str(caught.value).startswith(where), (where, caught.value)
        assert unchanged is None or unchanged(), where


def test_good_token_ids_in_every_form_are_the_same_sequence():
    forms = [[5, 6], (5, 6), range(5, 7), np.asarray([5, 6], dtype=np.uint8), np.asarray([5, 6], dtype=np.int32)]
    forms += [np.asarray([5, 6], dtype=object), [np.int64(5), 6]]
    for form in forms:
        assert TokenSuffixArray([form]).allowed([5]) == [6]
        assert sorted(TokenTrie([form])) == [(5, 6)]
        assert LiveTokenSuffixArray({"a": form}).document("a").tolist() == [5, 6]
    assert sorted(TokenTrie([(t for t in (5, 6))])) == [(5, 6)]  # a generator: read once
