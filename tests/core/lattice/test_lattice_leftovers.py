"""A saved LATTICE tree leaves no build journal behind; a build killed before saving keeps it, and the next build
resumes from it (the journal's only job) and then removes it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from _corpora import FRUIT
from _lattice import KeywordLLM
from _paths import REPO

from retrievekit.core.lattice import create_lattice
from retrievekit.core.types import Passage

DOCS = list(FRUIT) + [Passage(id=f"x{i}", text=f"Rivers and mountains {i}.") for i in range(6)]

_KILLED_AFTER_THE_BUILD = """
    import os, signal, sys
    from _corpora import FRUIT
    from _lattice import KeywordLLM
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.lattice import method
    from retrievekit.core.lattice.tree import SemanticTree
    from retrievekit.core.types import Passage

    docs = list(FRUIT) + [Passage(id=f"x{i}", text=f"Rivers and mountains {i}.") for i in range(6)]
    SemanticTree.save = lambda self, path: os.kill(os.getpid(), signal.SIGKILL)  # killed while saving
    method.create_lattice(docs, llm=KeywordLLM(), embedder=MiniLMEmbedder.default(), tree_dir=sys.argv[1],
                          max_children=4, num_iters=4)
"""


def test_a_saved_tree_leaves_no_build_journal(tmp_path, minilm):
    lat = create_lattice(DOCS, llm=KeywordLLM(), embedder=minilm, tree_dir=tmp_path / "tree", max_children=4)
    assert (tmp_path / "tree" / "manifest.json").is_file() and lat.tree.num_leaves == len(DOCS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]


def test_a_killed_build_keeps_its_journal_for_the_next_one(tmp_path, minilm):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    code = textwrap.dedent(_KILLED_AFTER_THE_BUILD)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "tree")], env=env, timeout=300, capture_output=True
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert (tmp_path / "tree.build" / "journal.jsonl").is_file() and not (tmp_path / "tree").exists()
    llm = KeywordLLM()
    create_lattice(DOCS, llm=llm, embedder=minilm, tree_dir=tmp_path / "tree", max_children=4, num_iters=4)
    assert llm.calls == 0  # every summary came from the journal
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]
