"""LATTICE's top-down partitions are a step the model-call drivers send (issue #60 item 4).

Before, each partition was one ``send_call`` after another, breadth first. Now the partitions are a step
(:func:`~retrievekit.core.lattice.top_down.partition_step`: one ``"lattice.partition"`` JSON call per node to split,
the nodes of one depth side by side up to ``max_concurrency``) driven by ``drive``: the same prompts, the same
repairs and fallbacks, the same tree.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time

import pytest
from _corpora import FRUIT

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.lattice import TreeBuildConfig
from retrievekit.core.lattice.build import start_build
from retrievekit.core.lattice.top_down import PARTITION_PROMPT, SUMMARY_PROMPT, build_top_down, partition_step
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.drivers import drive
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

DOCS = [Passage(id=f"d{i:02d}", text=f"{FRUIT[i % 6].text[:-1]}, note {i}.") for i in range(24)]
CFG = TreeBuildConfig(max_children=3, summary_levels=(2, 4))


def _summaries(text: str) -> list[str]:
    """The scripted summaries of a document: its first two words, then those and its note number."""
    words = text.split()
    return [" ".join(words[:2]), " ".join(words[:2]) + " note " + re.search(r"note (\d+)", text).group(1)]


def _topics(items: list[str]) -> dict:
    """Numbered items in pairs, with one number out of range, one repeat and the last item left out (repairs)."""
    n = len(items)
    pairs = [list(range(i, min(i + 1, n) + 1)) for i in range(1, n + 1, 2)]
    pairs[0].append(99)
    if len(pairs) > 1:
        pairs[1].append(1)
    pairs[-1] = [i for i in pairs[-1] if i != n] or pairs[-1]
    return {"topics": [{"title": f"topic {'-'.join(map(str, p))}", "items": p} for p in pairs]}


class Partitioner(ChatLLMBase):
    """Scripted by the prompt alone (so the order of calls does not matter): summaries by :func:`_summaries`,
    partitions by :func:`_topics`, except a partition of fine items about Rust, which gets no JSON (the embedding
    split). Each call takes 30 ms; the peak of partition calls in flight at once is recorded."""

    max_concurrency = 8

    def __init__(self, max_prompt_chars: int | None = None) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.partition_prompts: list[str] = []
        if max_prompt_chars is not None:
            self.max_prompt_chars = max_prompt_chars

    def _reply(self, text: str) -> str:
        if "Document:" in text:
            return json.dumps({"summaries": _summaries(text.split("Document:", 1)[1])})
        items = re.findall(r"^\[\d+\] (.*)$", text, flags=re.M)
        if any("Rust" in i and "note" in i for i in items):
            return "no JSON here"
        return json.dumps(_topics(items))

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        text = prompt if isinstance(prompt, str) else prompt[-1].content
        partition = "Document:" not in text
        with self.lock:
            if partition:
                self.partition_prompts.append(text)
                self.now += 1
                self.peak = max(self.peak, self.now)
        try:
            time.sleep(0.03)
            out = self._reply(text)
        finally:
            with self.lock:
                self.now -= int(partition)
        self._record(trace, len(text) // 4, len(out) // 4)
        return Completion(out, len(text) // 4, len(out) // 4)


def _shape(nodes) -> dict[str, list]:
    return {n: [nodes[n].text, list(nodes[n].children)] for n in sorted(nodes) if nodes[n].children}


def _digest(prompts: list[str]) -> str:
    return hashlib.sha256("\n---\n".join(sorted(prompts)).encode()).hexdigest()[:16]


GOLDEN: dict = {
    "shape": {
        "n1-130a341aff7a": ["topic 1-2-99", ["n2-d576c4a542bb", "n2-2a9924318255", "d18"]],
        "n1-27a7eff1c603": ["topic 5", ["n2-c4a118a51b92", "d21"]],
        "n1-b445176fc1e1": ["topic 3-4-1", ["n2-96137a52529a", "n2-f89489969e4b", "n2-2b156b3feb7a"]],
        "n2-2a9924318255": ["are / bananas", ["n3-9271e1d4fdda", "d19"]],
        "n2-2b156b3feb7a": ["nile / the", ["n3-5781f5983c95", "d23"]],
        "n2-96137a52529a": ["is / python", ["n3-f66dbb141308", "d20"]],
        "n2-c4a118a51b92": ["is / rust", ["d03", "d09", "d15"]],
        "n2-d576c4a542bb": ["apples / are", ["d00", "d06", "d12"]],
        "n2-f89489969e4b": ["everest / mount", ["n3-0cfcfbbc8aaf", "d22"]],
        "n3-0cfcfbbc8aaf": ["topic 1-2-99", ["d04", "d10", "d16"]],
        "n3-5781f5983c95": ["topic 1-2-99", ["d05", "d11", "d17"]],
        "n3-9271e1d4fdda": ["topic 1-2-99", ["d01", "d07", "d13"]],
        "n3-f66dbb141308": ["topic 1-2-99", ["d02", "d08", "d14"]],
        "root": ["root", ["n1-130a341aff7a", "n1-b445176fc1e1", "n1-27a7eff1c603"]],
    },
    "counters": {
        "partition_out_of_range": 5,
        "partition_duplicates": 5,
        "partition_missing": 5,
        "embedding_partitions": 3,
    },
    "prompts": "18ef38984e2719e1",
}
"""The tree, the counters and the partition prompts of the build before partitions were a step (recorded then)."""

COUNTERS = ("partition_out_of_range", "partition_duplicates", "partition_missing", "embedding_partitions")


def test_partitions_go_side_by_side_with_the_same_prompts_repairs_and_tree(minilm):
    wide, serial = Partitioner(), Partitioner()
    tree = build_top_down(DOCS, wide, minilm, CFG)
    one_at_a_time = build_top_down(
        DOCS, serial, minilm, TreeBuildConfig(max_children=3, summary_levels=(2, 4), max_concurrency=1)
    )
    got = {
        "shape": _shape(tree.nodes),
        "counters": {c: tree.meta.get(c, 0) for c in COUNTERS},
        "prompts": _digest(wide.partition_prompts),
    }
    assert got == GOLDEN
    assert _shape(one_at_a_time.nodes) == got["shape"] and _digest(serial.partition_prompts) == got["prompts"]
    assert serial.peak == 1 and wide.peak >= 2  # before: one partition after another whatever max_concurrency said


def test_the_partition_step_is_driven_and_its_calls_meet_the_drivers_bound(minilm):
    llm = Partitioner()
    run = start_build(DOCS, minilm, CFG, None, Trace(), llm=llm, prompts=[SUMMARY_PROMPT, PARTITION_PROMPT])
    vec = dict(zip([o.id for o in run.objects], run.leaf_vectors, strict=True))
    summaries = {d.id: _summaries(d.text) for d in DOCS}
    drive(partition_step(run, sorted(vec), summaries, vec, batch=4), llm)
    assert _shape(run.nodes) == GOLDEN["shape"] and ROOT in run.nodes

    small = Partitioner(max_prompt_chars=len(PARTITION_PROMPT))  # every partition prompt is over it
    run = start_build(DOCS, minilm, CFG, None, Trace(), llm=small, prompts=[SUMMARY_PROMPT, PARTITION_PROMPT])
    with pytest.raises(InvalidInputError, match=r"max_prompt_chars"):
        drive(partition_step(run, sorted(vec), summaries, vec, batch=4), small)
    assert small.partition_prompts == []  # refused by the driver before any request
