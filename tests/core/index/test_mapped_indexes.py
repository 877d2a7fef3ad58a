"""Indexes that open memory-mapped (issue #63, item 3): the title trie, the live suffix array and the LATTICE
tree's node vectors are saved as ``.npy`` files and opened as views of their mappings; the answers are those of the
saved structure; a folder of the format before (read into memory) still opens; a damaged array file is an
IndexFormatError, never a raw numpy error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from _lattice import as_format_3

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.live_suffix_array import LiveTokenSuffixArray
from retrievekit.core.index.mapped import is_mapped
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.index.store import write_manifest
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.lattice.node_vectors import NodeVectors
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.types import Passage

TRIE_ARRAYS = ("start", "child_tok", "child_node", "terminal")
SA_ARRAYS = ("text", "sa", "stored", "starts", "followers", "shards")


def _reseal(folder, fmt, version, drop=()):
    """Seal ``folder`` again (as a writer of ``fmt`` version ``version`` would) without the files ``drop``."""
    data = json.loads((folder / "manifest.json").read_text())
    for name in drop:
        (folder / name).unlink()
    fields = {
        k: v for k, v in data.items() if k not in {"format", "format_version", "retrievekit_version", "checksums"}
    }
    write_manifest(folder, fmt, version, fields)


def _docs(n=60, seed=3):
    rng = np.random.default_rng(seed)
    return {f"d{i}": rng.integers(0, 12, size=int(rng.integers(0, 15))).tolist() for i in range(n)}


def _sa_answers(sa, docs, seed=5):
    rng = np.random.default_rng(seed)
    prefixes = [()] + [tuple(d[j : j + w]) for d in docs.values() for w in (1, 2, 3) for j in range(len(d) - w + 1)]
    prefixes += [tuple(rng.integers(0, 14, size=int(rng.integers(1, 4))).tolist()) for _ in range(50)]
    return [(sa.allowed(p), sa.count(p), sa.locate(p) if p else None) for p in prefixes]


def _trie_answers(trie, sequences):
    prefixes = {tuple(s[:j]) for s in sequences for j in range(len(s) + 1)} | {(99,), (1, 99)}
    return [(p, trie.allowed(p), list(p) in trie, trie.completions(p)) for p in sorted(prefixes)]


@pytest.mark.parametrize("keyed", [False, True])
def test_a_saved_trie_opens_mapped_answers_the_same_and_changes_stay_in_memory(tmp_path, keyed):
    seqs = [[1, 2, 3], [1, 2], [1, 4, 5, 6], [7], [7, 8, 2]]
    trie = TokenTrie.keyed({f"t{i}": s for i, s in enumerate(seqs)}, 0) if keyed else TokenTrie(seqs, 0)
    folder = trie.save(tmp_path / "titles")
    assert sorted(p.name for p in folder.glob("*.npy")) == sorted(f"{n}.npy" for n in TRIE_ARRAYS)
    back = TokenTrie.load(folder)
    arrays = (back._start, back._child_tok, back._child_node, back._terminal)
    assert all(is_mapped(a) for a in arrays)  # opened, not read: the arrays are views of the files' mappings
    assert _trie_answers(back, seqs) == _trie_answers(trie, seqs) and back.ids() == trie.ids()
    if keyed:  # an edit in place writes to copy-on-write pages: the files stay as saved
        back.update({"t0": [1, 9]})
        back.add({"t9": [7, 8, 3]})
        assert back.allowed([1]) == [2, 4, 9] and back.allowed([7, 8]) == [2, 3]
    else:
        assert back.add([1, 9]) and back.allowed([1]) == [2, 4, 9]
    assert _trie_answers(TokenTrie.load(folder), seqs) == _trie_answers(trie, seqs)


def test_a_trie_folder_of_format_1_still_opens_in_memory_and_saves_as_format_2(tmp_path):
    seqs = [[1, 2, 3], [1, 4], [5]]
    folder = TokenTrie.keyed({"a": seqs[0], "b": seqs[1], "c": seqs[2]}, 0).save(tmp_path / "t")
    with open(folder / "trie.npz", "wb") as f:  # what retrievekit wrote before
        np.savez(f, **{n: np.load(folder / f"{n}.npy") for n in TRIE_ARRAYS})
    _reseal(folder, "token_trie", 1, [f"{n}.npy" for n in TRIE_ARRAYS])
    old = TokenTrie.load(folder)
    assert not is_mapped(old._start) and old.ids() == ["a", "b", "c"]
    assert _trie_answers(old, seqs) == _trie_answers(TokenTrie(seqs, 0), seqs)
    again = TokenTrie.load(old.save(tmp_path / "t2"))
    assert json.loads((tmp_path / "t2" / "manifest.json").read_text())["format_version"] == 2
    assert is_mapped(again._start) and _trie_answers(again, seqs) == _trie_answers(old, seqs)


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: (f / "start.npy").write_bytes(b"\x93NUMPY garbage"),  # a broken header
        lambda f: (f / "child_tok.npy").write_bytes((f / "child_tok.npy").read_bytes()[:-4]),  # truncated
        lambda f: np.save(f / "child_node.npy", np.zeros(5, dtype=np.float64)),  # another dtype
        lambda f: np.save(f / "terminal.npy", np.zeros((2, 2), dtype=bool)),  # another shape
        lambda f: (f / "start.npy").unlink(),
    ],
)
def test_a_damaged_trie_array_is_a_typed_error_even_when_the_manifest_is_resealed(tmp_path, damage):
    folder = TokenTrie([[1, 2, 3], [1, 4]], 0).save(tmp_path / "t")
    damage(folder)
    with pytest.raises(IndexFormatError):  # the checksums catch it first
        TokenTrie.load(folder)
    _reseal(folder, "token_trie", 2)  # checksums that match the damaged files: the arrays' own checks must hold
    with pytest.raises(IndexFormatError):
        TokenTrie.load(folder)


def test_a_saved_suffix_array_opens_mapped_without_sorting_and_answers_the_same(tmp_path, monkeypatch):
    docs = _docs()
    sa = LiveTokenSuffixArray(docs, eos_token_id=0, shard_tokens=40)
    sa.delete(["d3", "d17"])
    held = {k: docs[k] for k in sa.ids()}
    folder = sa.save(tmp_path / "sa")
    import retrievekit.core.index.suffix_array as suffix_array

    monkeypatch.setattr(suffix_array, "_divsufsort", lambda: pytest.fail("opening sorted a shard again"))
    back = LiveTokenSuffixArray.load(folder)
    monkeypatch.undo()
    assert back.num_shards == sa.num_shards > 3 and back.ids() == sa.ids()
    # the text and suffix arrays read with pread (nothing of them mapped), the small arrays mapped
    assert all(isinstance(s._text, PreadArray) and isinstance(s._sa, PreadArray) for s in back.shards())
    assert all(is_mapped(s._stored) for s in back.shards())
    assert _sa_answers(back, held) == _sa_answers(sa, held)
    assert [back.document(k).tolist() for k in back.ids()] == [held[k] for k in back.ids()]
    back.add({"new": [1, 2, 3, 1, 2]})  # changes rebuild shards in memory; the mapped ones stay as they are
    back.delete(["d0", "d40"])
    live = {k: v for k, v in held.items() if k not in {"d0", "d40"}} | {"new": [1, 2, 3, 1, 2]}
    fresh = LiveTokenSuffixArray(live, eos_token_id=0, shard_tokens=40)
    assert _sa_answers(back, live) == _sa_answers(fresh, live)
    assert _sa_answers(LiveTokenSuffixArray.load(back.save(folder)), live) == _sa_answers(fresh, live)


def test_a_saved_suffix_array_opened_with_mapped_maps_its_text_and_answers_the_same(tmp_path):
    docs = _docs()
    sa = LiveTokenSuffixArray(docs, eos_token_id=0, shard_tokens=40)
    folder = sa.save(tmp_path / "sa")
    back = LiveTokenSuffixArray.load(folder, mapped=True)
    assert back.num_shards == sa.num_shards > 3
    assert all(is_mapped(s._text) and is_mapped(s._sa) and is_mapped(s._stored) for s in back.shards())
    assert not any(isinstance(s._text, PreadArray) for s in back.shards())
    assert _sa_answers(back, docs) == _sa_answers(LiveTokenSuffixArray.load(folder), docs) == _sa_answers(sa, docs)
    back.add({"new": [1, 2, 3, 1, 2]})
    live = docs | {"new": [1, 2, 3, 1, 2]}
    assert _sa_answers(back, live) == _sa_answers(LiveTokenSuffixArray(live, eos_token_id=0, shard_tokens=40), live)


def test_an_empty_suffix_array_saves_and_opens(tmp_path):
    back = LiveTokenSuffixArray.load(LiveTokenSuffixArray().save(tmp_path / "sa"))
    assert len(back) == 0 and back.allowed([]) == [] and back.count([1]) == 0


def test_a_suffix_array_folder_of_format_1_still_opens(tmp_path):
    docs = _docs(20)
    folder = LiveTokenSuffixArray(docs, shard_tokens=30).save(tmp_path / "sa")
    np.save(folder / "tokens.npy", np.concatenate([np.asarray(d, dtype=np.int64) for d in docs.values()]))
    _reseal(folder, "live_suffix_array", 1, [f"{n}.npy" for n in SA_ARRAYS])
    old = LiveTokenSuffixArray.load(folder)
    assert not any(is_mapped(s._sa) for s in old.shards())  # sorted again in memory, as before
    assert _sa_answers(old, docs) == _sa_answers(LiveTokenSuffixArray(docs), docs)


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: np.save(f / "sa.npy", np.zeros(3, dtype=np.float32)),  # another dtype
        lambda f: np.save(f / "shards.npy", np.asarray([1, 2, 3], dtype=np.int64)),  # not rows of five
        lambda f: np.save(f / "text.npy", np.load(f / "text.npy")[:-1]),  # sizes that do not add up
        lambda f: np.save(f / "lengths.npy", np.load(f / "lengths.npy") + 1),  # a text that does not hold them
        lambda f: (f / "followers.npy").write_bytes(b"not an array"),
    ],
)
def test_a_damaged_suffix_array_is_a_typed_error_even_when_the_manifest_is_resealed(tmp_path, damage):
    folder = LiveTokenSuffixArray(_docs(20), shard_tokens=30).save(tmp_path / "sa")
    damage(folder)
    with pytest.raises(IndexFormatError):
        LiveTokenSuffixArray.load(folder)
    _reseal(folder, "live_suffix_array", 2)
    with pytest.raises(IndexFormatError):
        LiveTokenSuffixArray.load(folder)


def _tree():
    tree = SemanticTree.flat([Passage(id=f"p{i}", text=f"text {i}") for i in range(6)])
    rng = np.random.default_rng(0)
    tree.embeddings = {nid: rng.standard_normal(8).astype(np.float32) for nid in tree.nodes}
    return tree


def test_a_tree_reads_its_node_vectors_from_their_file_and_changes_them_in_memory(tmp_path):
    tree = _tree()
    folder = tree.save(tmp_path / "tree")
    assert (folder / "vectors.npy").is_file() and not (folder / "embeddings.npz").exists()
    back = SemanticTree.load(folder)
    assert isinstance(back.embeddings, NodeVectors) and isinstance(back.embeddings._matrix, PreadArray)
    assert str(folder / "vectors.npy") not in Path("/proc/self/maps").read_text()  # read per row, never mapped
    assert sorted(back.embeddings) == sorted(tree.embeddings)
    assert all(np.array_equal(back.embeddings[k], v) for k, v in tree.embeddings.items())
    back.embeddings["p3"] = np.ones(8)
    del back.embeddings["p4"]
    back.embeddings["extra"] = np.zeros(8)
    assert back.embeddings.in_memory.keys() == {"p3", "extra"} and "p4" not in back.embeddings
    assert len(back.embeddings) == 7
    assert np.array_equal(SemanticTree.load(folder).embeddings["p3"], tree.embeddings["p3"])  # the file as saved
    again = SemanticTree.load(back.save(tmp_path / "tree2"))
    assert sorted(again.embeddings) == sorted(back.embeddings) and again.embeddings["p3"].tolist() == [1.0] * 8


def test_a_tree_folder_of_format_1_still_opens_and_a_damaged_vector_file_is_typed(tmp_path):
    tree = _tree()
    folder = tree.save(tmp_path / "tree")
    as_format_3(folder, tree)
    ids = json.loads((folder / "vector_ids.json").read_text())
    shutil.copytree(folder, tmp_path / "broken")
    with open(folder / "embeddings.npz", "wb") as f:  # what retrievekit wrote before
        np.savez(f, ids=np.asarray(ids, dtype=str), vectors=np.load(folder / "vectors.npy"))
    _reseal(folder, "lattice_tree", 1, ["vectors.npy", "vector_ids.json"])
    old = SemanticTree.load(folder)
    assert not isinstance(old.embeddings, NodeVectors)
    assert all(np.array_equal(old.embeddings[k], v) for k, v in tree.embeddings.items())
    broken = tmp_path / "broken"
    np.save(broken / "vectors.npy", np.zeros(4, dtype=np.float32))  # one dimension, not a matrix
    _reseal(broken, "lattice_tree", 2)
    with pytest.raises(IndexFormatError, match="vectors.npy is corrupt"):
        SemanticTree.load(broken)
    np.save(broken / "vectors.npy", np.zeros((3, 8), dtype=np.float32))  # fewer rows than ids
    _reseal(broken, "lattice_tree", 2)
    with pytest.raises(IndexFormatError, match="vector_ids.json is corrupt"):
        SemanticTree.load(broken)
