"""LATTICE test doubles: a keyword-overlap chat LLM and a planted three-level tree with one gold path.

``KeywordLLM`` answers from the prompt text (keyword overlap with the query): its scripted replies are the point of
the tests that use it. Shared by the LATTICE core, judge-hook, integration and caller-object tests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from retrievekit.core.index.store import write_manifest
from retrievekit.core.lattice import SemanticTree, TreeNode
from retrievekit.core.lattice.tree import ROOT
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.types import Passage

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class KeywordLLM(ChatLLMBase):
    """Scores items by word overlap with the query; summaries = leading words; partitions = halves."""

    def __init__(self, replies: list[str] | None = None, fmt: str = "list") -> None:
        self.replies = list(replies or [])
        self.fmt = fmt
        self.calls = 0
        self.slate_sizes: list[int] = []

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.calls += 1
        text = prompt if isinstance(prompt, str) else prompt[-1].content
        if self.replies:
            out = self.replies.pop(0)
        elif "Query:" in text:
            query = _words(re.search(r"Query: (.*)", text).group(1))
            items = re.findall(r'^<data id="(\d+)">(.*)</data>$', text, flags=re.M)
            self.slate_sizes.append(len(items))
            scores = [min(100, 100 * len(query & _words(t)) // max(1, len(query))) for _, t in items]
            if self.fmt == "list":
                out = json.dumps({"scores": scores})
            else:
                out = json.dumps({"scores": [[int(i), s] for (i, _), s in zip(items, scores, strict=True)]})
        elif "topics" in text:
            n = len(re.findall(r"^\[(\d+)\]", text, flags=re.M))
            half = max(1, n // 2)
            out = json.dumps(
                {
                    "topics": [
                        {"title": "first", "items": list(range(1, half + 1))},
                        {"title": "second", "items": list(range(half + 1, n + 1))},
                    ]
                }
            )
        elif "summaries" in text:
            out = json.dumps({"summaries": ["short", "a bit longer", "the longest summary here"]})
        else:
            items = re.findall(r"^- (.*)$", text, flags=re.M)
            out = "Topic: " + "; ".join(i.split(":")[0][:20] for i in items[:3])
        self._record(trace, len(text) // 4, len(out) // 4)
        return Completion(out, len(text) // 4, len(out) // 4)


class PromptsLLM(KeywordLLM):
    """A :class:`KeywordLLM` that keeps every prompt it was sent (what the LLM was shown is the point)."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def complete(self, prompt, **kw):
        self.prompts.append(prompt if isinstance(prompt, str) else prompt[-1].content)
        return super().complete(prompt, **kw)


def planted_tree() -> SemanticTree:
    """root -> 3 topics -> 3 subtopics -> 3 leaves; the 'gold' path is t1 -> t1s2 -> leaf t1s2l0."""
    nodes = {ROOT: TreeNode(ROOT, "root")}
    objects = {}
    topics = []
    for t in range(3):
        tid = f"t{t}"
        topics.append(tid)
        subs = []
        for s in range(3):
            sid = f"{tid}s{s}"
            subs.append(sid)
            leaves = []
            for lf in range(3):
                lid = f"{sid}l{lf}"
                gold = (t, s, lf) == (1, 2, 0)
                text = "volcano eruption magma lava" if gold else f"filler text number {t}{s}{lf} weather"
                objects[lid] = Passage(id=lid, text=text)
                nodes[lid] = TreeNode(lid, text, is_leaf=True)
                leaves.append(lid)
            stext = "volcano magma lava" if (t, s) == (1, 2) else ("volcano" if t == 1 else f"weather {s}")
            nodes[sid] = TreeNode(sid, stext, children=leaves)
        nodes[tid] = TreeNode(tid, "geology volcano eruption" if t == 1 else f"sports {t}", children=subs)
    nodes[ROOT].children = topics
    return SemanticTree(nodes, objects)


class Crash(BaseException):
    """A process dying mid-build (not an Exception: nothing in the build may catch it)."""


def crashing_keyword_llm(n: int) -> KeywordLLM:
    """A :class:`KeywordLLM` (the same model a resumed build uses) that crashes after ``n`` calls."""
    llm = KeywordLLM()
    inner = llm.complete

    def complete(prompt, **kw):
        if llm.calls >= n:
            raise Crash()
        return inner(prompt, **kw)

    llm.complete = complete  # type: ignore[method-assign]
    return llm


TREE_TOPICS = [
    ("volcano", "Volcanoes erupt magma and lava from the crust"),
    ("heart", "The heart pumps blood through arteries and veins"),
    ("python", "Python programs use lists, dictionaries and functions"),
    ("wheat", "Wheat farmers harvest grain and bake bread"),
    ("comet", "Comets orbit the sun with icy tails of dust"),
    ("violin", "Violinists tune strings and play concertos"),
    ("tennis", "Tennis players serve and volley on grass courts"),
    ("vaccine", "Vaccines train the immune system against viruses"),
]
"""A topic word and a sentence each: the documents of the tree update tests (their i-th document is on topic i mod n)."""


def as_format_3(folder: Path, tree: SemanticTree) -> None:
    """Rewrite the tree folder ``folder`` (``tree`` saved, format version 4) as retrievekit wrote version 3: its
    nodes as ``nodes.jsonl`` lines (a leaf's without the text its object gives), its vectors named in
    ``vector_ids.json``; sealed again."""
    for f in folder.glob("*.npy"):
        if f.name not in ("vectors.npy", "object_offsets.npy"):
            f.unlink()
    lines = [tree.node_line(n) for n in tree.iter_nodes()]
    (folder / "nodes.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    (folder / "vector_ids.json").write_text(json.dumps(sorted(tree.embeddings)), encoding="utf-8")
    reseal_tree(folder, 3)


def reseal_tree(folder: Path, version: int) -> None:
    """Seal the tree folder ``folder`` again as format ``version`` with its manifest's fields (checksums of its files
    as they are now: a test's edit then passes them)."""
    data = json.loads((folder / "manifest.json").read_text())
    drop = {"format", "format_version", "retrievekit_version", "checksums"}
    write_manifest(folder, "lattice_tree", version, {k: v for k, v in data.items() if k not in drop})
