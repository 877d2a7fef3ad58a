"""A LATTICE build journal entry is reused only by the build that would produce it again (#15 item 5).

Before, the journal was keyed by leaf ids only: a rebuild with another LLM made 0 calls and kept every old summary.
"""

from __future__ import annotations

import json

import pytest
from _corpora import FRUIT
from _lattice import Crash, KeywordLLM, crashing_keyword_llm

from retrievekit.core.lattice import TreeBuildConfig
from retrievekit.core.lattice import bottom_up as bottom_up_module
from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.method import build_lattice, create_lattice
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage

DOCS = [Passage(id=f"d{i}", text=f"{FRUIT[i % 6].text} number {i}") for i in range(12)]
CFG = TreeBuildConfig(max_children=3, max_concurrency=1)


class OtherLLM(KeywordLLM):
    """Another model: its summaries say so."""

    name = "other-model"

    def complete(self, prompt, **kw):
        out = super().complete(prompt, **kw)
        text = prompt if isinstance(prompt, str) else prompt[-1].content
        if "What topic" in text:  # a node summary
            return Completion("Other: " + out.text, out.prompt_tokens, out.completion_tokens)
        return out


def _summaries(tree) -> list[str]:
    return sorted(n.text for n in tree.nodes.values() if not n.is_leaf and n.id != ROOT)


@pytest.fixture
def full_calls(minilm) -> int:
    llm = KeywordLLM()
    build_bottom_up(DOCS, llm, minilm, CFG)
    return llm.calls


@pytest.fixture
def interrupted(tmp_path, minilm):
    """A build dir whose journal holds 3 summaries written by KeywordLLM."""
    with pytest.raises(Crash):
        build_bottom_up(DOCS, crashing_keyword_llm(3), minilm, CFG, build_dir=tmp_path / "b")
    lines = (tmp_path / "b" / "journal.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["v"] == 2 for line in lines)
    return tmp_path / "b"


def test_same_llm_prompt_and_settings_resume(interrupted, minilm, full_calls):
    again = KeywordLLM()
    tree = build_bottom_up(DOCS, again, minilm, CFG, build_dir=interrupted)
    assert again.calls == full_calls - 3 and tree.meta["journal_reused"] == 3


def test_another_llm_reuses_nothing(interrupted, minilm, full_calls):
    other = OtherLLM()
    tree = build_bottom_up(DOCS, other, minilm, CFG, build_dir=interrupted)
    assert other.calls == full_calls
    assert all(s.startswith("Other: ") for s in _summaries(tree))


def test_another_setting_or_prompt_reuses_nothing(interrupted, minilm, full_calls, monkeypatch):
    more_threads = KeywordLLM()  # concurrency changes nothing a result depends on: still reused
    build_bottom_up(DOCS, more_threads, minilm, TreeBuildConfig(max_children=3, max_concurrency=2),
                    build_dir=interrupted)  # fmt: skip
    assert more_threads.calls == full_calls - 3
    changed = KeywordLLM()
    build_bottom_up(DOCS, changed, minilm, TreeBuildConfig(max_children=3, max_concurrency=1, summary_max_tokens=24),
                    build_dir=interrupted)  # fmt: skip
    assert changed.calls == full_calls
    monkeypatch.setattr(bottom_up_module, "SUMMARY_PROMPT", bottom_up_module.SUMMARY_PROMPT + " Be brief.")
    reprompted = KeywordLLM()
    build_bottom_up(DOCS, reprompted, minilm, CFG, build_dir=interrupted)
    assert reprompted.calls == full_calls


def test_rebuild_true_ignores_the_journal(tmp_path, minilm, full_calls):
    tree_dir = tmp_path / "tree"
    with pytest.raises(Crash):
        create_lattice(
            DOCS, llm=crashing_keyword_llm(3), embedder=minilm, tree_dir=tree_dir, max_children=3, max_concurrency=1
        )
    assert (tmp_path / "tree.build" / "journal.jsonl").is_file()
    llm = KeywordLLM()
    create_lattice(DOCS, llm=llm, embedder=minilm, tree_dir=tree_dir, rebuild=True, max_children=3, max_concurrency=1)
    assert llm.calls == full_calls
    assert not (tmp_path / "tree.build").exists()  # removed once the tree is saved


def test_bench_cache_folder_names_the_llm(tmp_path, minilm, monkeypatch):
    monkeypatch.setattr("retrievekit.core.lattice.method._default_embedder", lambda: minilm)
    opts = {"max_children": "3", "max_concurrency": "1"}
    a = build_lattice(MethodContext(corpus=DOCS, work_dir=tmp_path, llm=KeywordLLM(), options=opts))
    b = build_lattice(MethodContext(corpus=DOCS, work_dir=tmp_path, llm=OtherLLM(), options=opts))
    folders = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("lattice-"))
    assert len(folders) == 2 and any("other-model" in f for f in folders)
    assert all(s.startswith("Other: ") for s in _summaries(b.tree)) and not _summaries(a.tree)[0].startswith("Other")
