"""A LATTICE build against served models resumes after a SIGKILL without redoing a finished summary (issue #63,
item 6), and the builds keep the server's slots busy.

The scripted OpenAI-compatible server (``_async_llm_server``, a process of its own, 2 slots of each kind) writes the
summaries (a title made of the items' words and a digest of them, so every title names its inputs) and the leaf
vectors (its ``"words"`` model). A child process builds a bottom-up tree with a build folder, 2 calls in flight, and
is SIGKILLed once the journal holds some summaries; the rerun with the same folder sends no summary call whose reply
the journal holds (the server lists every reply it sent), sends exactly the missing ones, and gives the tree an
uninterrupted build gives (counted once the server has answered the requests the killed child left in flight).
The leaf vectors the child embedded are kept in the build folder too: the rerun sends no embedding request for a
leaf, only for the summaries.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from _async_llm_server import llm_server, stats
from _paths import REPO

from retrievekit.core.index.served_embedder import ServedEmbedder
from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import JOURNAL
from retrievekit.core.llm.served_spec import load_served_llm, parse_served_spec
from retrievekit.core.types import Passage

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

SLOTS, DELAY = 2, 0.1
WORDS = ["volcano", "magma", "ocean", "tide", "forest", "pine", "desert", "dune", "glacier", "comet", "violin", "wheat"]
DOCS = [
    Passage(id=f"d{i:03d}", text=f"{WORDS[i % 12]} {WORDS[(i * 5) % 12]} {WORDS[(i * 7 + 3) % 12]} note {i}.")
    for i in range(160)
]
CFG = TreeBuildConfig(max_children=4, max_concurrency=SLOTS)

_CHILD = """
    import sys
    from test_build_resume_served import build
    build(sys.argv[1], sys.argv[2])
"""


def build(url: str, build_dir: str | None = None):
    """The build every run makes: the served LLM and embedder at the server's slots, ``build_dir`` journaling."""
    llm = load_served_llm(parse_served_spec(f"openai:scripted@{url}", timeout=60, max_concurrency=SLOTS))
    embedder = ServedEmbedder("words", url, batch_size=8, max_concurrency=SLOTS)
    return build_bottom_up(DOCS, llm, embedder, CFG, build_dir=build_dir)


def _shape(tree) -> tuple[dict[str, tuple[str, tuple[str, ...]]], dict[str, np.ndarray]]:
    return {i: (n.text, tuple(n.children)) for i, n in tree.nodes.items()}, dict(tree.embeddings)


def _killed_mid_build(url: str, build_dir, total: int) -> list[str]:
    """Start the build in a child, SIGKILL it once its journal holds a summary; the journaled summaries."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "integrations"), str(REPO / "tests")])}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_CHILD), url, str(build_dir)], env=env)
    journal = build_dir / JOURNAL
    try:
        deadline = time.monotonic() + 120
        while not (journal.is_file() and journal.read_text().count("\n")) and child.poll() is None:
            assert time.monotonic() < deadline, "the child journaled nothing in 120 s"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
    assert child.returncode == -signal.SIGKILL  # killed, not finished
    done = [json.loads(line)["value"] for line in journal.read_text().splitlines() if line.endswith("}")]
    assert 0 < len(done) < total, (len(done), total)
    return done


def _quiet(server) -> None:
    """Wait until the server has answered every request the killed child left in flight (it still serves them
    and lists their replies): nothing serving and no new arrival over three delays."""
    deadline, seen = time.monotonic() + 30, -1
    while True:
        now = stats(server)
        if now["serving_chat"] == now["serving_words"] == 0 and len(now["arrivals"]) == seen:
            return
        assert time.monotonic() < deadline, "the server still serves the killed child's requests after 30 s"
        seen = len(now["arrivals"])
        time.sleep(3 * DELAY)


def test_a_build_killed_mid_way_resumes_without_redoing_a_finished_summary(tmp_path):
    with llm_server(DELAY, SLOTS, embed_delay=DELAY) as server:
        whole = build(server.url)
        total, whole_embeddings = whole.meta["llm_calls"], stats(server)["embeddings"]
        assert stats(server)["peak_chat"] == SLOTS and stats(server)["peak_words"] == SLOTS  # every slot busy
        done = _killed_mid_build(server.url, tmp_path / "b", total)
        _quiet(server)  # the replies to the killed child's last requests are not the resumed build's
        before, embeddings_before = len(stats(server)["chat_replies"]), stats(server)["embeddings"]
        resumed = build(server.url, tmp_path / "b")
        sent, embedded = stats(server)["chat_replies"][before:], stats(server)["embeddings"] - embeddings_before
    assert not set(sent) & set(done)  # no summary the killed build finished was asked again
    assert len(sent) == total - len(done) and resumed.meta["journal_reused"] == len(done)
    leaf_requests = len(DOCS) // 8  # the embedder's batches of 8 texts: asked by the killed child, not again
    assert resumed.meta["leaf_batches_reused"] == 1 and embedded == whole_embeddings - leaf_requests
    got, want = _shape(resumed), _shape(whole)
    assert got[0] == want[0]
    assert got[1].keys() == want[1].keys() and all(np.array_equal(got[1][k], want[1][k]) for k in want[1])
