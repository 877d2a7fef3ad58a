"""A suffix array written to a folder shard by shard from a stream, then opened (its text and suffix array read with
``pread``, the rest memory-mapped): the same answers as the in-memory arrays, one shard held at a time, a typed error for a bad folder, and the old folder kept on a kill."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.mapped import is_mapped
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.index.store import write_manifest
from retrievekit.core.index.suffix_array import ShardedTokenSuffixArray, SuffixArrayTooLargeError, TokenSuffixArray
from retrievekit.core.index.suffix_array_folder import open_suffix_array, write_suffix_array


def _corpus(seed: int, n: int = 60) -> list[list[int]]:
    """Documents with repeated phrases (long shared prefixes) and a few empty ones."""
    rng = np.random.default_rng(seed)
    phrases = [rng.integers(0, 12, size=int(rng.integers(1, 5))).tolist() for _ in range(8)]
    docs = []
    for _ in range(n):
        doc: list[int] = []
        for _ in range(int(rng.integers(0, 6))):
            doc += phrases[int(rng.integers(len(phrases)))] if rng.random() < 0.6 else [int(rng.integers(0, 40))]
        docs.append(doc)
    return docs


def _prefixes(docs: list[list[int]], seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    found = [d[i : i + w] for d in docs for i in range(len(d)) for w in (1, 2, 3, 4) if i + w <= len(d)]
    return [[], *found[::3], *(rng.integers(0, 45, size=int(rng.integers(1, 4))).tolist() for _ in range(30))]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shard_tokens", [7, 40, 10_000])
def test_the_opened_folder_answers_as_the_arrays_built_in_memory(tmp_path, seed, shard_tokens):
    docs = _corpus(seed)
    shard_tokens = max(shard_tokens, max(map(len, docs)))
    folder = write_suffix_array(tmp_path / "sa", (d for d in docs), shard_tokens=shard_tokens, eos_token_id=99)
    opened = open_suffix_array(folder)
    sharded = ShardedTokenSuffixArray(docs, shard_tokens=shard_tokens, eos_token_id=99)
    whole = TokenSuffixArray(docs, eos_token_id=99)
    assert opened.num_shards == sharded.num_shards and opened.num_documents == len(docs)
    for p in _prefixes(docs, seed):
        assert opened.allowed(p) == sharded.allowed(p) == whole.allowed(p), p
        assert opened.allowed_array(p).dtype == np.int64
        assert opened.count(p) == whole.count(p), p
        if p:
            assert opened.locate(p) == whole.locate(p), p
    assert all(opened.document(i).tolist() == d and opened.document(i).dtype == np.int64 for i, d in enumerate(docs))
    for shard in opened.shards():  # left in their files, read per lookup: the text and suffix array as int32
        assert isinstance(shard._text, PreadArray) and isinstance(shard._sa, PreadArray)
        assert shard._text.dtype == shard._sa.dtype == np.int32 and is_mapped(shard._doc_len)
    maps = [line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if str(folder) in line]
    assert maps and not [m for m in maps if m.endswith(("/text.npy", "/sa.npy"))]  # the big ones: never mapped
    mapped = open_suffix_array(folder, mapped=True)  # the faster setting: the same answers
    assert all(is_mapped(s._text) and is_mapped(s._sa) and s._sa.dtype == np.int32 for s in mapped.shards())
    for p in _prefixes(docs, seed):
        assert mapped.allowed(p) == opened.allowed(p) and (not p or mapped.locate(p) == opened.locate(p)), p


def test_the_documents_are_read_as_the_shards_are_written(tmp_path):
    # ten tokens a document, three documents a shard: when document i is asked for, the shards of the documents
    # before it are on disk already (the build holds one shard, never the corpus)
    target = tmp_path / "sa"
    seen: list[tuple[int, int]] = []

    def documents():
        for i in range(10):
            temps = [p for p in tmp_path.iterdir() if p.name.startswith(".sa.")]
            seen.append((i, len(list(temps[0].glob("shard-*"))) if temps else 0))
            yield list(range(i, i + 10))

    write_suffix_array(target, documents(), shard_tokens=30)
    assert seen == [(i, max(0, (i - 1) // 3)) for i in range(10)]
    assert open_suffix_array(target).num_shards == 4 and open_suffix_array(target).locate([9, 10]) == [
        (i, 9 - i) for i in range(1, 10)
    ]


def test_no_documents_make_an_empty_array(tmp_path):
    sa = open_suffix_array(write_suffix_array(tmp_path / "sa", iter([])))
    assert (sa.num_documents, sa.allowed([]), sa.allowed([1]), sa.count([1]), sa.locate([1])) == (0, [], [], 0, [])


def test_bad_input_is_a_typed_error_and_leaves_the_folder_that_was_there(tmp_path):
    target = write_suffix_array(tmp_path / "sa", [[1, 2, 3]])
    with pytest.raises(InvalidInputError, match="document 1: token ids must be >= 0"):
        write_suffix_array(target, iter([[1], [2, -1]]))
    with pytest.raises(SuffixArrayTooLargeError, match="document 1 has 3 tokens, more than shard_tokens=2"):
        write_suffix_array(target, iter([[1], [2, 3, 4]]), shard_tokens=2)
    for bad in (0, -1, True, 2.5):
        with pytest.raises(InvalidInputError, match="shard_tokens must be a positive int"):
            write_suffix_array(target, iter([[1]]), shard_tokens=bad)
    assert open_suffix_array(target).allowed([1]) == [2]
    assert [p.name for p in tmp_path.iterdir()] == ["sa"]  # no temp folder left


def _reseal(folder: Path, change) -> None:
    """Change the manifest and seal it again (a folder that passes its checksums but lies about its shards)."""
    m = json.loads((folder / "manifest.json").read_text())
    change(m)
    kept = ("format", "format_version", "retrievekit_version", "checksums", "manifest_check")
    fields = {k: v for k, v in m.items() if k not in kept}
    write_manifest(folder, "sharded_suffix_array", 1, fields)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: f.joinpath("shard-00001", "sa.npy").write_bytes(b"\x93NUMPY garbage"), "does not match"),
        (lambda f: f.joinpath("shard-00000", "text.npy").unlink(), "missing"),
        (lambda f: _reseal(f, lambda m: m["shards"][0].update(size=3)), "sizes do not agree"),
        (lambda f: _reseal(f, lambda m: m["shards"][1].update(documents=2)), "sizes do not agree"),
        (lambda f: _reseal(f, lambda m: m["shards"][0].update(text="float64")), "names dtypes"),
        (lambda f: _reseal(f, lambda m: m["shards"][0].update(sa="int64")), "expected a 1-d int64 array"),
        (lambda f: _reseal(f, lambda m: m.update(shards=[])), "lists no shard"),
        (lambda f: _reseal(f, lambda m: m.update(eos_token_id="x")), "eos_token_id"),
        (lambda f: _reseal(f, lambda m: m.pop("base")), "KeyError"),
        (lambda f: _reseal(f, lambda m: m.update(orders=3)), "orders 3"),
        (lambda f: f.joinpath("after2.npy").unlink(), "missing"),
    ],
)
def test_a_damaged_folder_is_refused_with_a_typed_error(tmp_path, damage, message):
    folder = write_suffix_array(tmp_path / "sa", iter([[1, 2], [3, 4], [5, 6]]), shard_tokens=4)
    assert open_suffix_array(folder).allowed([3]) == [4]
    damage(folder)
    with pytest.raises(IndexFormatError, match=message):
        open_suffix_array(folder)


_KILLED = """
import os, signal, sys
from retrievekit.core.index.suffix_array_folder import write_suffix_array

