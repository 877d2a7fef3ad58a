"""LiveTokenSuffixArray (MindRef's suffix array, changed by id): after add / delete / update every answer equals a
fresh build's over the documents held (a plain TokenSuffixArray and a fresh LiveTokenSuffixArray); bad changes are
typed errors that change nothing; a saved array reads back the same."""

from __future__ import annotations

import random

import numpy as np
import pytest

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray
from retrievekit.core.index.suffix_array import TokenSuffixArray

EOS = 0


def _doc(rng: random.Random) -> list[int]:
    return [rng.randint(1, 9) for _ in range(rng.choice([0, 3, 8, 15, 30, 70]))]  # 70 > shard_tokens: a shard alone


def _prefixes(live: dict[str, list[int]], rng: random.Random) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    docs = [d for d in live.values() if d]
    for _ in range(300):
        d = rng.choice(docs)
        j = rng.randrange(len(d))
        out.append(tuple(d[j : j + rng.randint(1, 4)]))
    return out + [tuple(rng.randint(1, 10) for _ in range(rng.randint(1, 3))) for _ in range(50)] + [(-1,)]


def _answers(sa: LiveTokenSuffixArray, prefixes: list[tuple[int, ...]]) -> list[object]:
    return [
        sa.ids(),
        sa.num_tokens,
        [sa.allowed(p) for p in prefixes],
        [sa.count(p) for p in prefixes],
        [sa.locate(p) for p in prefixes if p],
    ]


def _plain(live: dict[str, list[int]], prefixes: list[tuple[int, ...]], eos: int | None) -> list[object]:
    ids = list(live)
    sa = TokenSuffixArray([np.asarray(d, dtype=np.int64) for d in live.values()], eos_token_id=eos)
    return [
        ids,
        sa.num_tokens,
        [sa.allowed(p) for p in prefixes],
        [sa.count(p) for p in prefixes],
        [[(ids[d], o) for d, o in sa.locate(p)] for p in prefixes if p],
    ]


@pytest.mark.parametrize("eos", [None, EOS])
def test_changes_answer_as_a_fresh_build_over_the_documents_held(tmp_path, eos):
    rng = random.Random(5 if eos is None else 6)
    live = {f"d{i}": _doc(rng) for i in range(40)}
    sa = LiveTokenSuffixArray(live, eos_token_id=eos, shard_tokens=48)
    _answers(sa, _prefixes(live, rng))  # remembered ranges from before the changes must not survive them
    for step in range(8):
        new = {f"n{step}-{i}": _doc(rng) for i in range(rng.randint(1, 6))}
        assert sa.add(new) == list(new)
        live.update(new)
        gone = rng.sample(sorted(live), rng.randint(1, 8))
        assert sa.delete(gone) == gone
        for k in gone:
            del live[k]
        edited = {k: _doc(rng) for k in rng.sample(sorted(live), 2)}
        assert sa.update(edited) == list(edited)
        for k, v in edited.items():
            del live[k]
            live[k] = v  # an update is delete + add: the document moves to the end
        prefixes = _prefixes(live, rng)
        fresh = LiveTokenSuffixArray(live, eos_token_id=eos, shard_tokens=48)
        assert _answers(sa, prefixes) == _answers(fresh, prefixes) == _plain(live, prefixes, eos)
        sizes = [s.num_tokens for s in sa.shards()]
        assert all(a + b > 48 for a, b in zip(sizes, sizes[1:], strict=False))  # the stated bound on shards
    back = LiveTokenSuffixArray.load(sa.save(tmp_path / "sa"))
    prefixes = _prefixes(live, rng)
    assert _answers(back, prefixes) == _plain(live, prefixes, eos) and back.num_shards == sa.num_shards
    assert sa.delete(sa.ids()) and len(sa) == 0 and sa.allowed([]) == [] and sa.count([1]) == 0


def test_bad_changes_are_typed_errors_and_change_nothing():
    sa = LiveTokenSuffixArray({"a": [1, 2], "b": [1, 3]}, shard_tokens=2)
    before = _answers(sa, [(), (1,), (1, 2)])
    cases = [
        (lambda: sa.delete(["a", "zz"]), r"delete: id 'zz' is not in the suffix array"),
        (lambda: sa.add({"c": [2], "b": [9]}), r"add: id 'b' is already in the suffix array"),
        (lambda: sa.add({"c": [2, -4]}), r"add: id 'c': token ids must be >= 0"),
        (lambda: sa.add({"c": ["x"]}), r"add: id 'c': token ids must be integers"),
        (lambda: sa.add({3: [2]}), r"add: ids must be strings, got int 3"),
        (lambda: sa.add([[2, 3]]), r"add: documents must be a mapping"),
        (lambda: sa.update({"a": [5], "zz": [6]}), r"update: id 'zz' is not in the suffix array; add it"),
        (lambda: sa.delete("a"), r"delete: ids must be a list of strings"),
        (lambda: sa.document("zz"), r"document: id 'zz' is not in the suffix array"),
        (lambda: LiveTokenSuffixArray(shard_tokens=0), r"shard_tokens must be a positive int"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            call()
    assert _answers(sa, [(), (1,), (1, 2)]) == before


def test_a_damaged_folder_is_refused(tmp_path):
    folder = LiveTokenSuffixArray({"a": [1, 2, 3]}).save(tmp_path / "sa")
    np.save(folder / "text.npy", np.asarray([2, 3, 5, 0], dtype=np.int64))
    with pytest.raises(IndexFormatError):  # changed behind the manifest's checksums
        LiveTokenSuffixArray.load(folder)
    with pytest.raises(IndexFormatError):
        LiveTokenSuffixArray.load(tmp_path / "missing")
