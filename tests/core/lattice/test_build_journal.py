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
from retrievekit.core.lattice.summarize import llm_identity
from retrievekit.core.lattice.top_down import build_top_down
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.delegate import ChatDelegate
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


class Adapter(ChatLLMBase):
    """A framework adapter (as ``as_chat_llm`` makes): no model name of its own, the model in ``.llm``."""

    def __init__(self, llm) -> None:
        self.llm = llm

    def complete(self, prompt, **kw):
        return self.llm.complete(prompt, **kw)


class NamedEmbedder:
    """The same vectors under another embedder's name."""

    name = "another-embedder"

    def __init__(self, inner) -> None:
        self.inner = inner

    def embed_documents(self, texts):
        return self.inner.embed_documents(texts)


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


def test_the_model_behind_an_adapter_is_part_of_the_key(tmp_path, minilm, full_calls):
    with pytest.raises(Crash):
        build_bottom_up(DOCS, Adapter(crashing_keyword_llm(3)), minilm, CFG, build_dir=tmp_path / "b")
    other = OtherLLM()
    tree = build_bottom_up(DOCS, Adapter(other), minilm, CFG, build_dir=tmp_path / "b")
    assert other.calls == full_calls and all(s.startswith("Other: ") for s in _summaries(tree))
    same = KeywordLLM()
    build_bottom_up(DOCS, Adapter(same), minilm, CFG, build_dir=tmp_path / "b")
    assert same.calls == full_calls - 3  # the first adapter's 3 entries are still reused by its own model


def test_a_judges_base_model_is_part_of_its_identity():
    class Judge(ChatDelegate):
        def __init__(self, base=None, load_base=None) -> None:
            self.base, self.load_base = base, load_base

    assert llm_identity(Judge(base=KeywordLLM())) != llm_identity(Judge(base=OtherLLM()))
    assert llm_identity(Judge(load_base=OtherLLM)) == llm_identity(Judge(base=OtherLLM()))

    def broken():
        raise OSError("no weights")

    assert llm_identity(Judge(load_base=broken)).endswith("Judge:")  # the build's own calls meet the failure


def test_another_embedder_reuses_nothing(interrupted, minilm, full_calls):
    llm = KeywordLLM()
    build_bottom_up(DOCS, llm, NamedEmbedder(minilm), CFG, build_dir=interrupted)
    assert llm.calls == full_calls


def test_an_old_format_journal_is_ignored_with_a_warning(tmp_path, minilm, full_calls):
    build = tmp_path / "b"
    build.mkdir()
    tree = build_bottom_up(DOCS, KeywordLLM(), minilm, CFG)
    old = [{"key": f"summary:{nid}", "value": "stale"} for nid in tree.nodes if not tree.nodes[nid].is_leaf]
    (build / "journal.jsonl").write_text("".join(json.dumps(line) + "\n" for line in old))
    llm = KeywordLLM()
    with pytest.warns(RuntimeWarning, match=f"ignoring {len(old)} build journal entries of another format"):
        again = build_bottom_up(DOCS, llm, minilm, CFG, build_dir=build)
    assert llm.calls == full_calls and again.meta["journal_reused"] == 0 and "stale" not in _summaries(again)


def _tree_bytes(tree, folder) -> dict[str, bytes]:
    """Every file of the saved tree, the manifest without its timings and call counts."""
    tree.save(folder)
    out = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "manifest.json"}
    manifest = json.loads((folder / "manifest.json").read_text())
    meta = manifest.pop("meta")
    manifest.pop("manifest_check")  # a hash over the timings and call counts too
    out["manifest"] = json.dumps([manifest, meta["config"], meta["builder"]], sort_keys=True).encode()
    return out


@pytest.mark.parametrize(("build", "done"), [(build_bottom_up, 4), (build_top_down, len(DOCS) + 1)])
def test_a_resumed_build_is_byte_identical_to_an_uninterrupted_one(build, done, tmp_path, minilm):
    whole = build(DOCS, KeywordLLM(), minilm, CFG)  # top-down: killed after its summaries and the root's partition
    with pytest.raises(Crash):
        build(DOCS, crashing_keyword_llm(done), minilm, CFG, build_dir=tmp_path / "b")
    resumed_llm = KeywordLLM()
    resumed = build(DOCS, resumed_llm, minilm, CFG, build_dir=tmp_path / "b")
    assert resumed.meta["journal_reused"] == done and resumed_llm.calls == whole.meta["llm_calls"] - done
    assert _tree_bytes(resumed, tmp_path / "resumed") == _tree_bytes(whole, tmp_path / "whole")


def test_top_down_partitions_are_keyed_by_their_leaf_ids(tmp_path, minilm):
    build_top_down(DOCS, KeywordLLM(), minilm, CFG, build_dir=tmp_path / "b")
    renamed = [Passage(id=f"e{d.id}", text=d.text) for d in DOCS]  # same texts, so the same document summaries
    llm = KeywordLLM()
    tree = build_top_down(renamed, llm, minilm, CFG, build_dir=tmp_path / "b")
    assert sorted(tree.leaf_ids()) == sorted(d.id for d in renamed)
    assert 0 < llm.calls < len(DOCS)  # partitions redone, document summaries reused
