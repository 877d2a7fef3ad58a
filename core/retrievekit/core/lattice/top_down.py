"""Top-down tree construction (paper §3.1, the builder used for most BRIGHT subsets; no public code exists).

1. **Multi-level summaries.** One LLM call per document returns ``len(summary_levels)`` summaries, coarse to fine
   (word limits, e.g. 2 / 4 / 12 words), as schema-validated JSON; a failed call falls back to the document's
   leading words (counted).
2. **Recursive partition.** Starting from the root with every leaf, a node with more than M leaves picks a summary
   level (``SelectSummaryLevel``: the coarsest level whose unique summaries number more than M while their text
   fits ``partition_max_chars``; else the finest that fits), numbers the unique summaries and asks the LLM for at
   most M topics: ``{"topics": [{"title": ..., "items": [1, 4, ...]}, ...]}``. The mapping is repaired so every
   leaf lands in exactly one topic (out-of-range items dropped, repeats keep the first topic, missing items go to
   the topic with the closest embedding centroid) and every repair is counted. A reply with fewer than two usable
   topics, a failed call, or text too long for one call falls back to embedding k-means for that node (counted).
   Topic titles become the node texts; children with more than M leaves are queued again.

Every partition and document summary is journaled in ``build_dir`` (resumable build). Both stages are steps driven
by the sync driver at the build's ``max_concurrency``: the document summaries (one ``"lattice.document_summary"``
JSON call per document not journaled yet, in batches of one round) and the partitions (:func:`partition_step`: one
``"lattice.partition"`` JSON call per node to split, the nodes queued breadth first sent side by side, their replies
read in queue order, so the tree is the one a node-by-node build makes).

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.llm.base import ChatLLMBase
    >>> from retrievekit.core.llm.protocol import Completion
    >>> import numpy as np, json
    >>> class Fake(ChatLLMBase):
    ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
    ...         text = prompt[-1].content
    ...         if "topics" in text:
    ...             n = sum(1 for l in text.splitlines() if l.startswith("["))
    ...             return Completion(json.dumps({"topics": [{"title": "odd", "items": list(range(1, n + 1, 2))},
    ...                                                    {"title": "even", "items": list(range(2, n + 1, 2))}]}))
    ...         return Completion('{"summaries": ["a b", "a b c d", "a b c d e"]}')
    >>> from retrievekit.core.fakes import LengthEmbedder as Emb
    >>> docs = [Passage(id=f"d{i}", text=f"doc {i}") for i in range(5)]
    >>> tree = build_top_down(docs, Fake(), Emb(), TreeBuildConfig(max_children=2, summary_levels=(2,)))
    >>> tree.num_leaves, tree.max_branching <= 2
    (5, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.build import BuildRun, embed_texts, start_build
from retrievekit.core.lattice.clustering import kmeans
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import drive_build, journaled_step, short_text, step_batch
from retrievekit.core.lattice.tree import ROOT, SemanticTree, TreeNode, internal_id
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.concurrency import llm_concurrency
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["build_top_down", "partition_schema", "partition_step", "repair_partition", "select_summary_level"]

SUMMARY_PROMPT = "Summarise this document at {n} levels of detail, from coarse to fine: {levels}.\n\nDocument: {text}"
PARTITION_PROMPT = (
    "Group these numbered descriptions into at most {m} topics. Give each topic a short title and list the "
    "numbers of its descriptions; every number must appear in exactly one topic.\n\n{items}"
)


def _summary_schema(n: int) -> dict[str, Any]:
    arr = {"type": "array", "items": {"type": "string", "maxLength": 200}, "minItems": n, "maxItems": n}
    return {
        "type": "object",
        "properties": {"summaries": arr},
        "required": ["summaries"],
        "additionalProperties": False,
    }


def partition_schema(max_topics: int) -> dict[str, Any]:
    """JSON schema of a partition reply: at most ``max_topics`` topics with a title and item numbers.

    Examples:
        >>> partition_schema(5)["properties"]["topics"]["maxItems"]
        5
    """
    topic = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 120},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["title", "items"],
        "additionalProperties": False,
    }
    topics = {"type": "array", "items": topic, "minItems": 1, "maxItems": max_topics}
    return {"type": "object", "properties": {"topics": topics}, "required": ["topics"], "additionalProperties": False}


def select_summary_level(levels: Sequence[Sequence[str]], max_children: int, max_chars: int) -> int | None:
    """``SelectSummaryLevel``: index of the coarsest level with more than M unique summaries that fits ``max_chars``;
    else the finest level that fits; None when none fits.

    Args:
        levels: per level, the summaries of the node's leaves.

    Examples:
        >>> select_summary_level([["a", "a", "b"], ["a1", "a2", "b1"]], 2, 100)
        1
        >>> select_summary_level([["a", "a", "b"], ["a1", "a2", "b1"]], 5, 100)
        1
        >>> select_summary_level([["x" * 50] * 3], 2, 10) is None
        True
    """
    fits = []
    for li, sums in enumerate(levels):
        unique = sorted(set(sums))
        if sum(len(u) + 6 for u in unique) <= max_chars:
            fits.append(li)
            if len(unique) > max_children:
                return li
    return fits[-1] if fits else None


def repair_partition(
    topics: Sequence[tuple[str, Sequence[int]]], n_items: int, centroid_of: Any = None
) -> tuple[list[tuple[str, list[int]]], dict[str, int]]:
    """Make a partition valid: items ``1..n_items`` each in exactly one topic; returns (topics, repair counts).

    Out-of-range numbers are dropped, repeats keep the first topic, missing items go to ``centroid_of(item,
    topics)`` (an index; the largest topic when None), empty topics are dropped.

    Examples:
        >>> repair_partition([("A", [1, 2, 9]), ("B", [2, 3])], 4)
        ([('A', [1, 2, 4]), ('B', [3])], {'out_of_range': 1, 'duplicates': 1, 'missing': 1, 'empty_topics': 0})
    """
    counts = {"out_of_range": 0, "duplicates": 0, "missing": 0, "empty_topics": 0}
    seen: set[int] = set()
    out: list[tuple[str, list[int]]] = []
    for title, items in topics:
        keep: list[int] = []
        for it in items:
            if not isinstance(it, int) or isinstance(it, bool) or not 1 <= it <= n_items:
                counts["out_of_range"] += 1
            elif it in seen:
                counts["duplicates"] += 1
            else:
                seen.add(it)
                keep.append(it)
        out.append((str(title).strip() or "topic", keep))
    nonempty = [t for t in out if t[1]]
    counts["empty_topics"] = len(out) - len(nonempty)
    out = nonempty
    missing = [i for i in range(1, n_items + 1) if i not in seen]
    counts["missing"] = len(missing)
    if out:
        for it in missing:
            j = centroid_of(it, out) if centroid_of is not None else max(range(len(out)), key=lambda t: len(out[t][1]))
            out[j][1].append(it)
    elif missing:
        out = [("topic", missing)]
    return [(t, sorted(items)) for t, items in out], counts


def _summary_call(obj: DataObject, cfg: TreeBuildConfig) -> ModelCall:
    """The JSON call asking for ``obj``'s summaries at every level, coarse to fine."""
    levels = list(cfg.summary_levels)
    spec = ", ".join(f"at most {w} words" for w in levels)
    prompt = SUMMARY_PROMPT.format(n=len(levels), levels=spec, text=short_text(obj.index_text(), 600))
    return ModelCall.json(
        "lattice.document_summary",
        prompt,
        _summary_schema(len(levels)),
        max_tokens=24 + 8 * sum(levels),
        retries=cfg.retries,
    )


