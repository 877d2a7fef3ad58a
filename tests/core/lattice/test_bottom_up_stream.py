"""A bottom-up tree built from a stream into a folder is the tree the in-memory build saves (issue #63, item 1).

``build_bottom_up_into`` never holds the corpus: it reads a generator once, keeps vectors and objects in scratch
files and writes the nodes as arrays. Every case below builds the same corpus both ways and compares the folders
file by file (the manifest without the build's seconds and its own checksum).
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from _lattice import KeywordLLM

from retrievekit.core.errors import EmptyCorpusError, InvalidInputError
from retrievekit.core.lattice import Lattice, SemanticTree, TreeBuildConfig
from retrievekit.core.lattice import bottom_up_stream as stream_module
from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.bottom_up_stream import build_bottom_up_into
from retrievekit.core.lattice.stored_objects import copy_sorted_objects
from retrievekit.core.types import Passage

WORDS = "apple pear plum fig kiwi lime stock bond fund rate loan cash dog cat cow hen owl bee ant elk".split()


class Overlap:
    """A scripted judge: the share of the query's words in the candidate."""

    def score_relevance(self, query, candidates, *, trace=None):
        q = set(query.lower().split())
        return [len(q & set(c.lower().split())) / len(q) for c in candidates]


class HashedWords:
    """Deterministic bag-of-words vectors (16 dimensions): documents sharing words are near."""

    name = "hashed-words-16"

    def embed_documents(self, texts):
        out = np.zeros((len(texts), 16))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode()) % 16] += 1.0
        return out + 0.01

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def corpus(n: int, *, groups: int = 0):
    """``n`` seeded documents of four to eight words; with ``groups``, a ``document_id`` of ``i % groups``."""
    rng = np.random.default_rng(7)
    for i in range(n):
        words = [WORDS[j] for j in rng.integers(len(WORDS), size=int(rng.integers(4, 9)))]
        meta = {"document_id": i % groups} if groups else {}
        yield Passage(id=f"doc-{(i * 7919) % n:05d}", text=" ".join(words), title=words[0].title(), metadata=meta)


def folder_files(folder: Path) -> dict[str, object]:
    """Every file of a tree folder: ``.npy`` as arrays, others as bytes; the manifest without what differs per run."""
    out: dict[str, object] = {}
    for path in sorted(folder.iterdir()):
        if path.name == "manifest.json":
            manifest = json.loads(path.read_text())
            manifest["meta"].pop("seconds")
            manifest.pop("manifest_check", None)
            out[path.name] = manifest
        elif path.suffix == ".npy":
            out[path.name] = np.load(path)
        else:
            out[path.name] = path.read_bytes()
    return out


def assert_same_folders(streamed: Path, saved: Path) -> None:
    a, b = folder_files(streamed), folder_files(saved)
    assert sorted(a) == sorted(b)
    for name in a:
        if isinstance(a[name], np.ndarray):
            assert a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]), name
        else:
            assert a[name] == b[name], name


def both_ways(tmp_path: Path, n: int, cfg: TreeBuildConfig, llm=None, **kw) -> tuple[Path, SemanticTree]:
    built = build_bottom_up(list(corpus(n, **kw)), llm, HashedWords(), cfg)
    saved = built.save(tmp_path / "saved")
    streamed = build_bottom_up_into(tmp_path / "streamed", corpus(n, **kw), llm, HashedWords(), cfg, batch_size=7)
    assert_same_folders(streamed, saved)
    return streamed, built


def test_a_streamed_build_writes_the_folder_the_in_memory_build_saves(tmp_path):
    streamed, built = both_ways(tmp_path, 300, TreeBuildConfig(max_children=4, summaries="extractive"))
    opened = SemanticTree.load(streamed)
    assert opened.height >= 3 and opened.stats() == built.stats()
    queries = ["apple pear", "stock bond fund", "dog cat owl"]
    for q in queries:  # the opened tree answers as the built one
        hits = [h.id for h in Lattice(opened, Overlap()).search(q, k=5)]
        assert len(hits) == 5 and hits == [h.id for h in Lattice(built, Overlap()).search(q, k=5)]


