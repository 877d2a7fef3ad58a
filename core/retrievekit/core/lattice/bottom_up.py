"""Bottom-up tree construction (paper §3.1, the builder used for BRIGHT's StackExchange subsets).

Embed the leaves; group them into clusters of at most M (balanced k-means, or by source document with
``first_layer="metadata"``); summarise every group with the LLM; embed the summaries; group again; repeat until at
most M nodes remain, which become the root's children. A corpus of at most M objects gets a flat tree. With
``summaries="extractive"`` no LLM is called: each node's text is its children's short texts nearest the group's
centroid (:func:`~retrievekit.core.lattice.summarize.centroid_summary`), so ``llm`` may be None.

A level's summaries are a step (``_summaries_step``: one ``"lattice.summary"`` call per group not journaled
yet, in batches of a few rounds, :func:`~retrievekit.core.lattice.summarize.step_batch`) that the build drives with the sync driver at its ``max_concurrency``, under a
progress bar; every finished summary is journaled in ``build_dir`` (see
:class:`~retrievekit.core.lattice.summarize.BuildJournal`), so a restarted build only does the missing work.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> import numpy as np
    >>> from retrievekit.core.fakes import FixedReplyLLM
    >>> class Emb:
    ...     def embed_documents(self, texts): return np.array([[float(len(t)), 1.0] for t in texts])
    ...     def embed_query(self, text): return np.array([float(len(text)), 1.0])
    >>> docs = [Passage(id=f"d{i}", text="x" * (i % 3 + 1)) for i in range(7)]
    >>> tree = build_bottom_up(docs, FixedReplyLLM("A topic"), Emb(), TreeBuildConfig(max_children=3))
    >>> tree.max_branching <= 3, tree.num_leaves
    (True, 7)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.build import BuildRun, embed_texts, start_build
from retrievekit.core.lattice.clustering import balanced_groups
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import (
    CHARS_PER_TOKEN,
    SUMMARY_PROMPT,
    centroid_summary,
    drive_build,
    extractive_label,
    journaled_step,
    object_short_text,
    read_summary,
    short_text,
    step_batch,
    summary_call,
)
from retrievekit.core.lattice.tree import ROOT, SemanticTree, TreeNode, internal_id
from retrievekit.core.llm.calls import Step
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["build_bottom_up", "embed_texts", "metadata_groups"]


def metadata_groups(objects: Sequence[DataObject], key: str, max_size: int) -> list[list[int]]:
    """Group object indexes by ``metadata[key]`` (objects without it stand alone), splitting groups larger than
    ``max_size`` by corpus order.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> objs = [Passage(id=str(i), text="x", metadata={"document_id": i // 3}) for i in range(5)]
        >>> metadata_groups(objs, "document_id", 2)
        [[0, 1], [2], [3, 4]]
    """
    return label_groups([metadata_label(o, key) for o in objects], max_size)


def metadata_label(obj: DataObject, key: str) -> tuple[str, str]:
    """What :func:`metadata_groups` groups ``obj`` by: its ``metadata[key]``, or its own id when it has none."""
    value = obj.metadata.get(key)
    return ("doc", str(value)) if value is not None else ("obj", obj.id)


def label_groups(labels: Sequence[tuple[str, str]], max_size: int) -> list[list[int]]:
    """Indexes grouped by equal label (:func:`metadata_label`), each group larger than ``max_size`` cut in equal
    parts in order; groups by first member."""
    by: dict[tuple[str, str], list[int]] = {}
    for i, label in enumerate(labels):
        by.setdefault(label, []).append(i)
    out: list[list[int]] = []
    for members in by.values():
        n_chunks = math.ceil(len(members) / max_size)
        size = math.ceil(len(members) / n_chunks)
        out.extend(members[i : i + size] for i in range(0, len(members), size))
    return sorted(out, key=lambda g: g[0])


@dataclass(frozen=True)
class _Levels:
    """What the levels of a bottom-up build share: the run, the models, and per-node vectors, texts and leaves."""

    run: BuildRun
    llm: ChatLLM
    embedder: Embedder
    embeddings: dict[str, np.ndarray]
    short: dict[str, str]
    leaves_of: dict[str, list[str]]
    summaries: dict[str, tuple[str, ...]] = field(default_factory=dict)  # summary -> the children it summarised


def _start_levels(run: BuildRun, llm: ChatLLM, embedder: Embedder) -> _Levels:
    """Level 0: the leaves, their vectors and short texts."""
    objects = run.objects
    return _Levels(
        run,
        llm,
        embedder,
        embeddings=dict(zip((o.id for o in objects), run.leaf_vectors, strict=True)),
        short={o.id: object_short_text(o, run.config.child_chars) for o in objects},
        leaves_of={o.id: [o.id] for o in objects},
    )


def _level_groups(lv: _Levels, level_ids: list[str], level: int) -> list[list[int]]:
    """Groups (positions in ``level_ids``) of the nodes that get one parent at ``level``."""
    cfg = lv.run.config
    if level == 1 and cfg.first_layer == "metadata":
        return metadata_groups(lv.run.objects, cfg.group_key, cfg.max_children)
    x = np.stack([lv.embeddings[i] for i in level_ids])
    return balanced_groups(x, cfg.max_children, seed=cfg.seed + level)


def _open_parents(
    lv: _Levels, level: int, level_ids: list[str], groups: list[list[int]]
) -> list[tuple[str, list[str]]]:
    """Add one (not yet summarised) node per group; returns ``[(node id, child ids), ...]``."""
    jobs: list[tuple[str, list[str]]] = []
    for g in groups:
        child_ids = [level_ids[i] for i in g]
        leaves = sorted(lid for c in child_ids for lid in lv.leaves_of[c])
        nid = internal_id(level, leaves)
        lv.leaves_of[nid] = leaves
        jobs.append((nid, child_ids))
        lv.run.nodes[nid] = TreeNode(id=nid, text="", children=child_ids)
    return jobs


def _summaries_step(
    run: BuildRun, llm: ChatLLM | None, texts: list[list[str]], level: int, calls: Trace
) -> Step[list[str]]:
    """The summaries of a level's new nodes as a step: one ``"lattice.summary"`` call per group (its children's
    short ``texts``) whose summary is not journaled yet (keyed by the build's scope and those texts), in batches of a
    few rounds of as many calls as may be in flight (:func:`step_batch`); each reply read (an extractive label on
    failure, counted and noted in ``calls``) and journaled."""
    cfg = run.config
    return journaled_step(
        run.journal,
        [run.journal.key("summary", t) for t in texts],
        ask=lambda i: summary_call(texts[i], max_tokens=cfg.summary_max_tokens),
        read=lambda i, reply: read_summary(reply, texts[i], trace=calls, stats=run.stats),
        reuse=lambda done: done if isinstance(done, str) else None,
        batch=step_batch(llm, cfg.max_concurrency),
        progress=cfg.progress,
        desc=f"level {level}",
    )


def level_texts(
    run: BuildRun,
    llm: ChatLLM | None,
    kid_texts: list[list[str]],
    kid_vectors: Callable[[int], np.ndarray],
    level: int,
    seen: dict[str, tuple[str, ...]],
) -> list[str]:
    """The texts of new nodes at ``level`` from each one's children's short texts (``kid_texts[i]``) and vectors
    (``kid_vectors(i)``): summaries (LLM calls driven at the config's ``max_concurrency``, or the children nearest
    the group's centroid with ``summaries="extractive"``), with child titles appended if configured. ``seen`` maps
    every summary written so far in the build to the children it summarised (repeats are counted)."""
    cfg = run.config
    run.bump("summaries", len(kid_texts))
    if cfg.summaries == "extractive":  # no LLM: the children nearest the group's centroid
        limit = cfg.summary_max_tokens * CHARS_PER_TOKEN
        texts = [centroid_summary(kids, kid_vectors(i), limit) for i, kids in enumerate(kid_texts)]
    else:
        calls = Trace()
        step = _summaries_step(run, llm, kid_texts, level, calls)
        texts = drive_build(step, llm, into=run.trace, calls=calls, max_concurrency=cfg.max_concurrency)
        run.bump("repeated_summaries", _repeats(seen, kid_texts, texts))
    if cfg.append_child_titles:
        texts = [f"{t} [{extractive_label(kids, 160)}]" for t, kids in zip(texts, kid_texts, strict=True)]
    return texts


def _repeats(seen: dict[str, tuple[str, ...]], kid_texts: list[list[str]], texts: list[str]) -> int:
    """How many of the new summaries repeat, word for word, one written earlier in the build for other children."""
    n = 0
    for kids, text in zip(kid_texts, texts, strict=True):
        key, inputs = " ".join(text.lower().split()), tuple(kids)
        if seen.setdefault(key, inputs) != inputs:
            n += 1
    return n


def _kids(lv: _Levels, jobs: list[tuple[str, list[str]]]) -> tuple[list[list[str]], Callable[[int], np.ndarray]]:
    """Each new node's children's short texts, and a function giving the ``i``-th node's children's vectors."""
    return [[lv.short[c] for c in kids] for _, kids in jobs], lambda i: np.stack([lv.embeddings[c] for c in jobs[i][1]])


def _set_texts(lv: _Levels, jobs: list[tuple[str, list[str]]], texts: list[str]) -> None:
    """Store the new nodes' texts, short texts and embeddings."""
    for (nid, _), text in zip(jobs, texts, strict=True):
        lv.run.nodes[nid].text = text
        lv.short[nid] = short_text(text, lv.run.config.child_chars)
    new_vecs = embed_texts(lv.embedder, texts)
    for (nid, _), v in zip(jobs, new_vecs, strict=True):
        lv.embeddings[nid] = v


def build_bottom_up(
    corpus: Sequence[DataObject],
    llm: ChatLLM,
    embedder: Embedder,
    config: TreeBuildConfig | None = None,
    *,
    build_dir: str | Path | None = None,
    trace: Trace | None = None,
) -> SemanticTree:
    """Build a bottom-up semantic tree over ``corpus`` (see the module docstring).

    Args:
        corpus: the leaves (unique ids; duplicate texts are fine).
        llm: writes the summaries (``complete``); unused (may be None) with ``summaries="extractive"``.
        embedder: embeds leaves and summaries (``embed_documents``).
        config: :class:`~retrievekit.core.lattice.config.TreeBuildConfig`.
        build_dir: folder of the resumable journal (None: no journal).
        trace: receives LLM calls and tokens of the build.

    Examples:
        >>> build_bottom_up([], None, None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    run = start_build(corpus, embedder, config, build_dir, trace, llm=llm, prompts=[SUMMARY_PROMPT])
    lv = _start_levels(run, llm, embedder)
    level_ids = [o.id for o in run.objects]
    level = 0
    while len(level_ids) > run.config.max_children:
        level += 1
        groups = _level_groups(lv, level_ids, level)
        if len(groups) >= len(level_ids):  # cannot happen with M >= 2; guards an endless loop
            break
        jobs = _open_parents(lv, level, level_ids, groups)
        _set_texts(lv, jobs, level_texts(run, llm, *_kids(lv, jobs), level, lv.summaries))
        level_ids = [nid for nid, _ in jobs]
    run.nodes[ROOT] = TreeNode(id=ROOT, text="root", children=list(level_ids))
    lv.embeddings[ROOT] = np.mean(np.stack([lv.embeddings[i] for i in level_ids]), axis=0)
    return SemanticTree(run.nodes, {o.id: o for o in run.objects}, embeddings=lv.embeddings, meta=run.meta("bottom_up"))
