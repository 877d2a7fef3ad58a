"""Bottom-up tree construction (paper §3.1, the builder used for BRIGHT's StackExchange subsets).

Embed the leaves; group them into clusters of at most M (balanced k-means, or by source document with
``first_layer="metadata"``); summarise every group with the LLM; embed the summaries; group again; repeat until at
most M nodes remain, which become the root's children. A corpus of at most M objects gets a flat tree.

LLM calls run on a bounded thread pool with a progress bar; every finished summary is journaled in ``build_dir``
(see :class:`~retrievekit.core.lattice.summarize.BuildJournal`), so a restarted build only does the missing work.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.llm.json_output import ChatLLMBase
    >>> from retrievekit.core.llm.protocol import Completion
    >>> import numpy as np
    >>> class Label(ChatLLMBase):
    ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
    ...         return Completion("A topic")
    >>> class Emb:
    ...     def embed_documents(self, texts): return np.array([[float(len(t)), 1.0] for t in texts])
    ...     def embed_query(self, text): return np.array([float(len(text)), 1.0])
    >>> docs = [Passage(id=f"d{i}", text="x" * (i % 3 + 1)) for i in range(7)]
    >>> tree = build_bottom_up(docs, Label(), Emb(), TreeBuildConfig(max_children=3))
    >>> tree.max_branching <= 3, tree.num_leaves
    (True, 7)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.build import embed_texts, start_build
from retrievekit.core.lattice.clustering import balanced_groups
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import (
    extractive_label,
    llm_concurrency,
    object_short_text,
    run_bounded,
    short_text,
    summarize_children,
)
from retrievekit.core.lattice.tree import ROOT, SemanticTree, TreeNode, internal_id
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
    by: dict[Any, list[int]] = {}
    for i, o in enumerate(objects):
        value = o.metadata.get(key)
        by.setdefault(("doc", str(value)) if value is not None else ("obj", o.id), []).append(i)
    out: list[list[int]] = []
    for members in by.values():
        n_chunks = math.ceil(len(members) / max_size)
        size = math.ceil(len(members) / n_chunks)
        out.extend(members[i : i + size] for i in range(0, len(members), size))
    return sorted(out, key=lambda g: g[0])


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
        llm: writes the summaries (``complete``).
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
    run = start_build(corpus, embedder, config, build_dir, trace)
    objects, cfg, trace, journal, nodes, stats = run.objects, run.config, run.trace, run.journal, run.nodes, run.stats
    m = cfg.max_children
    embeddings: dict[str, np.ndarray] = dict(zip((o.id for o in objects), run.leaf_vectors, strict=True))
    level_ids = [o.id for o in objects]
    short = {o.id: object_short_text(o, cfg.child_chars) for o in objects}
    leaves_of: dict[str, list[str]] = {o.id: [o.id] for o in objects}
    level = 0
    while len(level_ids) > m:
        level += 1
        if level == 1 and cfg.first_layer == "metadata":
            groups = metadata_groups(objects, cfg.group_key, m)
        else:
            x = np.stack([embeddings[i] for i in level_ids])
            groups = balanced_groups(x, m, seed=cfg.seed + level)
        if len(groups) >= len(level_ids):  # cannot happen with M >= 2; guards an endless loop
            break
        jobs: list[tuple[str, list[str]]] = []
        for g in groups:
            child_ids = [level_ids[i] for i in g]
            leaves = sorted(lid for c in child_ids for lid in leaves_of[c])
            nid = internal_id(level, leaves)
            leaves_of[nid] = leaves
            jobs.append((nid, child_ids))
            nodes[nid] = TreeNode(id=nid, text="", children=child_ids)

        def summarise(job: tuple[str, list[str]]) -> str:
            nid, child_ids = job
            done = journal.get(f"summary:{nid}")
            if isinstance(done, str):
                return done
            sub = Trace()
            text = summarize_children(
                llm, [short[c] for c in child_ids], max_tokens=cfg.summary_max_tokens, trace=sub, stats=stats
            )
            journal.put(f"summary:{nid}", text)
            sub.stage_seconds.clear()
            trace.merge(sub)
            return text

        texts = run_bounded(
            summarise,
            jobs,
            max_concurrency=llm_concurrency(llm, cfg.max_concurrency),
            progress=cfg.progress,
            desc=f"level {level}",
        )
        if cfg.append_child_titles:
            texts = [
                f"{t} [{extractive_label([short[c] for c in kids], 160)}]"
                for t, (_, kids) in zip(texts, jobs, strict=True)
            ]
        for (nid, _), text in zip(jobs, texts, strict=True):
            nodes[nid].text = text
            short[nid] = short_text(text, cfg.child_chars)
        new_vecs = embed_texts(embedder, texts)
        for (nid, _), v in zip(jobs, new_vecs, strict=True):
            embeddings[nid] = v
        level_ids = [nid for nid, _ in jobs]
    nodes[ROOT] = TreeNode(id=ROOT, text="root", children=list(level_ids))
    embeddings[ROOT] = np.mean(np.stack([embeddings[i] for i in level_ids]), axis=0)
    return SemanticTree(nodes, {o.id: o for o in objects}, embeddings=embeddings, meta=run.meta("bottom_up"))