def documents():
    for i in range(50):
        if i == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        yield [i, i + 1]

write_suffix_array(sys.argv[1], documents(), shard_tokens=8)
"""


@pytest.mark.parametrize("at", [0, 9, 49])
def test_a_build_killed_midway_leaves_the_old_folder_and_the_next_build_sweeps_its_leftovers(tmp_path, at):
    target = write_suffix_array(tmp_path / "sa", iter([[7, 8]]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_KILLED), str(target), str(at)], timeout=300)
    assert proc.returncode == -9
    assert open_suffix_array(target).allowed([7]) == [8] and open_suffix_array(target).num_documents == 1
    leftovers = [p for p in tmp_path.iterdir() if p.name != "sa"]
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".sa.p")
    os.utime(leftovers[0], (0, 0))  # as old as a dead writer's folder the sweep removes
    write_suffix_array(target, iter([[1, 2]]))
    assert open_suffix_array(target).allowed([1]) == [2]


def test_token_ids_too_large_for_the_triples_table_write_and_open_without_it(tmp_path):
    big = 3_000_000  # (big + 1) ** 3 does not fit an int64 code: the two-token answers come from the shards
    docs = [[1, 2, 3], [big, 1, 2], [1, 2, big]]
    folder = write_suffix_array(tmp_path / "sa", iter(docs), shard_tokens=3)
    assert json.loads((folder / "manifest.json").read_text())["orders"] == 1 and not (folder / "after2.npy").exists()
    opened, whole = open_suffix_array(folder), TokenSuffixArray(docs)
    for prefix in ([1], [1, 2], [big], [big, 1], [2, big]):
        assert opened.allowed(prefix) == whole.allowed(prefix), prefix