def _read_summary(obj: DataObject, reply: Any, run: BuildRun) -> list[str]:
    """``obj``'s summaries from ``reply`` (or its failure, an exception value): the first words of its text when the
    call failed or a level came back empty (counted)."""
    levels = list(run.config.summary_levels)
    try:
        if isinstance(reply, BaseException):
            raise reply
        got = reply.value
        out = [" ".join(str(s).split()[:w]) for s, w in zip(got["summaries"], levels, strict=True)]
        if not all(out):
            raise LLMOutputError("empty summary")
    except (LLMOutputError, ValueError, KeyError, TypeError):
        run.bump("extractive_summaries")
        words = obj.index_text().split()
        out = [" ".join(words[:w]) or obj.id for w in levels]
    return out


def _summaries_step(run: BuildRun, llm: ChatLLM) -> Step[list[Any]]:
    """Every leaf's multi-level summaries as a step: one JSON call per document not journaled yet, in batches of a
    few rounds of as many calls as may be in flight (:func:`step_batch`), each reply read and journaled as its batch
    comes back."""
    cfg, objects = run.config, run.objects
    n = len(cfg.summary_levels)
    return journaled_step(
        run.journal,
        [run.journal.key("docsum", o.index_text()) for o in objects],
        ask=lambda i: _summary_call(objects[i], cfg),
        read=lambda i, reply: _read_summary(objects[i], reply, run),
        reuse=lambda done: [str(s) for s in done] if isinstance(done, list) and len(done) == n else None,
        batch=step_batch(llm, cfg.max_concurrency),
        progress=cfg.progress,
        desc="summaries",
    )


