"""The demo's shipped snapshot: checked by sha256, its tree covers its corpus, its vectors are the embedder's own,
and the demo uses it (and says so), falls back visibly when it is damaged, and ignores it when asked."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from retrievekit.core import demo_snapshot
from retrievekit.core.cli import main
from retrievekit.core.demo import DEMO_OPTIONS
from retrievekit.core.demo_snapshot import load_snapshot, seed_embedder
from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.baselines import corpus_fingerprint
from retrievekit.core.lattice.tree import SemanticTree


def test_shipped_snapshot_is_whole_and_its_tree_covers_its_corpus():
    snap = load_snapshot()
    assert len(snap.corpus) == snap.manifest["passages"] > 500
    assert corpus_fingerprint(snap.corpus) == snap.manifest["corpus_fingerprint"]
    tree = SemanticTree.load(snap.tree_dir)
    assert set(tree.leaf_ids()) == {p.id for p in snap.corpus}
    assert tree.stats()["internal"] > 1 and tree.height >= 2  # summaries were written, not a flat tree
    # the tree was built with the options the demo uses now, so the demo takes it
    assert snap.tree_fits("smollm2", False, DEMO_OPTIONS["lattice"])
    assert not snap.tree_fits("qwen0.5b", False, DEMO_OPTIONS["lattice"])
    assert not snap.tree_fits("smollm2", False, {**DEMO_OPTIONS["lattice"], "summary_max_tokens": 40})


def test_shipped_vectors_are_what_the_embedder_computes():
    embedder = pytest.importorskip("retrievekit.core.index.embeddings").MiniLMEmbedder.default()
    snap = load_snapshot()
    assert seed_embedder(snap, embedder) == snap.manifest["vectors"] >= len(snap.corpus)
    texts = [p.text for p in snap.corpus[:: max(1, len(snap.corpus) // 6)]]
    fresh = embedder._encode(texts)  # noqa: SLF001 - encode without the memo, to compare with the seeded vectors
    seeded = embedder.embed_documents(texts)
    np.testing.assert_allclose(seeded, fresh, atol=1e-4)


def test_a_damaged_snapshot_is_refused(tmp_path):
    copy = tmp_path / "demo"
    shutil.copytree(load_snapshot().folder, copy)
    data = bytearray((copy / "vectors.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / "vectors.npz").write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="vectors.npz"):
        load_snapshot(copy)


def test_demo_says_it_uses_the_snapshot_and_falls_back_visibly_when_damaged(capsys, tmp_path, monkeypatch):
    assert main(["demo", "--method", "bm25", "--no-llm", "--work-dir", str(tmp_path / "a"), "--k", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{len(load_snapshot().corpus)} passages" in out and "snapshot shipped with the package" in out

    copy = tmp_path / "demo"
    shutil.copytree(load_snapshot().folder, copy)
    (copy / "corpus.jsonl.gz").write_bytes(b"not gzip")
    monkeypatch.setattr(demo_snapshot, "snapshot_dir", lambda: copy)
    assert main(["demo", "--method", "bm25", "--no-llm", "--work-dir", str(tmp_path / "b"), "--k", "1"]) == 0
    out = capsys.readouterr().out
    assert "shipped snapshot is unusable" in out and "corpus.jsonl.gz" in out
    assert "taken from the installed package now" in out


def test_no_snapshot_indexes_the_installed_docs(capsys, tmp_path):
    assert main(["demo", "--method", "bm25", "--no-llm", "--no-snapshot", "--work-dir", str(tmp_path), "--k", "1"]) == 0
    assert "taken from the installed package now" in capsys.readouterr().out


def test_demo_lattice_loads_the_shipped_tree(capsys, tmp_path):
    """The demo's LATTICE takes the shipped tree (no summary written here) and still searches it live."""
    assert main(["demo", "--method", "lattice", "--no-llm", "--work-dir", str(tmp_path), "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "ships with the package" in out
    assert not any(p.name.startswith("lattice-") for p in tmp_path.iterdir())  # nothing built in the work folder
    calls = int(out.split("LLM calls]")[0].rsplit(",", 1)[1].split()[0])
    assert calls >= 1  # the search itself asked the LLM
