"""A keyed TokenTrie (MindRef's title trie) changes in place by id: after add / delete / update every answer equals
a fresh build over the ids held; bad changes are typed errors that change nothing; a saved trie reads back the
same."""

from __future__ import annotations

import random

import pytest

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.token_trie import TokenTrie

EOS = 0


def _titles(n: int, rng: random.Random) -> dict[str, list[int]]:
    # a small vocabulary, so titles share prefixes; every fifth title is another's (ids sharing one path)
    out: dict[str, list[int]] = {}
    for i in range(n):
        out[f"d{i}"] = list(out[f"d{i - 3}"]) if i % 5 == 4 else [rng.randint(1, 6) for _ in range(rng.randint(1, 5))]
    return out


def _answers(trie: TokenTrie, prefixes: list[tuple[int, ...]]) -> list[object]:
    return [
        len(trie),
        trie.num_nodes,
        list(trie),
        [trie.allowed(p) for p in prefixes],
        [trie.completions(p, limit=3) for p in prefixes],
        [p in trie for p in prefixes],
    ]


def _prefixes(rng: random.Random) -> list[tuple[int, ...]]:
    return [()] + [tuple(rng.randint(1, 7) for _ in range(rng.randint(1, 6))) for _ in range(400)]


def test_changes_answer_as_a_fresh_build_over_the_ids_held(tmp_path):
    rng = random.Random(11)
    titles = _titles(120, rng)
    prefixes = _prefixes(rng)
    live = {k: v for k, v in titles.items() if int(k[1:]) < 80}
    trie = TokenTrie.keyed(live, eos_token_id=EOS)
    _answers(trie, prefixes)  # remembered nodes from before the changes must not survive them
    for step in range(6):
        new = {k: v for k, v in titles.items() if 80 + 7 * step <= int(k[1:]) < 80 + 7 * (step + 1)}
        assert trie.add(new) == list(new)
        live.update(new)
        gone = rng.sample(sorted(live), 9)
        assert trie.delete(gone) == gone
        for k in gone:
            del live[k]
        edited = {k: [rng.randint(1, 6) for _ in range(3)] for k in rng.sample(sorted(live), 4)}
        assert trie.update(edited) == list(edited)
        for k, v in edited.items():
            del live[k]
            live[k] = v  # an update is delete + add
        fresh = TokenTrie.keyed(live, eos_token_id=EOS)
        assert trie.ids() == list(live)
        assert _answers(trie, prefixes) == _answers(fresh, prefixes)
    big = {f"big{i}": [rng.randint(1, 6) for _ in range(rng.randint(1, 5))] for i in range(70)}
    trie.add(big)  # more than a change edits in place: rebuilt at the next query, after the in-place edits above
    live.update(big)
    fresh = TokenTrie.keyed(live, eos_token_id=EOS)
    assert _answers(trie, prefixes) == _answers(fresh, prefixes)
    back = TokenTrie.load(trie.save(tmp_path / "titles"))
    assert back.ids() == list(live) and _answers(back, prefixes) == _answers(fresh, prefixes)
    back.delete(back.ids()[:5])
    assert _answers(back, prefixes) == _answers(
        TokenTrie.keyed(dict(list(live.items())[5:]), eos_token_id=EOS), prefixes
    )


def test_a_shared_title_stays_until_its_last_id_goes():
    trie = TokenTrie.keyed({"a": [4, 5], "b": [4, 5], "c": [4, 6]}, eos_token_id=EOS)
    assert trie.delete(["a"]) == ["a"] and trie.allowed([4]) == [5, 6] and [4, 5] in trie
    assert trie.delete(["b"]) == ["b"] and trie.allowed([4]) == [6] and [4, 5] not in trie


def test_bad_changes_are_typed_errors_and_change_nothing():
    trie = TokenTrie.keyed({"a": [1, 2], "b": [1, 3]}, eos_token_id=EOS)
    before = _answers(trie, [(), (1,), (1, 2)])
    cases = [
        (lambda: trie.delete(["a", "zz"]), r"delete: id 'zz' is not in the trie"),
        (lambda: trie.add({"c": [2], "b": [9]}), r"add: id 'b' is already in the trie"),
        (lambda: trie.add({"c": [2], "d": []}), r"add: id 'd': cannot add an empty token sequence"),
        (lambda: trie.add({"c": [2, EOS]}), r"add: id 'c': sequence \[2, 0\] contains the EOS id"),
        (lambda: trie.add({7: [2]}), r"add: ids must be strings, got int 7"),
        (lambda: trie.add([2, 3]), r"add: this trie is keyed"),
        (lambda: trie.update({"a": [5], "zz": [6]}), r"update: id 'zz' is not in the trie; add it"),
        (lambda: trie.delete("a"), r"delete: ids must be a list of strings"),
        (lambda: TokenTrie([[1]]).delete(["a"]), r"built without ids"),
        (lambda: TokenTrie([[1]]).add({"a": [2]}), r"built without ids"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            call()
    assert _answers(trie, [(), (1,), (1, 2)]) == before and trie.ids() == ["a", "b"]


def test_a_trie_without_ids_saves_too_and_a_damaged_folder_is_refused(tmp_path):
    trie = TokenTrie([[1, 2, 3], [1, 4], [5]], eos_token_id=EOS)
    folder = trie.save(tmp_path / "plain")
    back = TokenTrie.load(folder)
    prefixes = [(), (1,), (1, 2), (1, 2, 3), (5,), (9,)]
    assert _answers(back, prefixes) == _answers(trie, prefixes) and back.ids() == []
    assert back.add([1, 5]) and back.allowed([1]) == [2, 4, 5]
    (folder / "start.npy").write_bytes(b"not an array")
    with pytest.raises(IndexFormatError):
        TokenTrie.load(folder)
