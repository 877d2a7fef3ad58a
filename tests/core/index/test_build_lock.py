"""Processes (shards) started together over one corpus build a cached index or a LATTICE tree once, not each.

Before, two ``--shard K/2`` processes of one benchmark each embedded the whole corpus into its own temp folder, side by
side, and the last rename won: minutes of a core (hours for a LATTICE tree) thrown away.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from _corpora import FRUIT
from _lattice import KeywordLLM
from _paths import REPO

from retrievekit.core.index import baselines
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.build_lock import build_lock, lock_path
from retrievekit.core.lattice import method as lattice_method
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage

DOCS = list(FRUIT) + [Passage(id=f"x{i}", text=f"Rivers and mountains {i}.") for i in range(6)]

_HOLDER = """
import sys, time
from retrievekit.core.index.build_lock import build_lock
with build_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def _together(fn, n=2):
    """Run ``fn()`` in ``n`` threads released at once; their results, in thread order."""
    barrier, out = threading.Barrier(n), [None] * n

    def run(i):
        barrier.wait()
        out[i] = fn()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    return out


def _counting(monkeypatch, owner, name):
    """Wrap ``owner.name`` so that each call is counted and lasts long enough for the other thread to arrive."""
    calls, real = [], getattr(owner, name)

    def wrapped(*args, **kwargs):
        calls.append(1)
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)
    return calls


def test_a_waiting_process_says_so_and_goes_on_when_the_builder_is_killed(tmp_path, capfd):
    folder = tmp_path / "bm25-abc"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder)], env=env, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        entered = threading.Event()

        def wait_for_lock():
            with build_lock(folder):
                entered.set()

        waiter = threading.Thread(target=wait_for_lock)
        waiter.start()
        assert not entered.wait(1.0)  # the builder holds it
        os.kill(holder.pid, signal.SIGKILL)  # a killed builder releases the lock at once
        assert entered.wait(60)
        waiter.join(timeout=60)
    finally:
        holder.kill()
        holder.wait(timeout=60)
    assert f"another process is building {folder}; waiting for it" in capfd.readouterr().err
    assert not lock_path(folder).exists() and not folder.exists()  # the killed builder's, removed by the next


def test_shards_started_together_build_the_cached_bm25_index_once(tmp_path, monkeypatch):
    calls = _counting(monkeypatch, BM25Index, "build")
    ctx = MethodContext(corpus=DOCS, work_dir=str(tmp_path))
    indexes = _together(lambda: baselines.build_bm25(ctx), n=3)  # two wait on the lock file the first removes
    assert len(calls) == 1  # the others found the index the first built, and loaded it
    assert len({tuple(h.id for h in idx.search("banana", k=3)) for idx in indexes}) == 1
    assert (tmp_path / f"bm25-tantivy-{baselines.corpus_fingerprint(DOCS)}" / "manifest.json").is_file()  # the default


def test_shards_started_together_build_a_lattice_tree_once(tmp_path, monkeypatch, minilm):
    calls = _counting(monkeypatch, lattice_method, "build_tree")

    def create():
        return lattice_method.create_lattice(
            DOCS, llm=KeywordLLM(), embedder=minilm, tree_dir=tmp_path / "tree", max_children=4, num_iters=4
        )

    first, second = _together(create)
    assert len(calls) == 1
    assert first.tree.leaf_ids() == second.tree.leaf_ids() and first.tree.num_leaves == len(DOCS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # no lock file, no journal left


def test_rebuild_given_to_every_shard_rebuilds_the_tree_once(tmp_path, monkeypatch, minilm):
    def create(**kw):
        return lattice_method.create_lattice(
            DOCS, llm=KeywordLLM(), embedder=minilm, tree_dir=tmp_path / "tree", max_children=4, num_iters=4, **kw
        )

    create()  # an earlier tree, to be rebuilt
    calls = _counting(monkeypatch, lattice_method, "build_tree")
    first, second = _together(lambda: create(rebuild=True))
    assert len(calls) == 1  # the shard that waited loaded the tree the other had just rebuilt
    assert first.tree.leaf_ids() == second.tree.leaf_ids()
    create(rebuild=True)  # asked after that tree was saved: a rebuild again
    assert len(calls) == 2