def test_the_same_when_a_level_is_summarised_chunk_by_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(stream_module, "CHUNK_GROUPS", 3)
    both_ways(tmp_path, 120, TreeBuildConfig(max_children=3, summaries="extractive", append_child_titles=True))


def test_the_same_with_llm_summaries_and_a_metadata_first_layer(tmp_path):
    cfg = TreeBuildConfig(max_children=3, first_layer="metadata", max_concurrency=2)
    llm = KeywordLLM()
    both_ways(tmp_path, 60, cfg, llm, groups=17)
    assert llm.calls > 0


def test_a_corpus_of_at_most_m_documents_is_a_flat_tree(tmp_path):
    streamed, _ = both_ways(tmp_path, 4, TreeBuildConfig(max_children=5, summaries="extractive"))
    assert SemanticTree.load(streamed).children("root") == [o.id for o in corpus(4)]


def test_a_resumed_streamed_build_reuses_the_journaled_summaries(tmp_path):
    cfg = TreeBuildConfig(max_children=3, max_concurrency=1)
    first, second = KeywordLLM(), KeywordLLM()
    build_bottom_up_into(tmp_path / "a", corpus(40), first, HashedWords(), cfg, build_dir=tmp_path / "journal")
    build_bottom_up_into(tmp_path / "b", corpus(40), second, HashedWords(), cfg, build_dir=tmp_path / "journal")
    assert first.calls > 0 and second.calls == 0
    assert SemanticTree.load(tmp_path / "b").meta["journal_reused"] == first.calls


