"""A process killed between ``atomic_folder``'s two renames (the old index moved aside, the new one not yet in place)
leaves nothing at the index's path and the old copy in ``.<name>.old-<pid>``: the next open, or the next write,
finds it and puts it back (issue #52 item 6), whether or not the killed pid is alive again (issue #62 item 7). The
kill is a real SIGKILL of a subprocess at that instant."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from _paths import REPO

from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.folder_swap import restore_interrupted_swap
from retrievekit.core.index.store import sweep_stale_temp_folders
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.types import Passage

OLD = [Passage(id="old1", text="apples are red"), Passage(id="old2", text="bananas are yellow")]

_KILLED_BETWEEN_THE_RENAMES = """
    import os, signal, sys
    from retrievekit.core.index.bm25 import BM25Index
    from retrievekit.core.lattice.tree import SemanticTree
    from retrievekit.core.types import Passage

    real = os.replace
    def replace(src, dst, *a, **kw):
        real(src, dst, *a, **kw)
        if ".old-" in os.fspath(dst):  # the old folder is aside; the new one is not in place yet
            os.kill(os.getpid(), signal.SIGKILL)
    os.replace = replace
    new = [Passage(id="new1", text="cherries are dark")]
    if sys.argv[2] == "bm25":
        BM25Index.build(new).save(sys.argv[1])
    else:
        SemanticTree.flat(new).save(sys.argv[1])
"""


def _kill_mid_swap(folder, kind):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    code = textwrap.dedent(_KILLED_BETWEEN_THE_RENAMES)
    proc = subprocess.run([sys.executable, "-c", code, str(folder), kind], env=env, timeout=300, capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert not folder.exists()
    olds = [p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}.old-")]
    assert len(olds) == 1


def test_the_next_open_restores_the_old_bm25_index(tmp_path):
    folder = tmp_path / "bm25"
    BM25Index.build(OLD).save(folder)
    _kill_mid_swap(folder, "bm25")
    assert [h.id for h in BM25Index.load(folder).search("apples")] == ["old1"]
    assert not [p for p in tmp_path.iterdir() if ".old-" in p.name]  # the killed write's temp folder waits for a sweep


def test_the_next_open_restores_the_old_tree(tmp_path):
    folder = tmp_path / "tree"
    SemanticTree.flat(OLD).save(folder)
    _kill_mid_swap(folder, "tree")
    assert SemanticTree.load(folder).leaf_ids() == ["old1", "old2"]


@pytest.mark.parametrize("age", [0, 3600])
def test_a_sweep_never_removes_the_only_copy_and_the_next_write_restores_it_first(tmp_path, age):
    folder = tmp_path / "bm25"
    BM25Index.build(OLD).save(folder)
    _kill_mid_swap(folder, "bm25")
    old = next(p for p in tmp_path.iterdir() if ".old-" in p.name)
    past = time.time() - age
    os.utime(old, (past, past))  # an hour old: the sweep's age for an orphan
    assert old not in sweep_stale_temp_folders(folder) and old.exists()  # the killed write's temp folder goes
    BM25Index.build([Passage(id="n", text="plums")]).save(folder)  # the next write: restored, then replaced
    assert [o.id for o in BM25Index.load(folder).objects] == ["n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]


@pytest.mark.parametrize("pid", ["mine", "init"])
def test_the_restore_does_not_depend_on_the_killed_pid_being_dead(tmp_path, pid):
    # issue #62 item 7: the killed writer's pid is alive again (reused by another process, or the same number after
    # a reboot): the old copy still goes back, since no swap holds the lock
    folder = tmp_path / "bm25"
    BM25Index.build(OLD).save(folder)
    _kill_mid_swap(folder, "bm25")
    old = next(p for p in tmp_path.iterdir() if ".old-" in p.name)
    alive = os.getpid() if pid == "mine" else 1
    old.rename(tmp_path / f".bm25.old-{alive}")
    assert [h.id for h in BM25Index.load(folder).search("apples")] == ["old1"]
    assert not [p for p in tmp_path.iterdir() if ".old-" in p.name or "lock" in p.name]  # the temp folder waits


def test_a_running_swap_is_never_undone_by_a_reader(tmp_path):
    from retrievekit.core.index.folder_swap import _swap_lock

    # a reader that meets nothing at the path while a swap holds its lock leaves the old copy where it is
    folder = tmp_path / "bm25"
    BM25Index.build(OLD).save(folder)
    aside = tmp_path / ".bm25.old-1"
    with _swap_lock(folder, wait=True):
        os.replace(folder, aside)  # the swap's first rename, by the lock's holder
        assert restore_interrupted_swap(folder) is False and aside.is_dir() and not folder.exists()
        os.replace(aside, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]  # the lock file goes with its holder
