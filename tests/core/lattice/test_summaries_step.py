"""LATTICE's summaries are steps the model-call drivers send (issue #60 item 1: "tree summaries (build and insert)").

Before, each summary was one ``llm.complete`` on a thread of its own pool, and an insert refreshed the touched
nodes' summaries one after another whatever ``max_concurrency`` said.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time

from _corpora import FRUIT
from _lattice import KeywordLLM, crashing_keyword_llm

from retrievekit.core.lattice import TreeBuildConfig
from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.insert import insert_documents
from retrievekit.core.lattice.summarize import BuildJournal, journaled_step, read_summary, summary_call
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.types import Passage


class Overlapping(KeywordLLM):
    """KeywordLLM that takes 50 ms a call and records how many calls it had in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def complete(self, prompt, **kw):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(0.05)
            with self.lock:
                return super().complete(prompt, **kw)
        finally:
            with self.lock:
                self.now -= 1


def _internal_texts(tree) -> dict[str, str]:
    return {n: tree.nodes[n].text for n in tree.nodes if not tree.nodes[n].is_leaf and n != ROOT}


def test_an_insert_refreshes_one_depth_side_by_side_with_the_same_summaries(minilm):
    docs = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} v{i}") for i in range(18)]
    tree = build_bottom_up(docs, KeywordLLM(), minilm, TreeBuildConfig(max_children=3))
    new = [Passage(id=f"new{i}", text=f"{FRUIT[i].text} inserted") for i in range(6)]  # one per topic
    one_at_a_time, side_by_side = copy.deepcopy(tree), copy.deepcopy(tree)
    serial, wide = Overlapping(), Overlapping()
    a = insert_documents(one_at_a_time, new, serial, minilm, TreeBuildConfig(max_children=3, max_concurrency=1))
    b = insert_documents(side_by_side, new, wide, minilm, TreeBuildConfig(max_children=3, max_concurrency=4))
    assert a == b and a["refreshed_summaries"] >= 3 and serial.calls == wide.calls == a["refreshed_summaries"]
    assert serial.peak == 1 and wide.peak >= 2  # before: one call at a time whatever max_concurrency said
    assert _internal_texts(side_by_side) == _internal_texts(one_at_a_time)


def test_a_summary_stage_is_one_step_either_driver_sends_journaled_per_batch(tmp_path):
    groups = [
        ["Apples grow on trees", "Pears too"],
        ["Python scripts", "Rust crates"],
        ["Apples grow on trees", "Pears too"],
    ]

    def step(journal, stats):
        return journaled_step(
            journal,
            [journal.key("summary", g) for g in groups],
            ask=lambda i: summary_call(groups[i], max_tokens=20),
            read=lambda i, reply: read_summary(reply, groups[i], stats=stats),
            batch=1,
        )

    llm, stats = KeywordLLM(), {}
    got = asyncio.run(adrive(step(BuildJournal(tmp_path, scope="s"), stats), llm))
    assert got[0] == got[2] == "Apples grow on trees; Pears too" and llm.calls == 2  # one call per distinct group
    assert len((tmp_path / "journal.jsonl").read_text().splitlines()) == 2 and not stats
    again = BuildJournal(tmp_path, scope="s")
    assert drive(step(again, stats), crashing_keyword_llm(0)) == got and again.reused == 2  # nothing redone


def test_a_failed_summary_reply_is_an_extractive_label_counted_and_noted(tmp_path):
    from retrievekit.core.errors import LLMOutputError
    from retrievekit.core.trace import Trace

    class Refusing(KeywordLLM):
        def complete(self, prompt, **kw):
            raise LLMOutputError("the reply was cut off")

    stats, trace = {}, Trace()
    journal = BuildJournal(tmp_path, scope="s")
    texts = ["Apples grow on trees", "Pears too"]
    step = journaled_step(
        journal,
        [journal.key("summary", texts)],
        ask=lambda i: summary_call(texts, max_tokens=20),
        read=lambda i, reply: read_summary(reply, texts, trace=trace, stats=stats),
    )
    assert drive(step, Refusing()) == ["Apples grow on trees; Pears too"] and stats == {"extractive_summaries": 1}
    assert [e.kind for e in trace.events] == ["fallback"] and "LLMOutputError" in trace.events[0].message