@pytest.mark.parametrize(
    ("items", "error", "says"),
    [
        ([Passage(id="a", text="x"), Passage(id="b", text="y"), Passage(id="a", text="z")], InvalidInputError, "'a'"),
        ([Passage(id="a", text="x"), Passage(id="root", text="y")], InvalidInputError, "reserved"),
        ([Passage(id="a", text="x"), "not an object"], InvalidInputError, "Passage"),
        ([Passage(id="a", text="x", metadata={"k": "\ud800"})], InvalidInputError, "metadata holds an unpaired"),
        ([Passage(id="a", text=" "), Passage(id="b", text="")], EmptyCorpusError, "empty text"),
        ([], EmptyCorpusError, "empty"),
    ],
)
def test_bad_corpora_are_typed_errors_and_leave_the_folder_as_it_was(tmp_path, items, error, says):
    folder = build_bottom_up_into(
        tmp_path / "t", corpus(20), None, HashedWords(), TreeBuildConfig(summaries="extractive")
    )
    before = folder_files(folder)
    with pytest.raises(error, match=says):
        build_bottom_up_into(folder, iter(items), None, HashedWords(), TreeBuildConfig(summaries="extractive"))
    after = folder_files(folder)
    assert sorted(after) == sorted(before) and after["objects.jsonl"] == before["objects.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]  # no scratch or temporary folder left beside it


def test_a_stream_that_fails_midway_keeps_the_tree_that_was_there(tmp_path):
    cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    folder = build_bottom_up_into(tmp_path / "t", corpus(30), None, HashedWords(), cfg)

    def failing():
        yield from corpus(25)
        raise ConnectionError("the source went away")

    with pytest.raises(ConnectionError):
        build_bottom_up_into(folder, failing(), None, HashedWords(), cfg, batch_size=4)
    assert SemanticTree.load(folder).num_leaves == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


class CountingWords(HashedWords):
    """:class:`HashedWords` that counts its calls and raises ``ConnectionError`` on call ``fail_at`` (1-based)."""

    def __init__(self, fail_at: int = 0) -> None:
        self.calls, self.fail_at = 0, fail_at

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == self.fail_at:
            raise ConnectionError("the embedding server went away")
        return super().embed_documents(texts)


def test_a_build_that_failed_midway_does_not_embed_a_kept_leaf_batch_again(tmp_path):
    cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    journal = tmp_path / "journal"
    with pytest.raises(ConnectionError):  # two batches of 10 embedded and kept, the third failed
        build_bottom_up_into(
            tmp_path / "t", corpus(55), None, CountingWords(fail_at=3), cfg, build_dir=journal, batch_size=10
        )
    resumed = CountingWords()
    build_bottom_up_into(tmp_path / "t", corpus(55), None, resumed, cfg, build_dir=journal, batch_size=10)
    whole = CountingWords()
    build_bottom_up_into(tmp_path / "whole", corpus(55), None, whole, cfg, batch_size=10)
    assert resumed.calls == whole.calls - 2  # the six leaf batches but the two kept, then the summaries' levels
    assert SemanticTree.load(tmp_path / "t").meta["leaf_batches_reused"] == 2
    a, b = folder_files(tmp_path / "t"), folder_files(tmp_path / "whole")
    for name in ("vectors.npy", "node_ids.npy", "node_texts.npy", "objects.jsonl"):
        assert np.array_equal(a[name], b[name]) if name.endswith(".npy") else a[name] == b[name]


def test_kept_leaf_batches_serve_only_the_same_embedder_and_a_damaged_one_is_embedded_again(tmp_path):
    cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    journal = tmp_path / "journal"
    build_bottom_up_into(tmp_path / "a", corpus(30), None, CountingWords(), cfg, build_dir=journal, batch_size=10)
    kept = sorted((journal / "leaf_vectors").glob("*.npy"))
    assert len(kept) == 3
    kept[0].write_bytes(kept[0].read_bytes()[:100])  # torn
    again = CountingWords()
    build_bottom_up_into(tmp_path / "b", corpus(30), None, again, cfg, build_dir=journal, batch_size=10)
    assert SemanticTree.load(tmp_path / "b").meta["leaf_batches_reused"] == 2
    assert_same_folders_but_meta(tmp_path / "a", tmp_path / "b")

    class OtherWords(CountingWords):
        name = "other-words"

    other = OtherWords()
    build_bottom_up_into(tmp_path / "c", corpus(30), None, other, cfg, build_dir=journal, batch_size=10)
    assert "leaf_batches_reused" not in SemanticTree.load(tmp_path / "c").meta


def assert_same_folders_but_meta(a: Path, b: Path) -> None:
    fa, fb = folder_files(a), folder_files(b)
    for name in fa:
        if name == "manifest.json":
            continue
        assert np.array_equal(fa[name], fb[name]) if name.endswith(".npy") else fa[name] == fb[name], name


def test_ids_and_texts_with_nul_surrogates_and_non_ascii_build_the_same_folder(tmp_path):
    odd = ["a\x00b", "\U0010fffd", "naïve", "日本語", "emoji-😀", "sp ace", 'quote"d', "back\\slash", "nl\nid"]
    docs = [Passage(id=i, text=f"{w} {w} odd{k}", title=w) for k, (i, w) in enumerate(zip(odd, WORDS, strict=False))]
    docs += list(corpus(40))
    cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    saved = build_bottom_up(docs, None, HashedWords(), cfg).save(tmp_path / "saved")
    streamed = build_bottom_up_into(tmp_path / "streamed", iter(docs), None, HashedWords(), cfg, batch_size=5)
    assert_same_folders(streamed, saved)
    opened = SemanticTree.load(streamed)
    for doc in docs[: len(odd)]:  # every odd id is a leaf of the opened tree, with its text
        assert opened.objects[doc.id] == doc and opened.is_leaf(doc.id) and opened.text(doc.id) == doc.index_text()


def test_the_scratch_vectors_give_their_disk_back_before_the_objects_are_copied(tmp_path, monkeypatch):
    # a deleted file still open keeps its blocks: at 10M the scratch vectors are 15 GB the copy of the objects needs
    copied = []

    def copy_then_check(*args, **kwargs):
        fds = Path("/proc/self/fd")
        held = [os.readlink(fds / fd) for fd in os.listdir(fds) if (fds / fd).is_symlink()]
        copied.append([h for h in held if "vectors.f32" in h])
        return copy_sorted_objects(*args, **kwargs)

    monkeypatch.setattr(stream_module, "copy_sorted_objects", copy_then_check)
    cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    folder = build_bottom_up_into(tmp_path / "t", corpus(50), None, HashedWords(), cfg)
    assert copied == [[]] and SemanticTree.load(folder).num_leaves == 50  # no scratch vectors open, deleted or not