def _summaries(run: BuildRun, llm: ChatLLM) -> dict[str, list[str]]:
    """Step 1: multi-level summaries of every leaf (none when the corpus fits under the root)."""
    cfg = run.config
    if len(run.objects) <= cfg.max_children:
        return {}
    run.bump("summaries", len(run.objects))
    step = _summaries_step(run, llm)
    sums = drive_build(step, llm, into=run.trace, calls=Trace(), max_concurrency=cfg.max_concurrency)
    return {obj.id: s for obj, s in zip(run.objects, sums, strict=True)}


def partition_step(
    run: BuildRun,
    leaf_ids: list[str],
    summaries: dict[str, list[str]],
    vec: dict[str, np.ndarray],
    *,
    batch: int = 1,
) -> Step[None]:
    """Step 2 as a step: split the root, then every node over ``max_children`` leaves, breadth first, into
    ``run.nodes``. Each node to split that the journal does not hold is one ``"lattice.partition"`` JSON call; up to
    ``batch`` of them (the calls that may be in flight at once) are yielded side by side, and their replies are read
    and journaled in queue order, so the tree is the one a node-by-node build makes.

    Examples:
        >>> import numpy as np
        >>> from retrievekit.core.fakes import FixedReplyLLM, LengthEmbedder
        >>> from retrievekit.core.llm.drivers import drive
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id=f"d{i}", text="x" * i) for i in range(1, 6)]
        >>> run = start_build(docs, LengthEmbedder(), TreeBuildConfig(max_children=2, summary_levels=(2,)), None, None)
        >>> vec = dict(zip([d.id for d in docs], run.leaf_vectors))
        >>> reply = '{"topics": [{"title": "short", "items": [1, 2]}, {"title": "long", "items": [3, 4, 5]}]}'
        >>> drive(partition_step(run, sorted(vec), {d.id: [d.text] for d in docs}, vec), FixedReplyLLM(reply))
        >>> [run.nodes[c].text for c in run.nodes["root"].children]
        ['short', 'long']
    """
    nodes, m = run.nodes, run.config.max_children
    nodes[ROOT] = TreeNode(id=ROOT, text="root")
    queue: list[tuple[str, list[str], int]] = [(ROOT, leaf_ids, 0)]
    while queue:
        chunk: list[tuple[str, list[str], int]] = []
        while queue and len(chunk) < max(1, int(batch)):
            nid, leaves, depth = queue.pop(0)
            if len(leaves) <= m:
                nodes[nid].children = list(leaves)
            else:
                chunk.append((nid, leaves, depth))
        splits = [_plan_split(nid, leaves, summaries, run) for nid, leaves, _ in chunk]
        calls = [s.call for s in splits if s.call is not None]
        replies = iter((yield calls) if calls else [])  # in the order of the nodes that asked
        for (nid, _, depth), split in zip(chunk, splits, strict=True):
            reply = next(replies) if split.call is not None else None
            children: list[str] = []
            for title, members in _finish_split(split, reply, summaries, vec, run):
                if len(members) == 1:
                    children.append(members[0])
                    continue
                cid = internal_id(depth + 1, members)
                nodes[cid] = TreeNode(id=cid, text=title)
                children.append(cid)
                queue.append((cid, members, depth + 1))
            nodes[nid].children = children


def _partition_all(
    run: BuildRun, leaf_ids: list[str], summaries: dict[str, list[str]], vec: dict[str, np.ndarray], llm: ChatLLM
) -> None:
    """Step 2: :func:`partition_step` driven by the sync driver at the build's ``max_concurrency``."""
    cfg = run.config
    step = partition_step(run, leaf_ids, summaries, vec, batch=llm_concurrency(llm, cfg.max_concurrency))
    drive_build(step, llm, into=run.trace, calls=Trace(), max_concurrency=cfg.max_concurrency)


def _node_embeddings(
    nodes: dict[str, TreeNode], vec: dict[str, np.ndarray], embedder: Embedder
) -> dict[str, np.ndarray]:
    """Leaf vectors, embedded internal titles, and the mean leaf vector for the root."""
    embeddings = dict(vec)
    internal = [n for n in nodes if not nodes[n].is_leaf and n != ROOT]
    for n, v in zip(internal, embed_texts(embedder, [nodes[n].text for n in internal]), strict=True):
        embeddings[n] = v
    embeddings[ROOT] = np.mean(np.stack(list(vec.values())), axis=0)
    return embeddings


def build_top_down(
    corpus: Sequence[DataObject],
    llm: ChatLLM,
    embedder: Embedder,
    config: TreeBuildConfig | None = None,
    *,
    build_dir: str | Path | None = None,
    trace: Trace | None = None,
) -> SemanticTree:
    """Build a top-down semantic tree over ``corpus`` (see the module docstring).

    Examples:
        >>> build_top_down([], None, None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    if config is not None and config.summaries != "llm":
        raise InvalidInputError("the top-down build partitions with the LLM: summaries='extractive' is bottom-up only")
    run = start_build(corpus, embedder, config, build_dir, trace, llm=llm, prompts=[SUMMARY_PROMPT, PARTITION_PROMPT])
    by_id = {o.id: o for o in run.objects}
    vec = dict(zip(by_id, run.leaf_vectors, strict=True))
    summaries = _summaries(run, llm)
    _partition_all(run, sorted(by_id), summaries, vec, llm)
    embeddings = _node_embeddings(run.nodes, vec, embedder)
    return SemanticTree(run.nodes, by_id, embeddings=embeddings, meta=run.meta("top_down"))


def _embedding_split(leaves: list[str], vec: dict[str, np.ndarray], m: int, seed: int) -> list[tuple[str, list[str]]]:
    x = np.stack([vec[i] for i in leaves]).astype(np.float64)
    k = min(m, max(2, math.ceil(len(leaves) / m)))
    labels = kmeans(x, k, seed=seed)
    groups: dict[int, list[str]] = {}
    for lid, lab in zip(leaves, labels.tolist(), strict=True):
        groups.setdefault(int(lab), []).append(lid)
    if len(groups) < 2:  # identical vectors (duplicates): even chunks
        size = math.ceil(len(leaves) / k)
        groups = {i: leaves[i * size : (i + 1) * size] for i in range(k) if leaves[i * size : (i + 1) * size]}
    return [("", sorted(g)) for g in groups.values()]


@dataclass
class _Split:
    """One node to split: its journal key and either its journaled groups, or its partition call (None when the
    summaries are too long for one) with the unique summaries the reply numbers and the leaves behind each."""

    nid: str
    leaves: list[str]
    key: str
    done: list[tuple[str, list[str]]] | None = None
    call: ModelCall | None = None
    unique: list[str] = field(default_factory=list)
    members_of: dict[str, list[str]] = field(default_factory=dict)


def _plan_split(nid: str, leaves: list[str], summaries: dict[str, list[str]], run: BuildRun) -> _Split:
    """What splitting ``nid`` takes (no side effect: the journal is only read)."""
    cfg, journal, m = run.config, run.journal, run.config.max_children
    key = journal.key("partition", nid, leaves, [summaries[lid] for lid in leaves])  # the value names leaf ids
    done = journal.get(key)
    if isinstance(done, list) and done:
        return _Split(nid, leaves, key, done=[(str(t), [str(x) for x in members]) for t, members in done])
    per_level = [[summaries[lid][li] for lid in leaves] for li in range(len(cfg.summary_levels))]
    li = select_summary_level(per_level, m, cfg.partition_max_chars)
    if li is None:
        return _Split(nid, leaves, key)
    unique = sorted(set(per_level[li]))
    items = "\n".join(f"[{i}] {u}" for i, u in enumerate(unique, 1))
    members_of: dict[str, list[str]] = {}
    for lid, s in zip(leaves, per_level[li], strict=True):
        members_of.setdefault(s, []).append(lid)
    call = ModelCall.json(
        "lattice.partition",
        PARTITION_PROMPT.format(m=m, items=items),
        partition_schema(m),
        max_tokens=cfg.partition_max_tokens,
        retries=cfg.retries,
    )
    return _Split(nid, leaves, key, call=call, unique=unique, members_of=members_of)


def _finish_split(
    split: _Split, reply: Any, summaries: dict[str, list[str]], vec: dict[str, np.ndarray], run: BuildRun
) -> list[tuple[str, list[str]]]:
    """The node's groups: journaled, else read from ``reply`` (a failed reply comes back as its error) and repaired,
    else an embedding split (counted, noted); journaled."""
    if split.done is not None:
        return split.done
    nid, leaves, trace, bump = split.nid, split.leaves, run.trace, run.bump
    groups: list[tuple[str, list[str]]] = []
    if split.call is None:
        bump("embedding_partitions")
        trace.note("fallback", f"node {nid}: summaries too long for one partition call; embedding split")
    else:
        groups = _read_partition(split, reply, vec, run)
    if not groups:
        groups = _embedding_split(leaves, vec, run.config.max_children, run.config.seed)
        groups = [(title or _label(g, summaries), g) for title, g in groups]
    run.journal.put(split.key, [[t, g] for t, g in groups])
    return groups


def _read_partition(
    split: _Split, reply: Any, vec: dict[str, np.ndarray], run: BuildRun
) -> list[tuple[str, list[str]]]:
    """The groups of a partition reply, repaired (every repair counted and noted); none when the reply failed or
    made no progress (the embedding split then)."""
    nid, leaves, unique, members_of = split.nid, split.leaves, split.unique, split.members_of
    trace, bump, m = run.trace, run.bump, run.config.max_children
    try:
        if isinstance(reply, BaseException):
            raise reply
        raw = [(t["title"], list(t["items"])) for t in reply.value["topics"]][:m]
    except (LLMOutputError, ValueError, KeyError, TypeError) as e:
        raw = []
        trace.note("fallback", f"node {nid}: partition call failed ({str(e)[:120]}); embedding split")
    uvec = {i + 1: np.mean(np.stack([vec[lid] for lid in members_of[u]]), axis=0) for i, u in enumerate(unique)}

    def nearest(item: int, topics: list[tuple[str, list[int]]]) -> int:
        cents = [np.mean(np.stack([uvec[i] for i in t[1]]), axis=0) for t in topics]
        return int(np.argmax([float(c @ uvec[item]) for c in cents]))

    groups: list[tuple[str, list[str]]] = []
    if raw:
        fixed, counts = repair_partition(raw, len(unique), nearest)
        for name, c in counts.items():
            if c:
                bump(f"partition_{name}", c)
                trace.note("lattice.partition_repair", f"node {nid}: {c} {name.replace('_', ' ')} repaired")
        groups = [(title, sorted(lid for i in its for lid in members_of[unique[i - 1]])) for title, its in fixed]
    if len(groups) < 2 or any(len(g) == len(leaves) for _, g in groups):
        if raw:
            trace.note("fallback", f"node {nid}: the LLM partition made no progress; embedding split")
        bump("embedding_partitions")
        groups = []
    return groups


def _label(leaves: list[str], summaries: dict[str, list[str]]) -> str:
    words: dict[str, int] = {}
    for lid in leaves:
        for w in (summaries.get(lid) or [lid])[0].split():
            words[w.lower()] = words.get(w.lower(), 0) + 1
    top = sorted(words, key=lambda w: (-words[w], w))[:4]
    return " / ".join(top) or "misc"
