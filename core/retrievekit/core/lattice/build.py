"""What every tree builder does before and after its own algorithm: check the corpus, open the resume journal,
embed the leaves, count fallbacks, and write the build's ``meta`` (calls, tokens, seconds, journal reuse).

Examples:
    >>> import numpy as np
    >>> from retrievekit.core.types import Passage
    >>> class Emb:
    ...     def embed_documents(self, texts): return np.array([[1.0, float(len(t))] for t in texts])
    >>> run = start_build([Passage(id="a", text="x"), Passage(id="b", text="yy")], Emb(), None, None, None)
    >>> sorted(run.nodes), run.leaf_vectors.shape
    (['a', 'b'], (2, 2))
    >>> run.bump("fallbacks")
    >>> run.meta("bottom_up")["fallbacks"]
    1
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus
from retrievekit.core.errors import DegradedTreeWarning
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.summarize import BuildJournal, build_scope
from retrievekit.core.lattice.tree import TreeNode, check_object_ids
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["LEAF_BATCH", "LEAF_VECTORS", "BuildRun", "embed_leaves", "embed_texts", "open_journal", "start_build"]

# Leaves are embedded from at most this many characters of their index text.
LEAF_EMBED_CHARS = 2000


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed ``texts`` as a float32 matrix (rows L2-normalised).

    Examples:
        >>> import numpy as np
        >>> class E:
        ...     def embed_documents(self, t): return np.array([[3.0, 4.0]] * len(t))
        >>> embed_texts(E(), ["a"]).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    x = np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


@dataclass
class BuildRun:
    """The state a builder starts from: checked objects, leaf nodes and vectors, journal, trace and counters.

    Examples:
        >>> run = BuildRun(objects=[], config=TreeBuildConfig(), trace=Trace(), journal=BuildJournal(None))
        >>> run.meta("top_down")["builder"]
        'top_down'
    """

    objects: list[DataObject]
    config: TreeBuildConfig
    trace: Trace
    journal: BuildJournal
    nodes: dict[str, TreeNode] = field(default_factory=dict)
    leaf_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), dtype=np.float32))
    stats: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def bump(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the build counter ``name`` (reported in the tree's ``meta``).

        Examples:
            >>> run = BuildRun(objects=[], config=TreeBuildConfig(), trace=Trace(), journal=BuildJournal(None))
            >>> run.bump("x", 2); run.stats
            {'x': 2}
        """
        self.stats[name] = self.stats.get(name, 0) + n

    def meta(self, builder: str) -> dict[str, Any]:
        """The tree's ``meta``: builder, config, LLM calls and tokens, seconds, journal reuse and the counters.

        Examples:
            >>> run = BuildRun(objects=[], config=TreeBuildConfig(), trace=Trace(), journal=BuildJournal(None))
            >>> run.meta("bottom_up")["llm_calls"]
            0
        """
        cfg = self.config
        degraded = degraded_summaries(self.stats)
        if degraded is not None:
            warnings.warn(DegradedTreeWarning(f"LATTICE {builder} build: {degraded}"), stacklevel=3)
        return {
            "builder": builder,
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(cfg).items()},
            "llm_calls": self.trace.llm_calls,
            "prompt_tokens": self.trace.prompt_tokens,
            "completion_tokens": self.trace.completion_tokens,
            "seconds": round(time.perf_counter() - self.started, 3),
            "journal_reused": self.journal.reused,
            **self.stats,
            **({"degraded": degraded} if degraded is not None else {}),
        }


DEGRADED_SHARE = 0.2
"""A build whose share of extractive (fallback) summaries is above this is marked degraded (ours: 20 %)."""


REPEATED_SHARE = 0.5
"""A build more than this share of whose summaries repeat an earlier one written for other children is marked
degraded: a server answering one canned text to every request (ours: 50 %; a small model repeats a few)."""


def degraded_summaries(stats: dict[str, int]) -> str | None:
    """Why a build's summaries are degraded (more than :data:`DEGRADED_SHARE` of them extractive, or more than
    :data:`REPEATED_SHARE` the same text as an earlier summary of other children: a server answering one canned text
    such as "lorem ipsum"), or None.

    Examples:
        >>> degraded_summaries({"summaries": 18, "extractive_summaries": 18})
        '18 of 18 summaries fell back to extractive labels (the LLM replies were unusable); rebuild with a working LLM'
        >>> degraded_summaries({"summaries": 18, "extractive_summaries": 1}) is None
        True
        >>> degraded_summaries({"summaries": 4, "repeated_summaries": 3})[:74]
        '0 of 4 summaries fell back to extractive labels and 3 repeat another one w'

    """
    total, fell = int(stats.get("summaries", 0)), int(stats.get("extractive_summaries", 0))
    repeated = int(stats.get("repeated_summaries", 0))
    if not total or (fell / total <= DEGRADED_SHARE and repeated / total <= REPEATED_SHARE):
        return None
    if not repeated:
        what = f"{fell} of {total} summaries fell back to extractive labels"
    else:
        what = f"{fell} of {total} summaries fell back to extractive labels and {repeated} repeat another one word for word"
    return f"{what} (the LLM replies were unusable); rebuild with a working LLM"


def open_journal(
    config: TreeBuildConfig,
    build_dir: str | os.PathLike[str] | None,
    llm: Any,
    prompts: Sequence[str],
    embedder: Embedder,
) -> BuildJournal:
    """The resume journal in ``build_dir`` (none without one), scoped to ``llm``'s identity, the builder's
    ``prompts``, the settings that change results (not ``max_concurrency`` nor ``progress``) and the embedder's
    identity (:func:`build_scope`): a resumed build reuses only what the same LLM, prompts and settings produced.

    Examples:
        >>> open_journal(TreeBuildConfig(), None, None, [], None).reused
        0
    """
    settings = {k: v for k, v in vars(config).items() if k not in ("max_concurrency", "progress")}
    scope = build_scope(llm, prompts, settings, embedder=embedder)
    return BuildJournal(Path(build_dir) if build_dir is not None else None, scope=scope)


def start_build(
    corpus: Sequence[DataObject],
    embedder: Embedder,
    config: TreeBuildConfig | None,
    build_dir: str | Path | None,
    trace: Trace | None,
    *,
    llm: Any = None,
    prompts: Sequence[str] = (),
) -> BuildRun:
    """Check ``corpus`` (non-empty, unique ids), open the journal in ``build_dir`` and embed the leaves.

    The journal's scope is ``llm``'s identity, the builder's ``prompts``, the config and the embedder's identity
    (:func:`build_scope`): a resumed build reuses only what the same LLM, prompts and settings produced.

    Examples:
        >>> start_build([], None, None, None, None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    started = time.perf_counter()
    objects = check_corpus(corpus)
    check_object_ids(o.id for o in objects)
    cfg = config or TreeBuildConfig()
    run = BuildRun(
        objects=objects,
        config=cfg,
        trace=trace if trace is not None else Trace(),
        journal=open_journal(cfg, build_dir, llm, prompts, embedder),
        nodes={o.id: TreeNode(id=o.id, text=o.index_text(), is_leaf=True) for o in objects},
        started=started,
    )
    batches = [embed_leaves(run, embedder, objects[i : i + LEAF_BATCH]) for i in range(0, len(objects), LEAF_BATCH)]
    run.leaf_vectors = np.concatenate(batches)
    return run


LEAF_BATCH = 4096
"""Leaves embedded at a time, and kept at a time in a build folder (:func:`embed_leaves`)."""
LEAF_VECTORS = "leaf_vectors"
"""The build folder's subfolder of embedded leaf batches, one ``.npy`` file each."""


def embed_leaves(run: BuildRun, embedder: Embedder, objects: Sequence[DataObject]) -> np.ndarray:
    """The vectors of a batch of leaves (each object's index text, cut to :data:`LEAF_EMBED_CHARS`). With a build
    folder, a batch is kept there once embedded (``leaf_vectors/<key>.npy``, written whole and renamed into place,
    keyed by the build's scope, the embedder's included, and the batch's texts), so a build resumed after a crash
    reads back every batch it had embedded instead of asking the embedder again (counted as
    ``leaf_batches_reused``); a damaged file is embedded again.

    Examples:
        >>> import numpy as np, pathlib, tempfile
        >>> from retrievekit.core.types import Passage
        >>> class Emb:
        ...     calls = 0
        ...     def embed_documents(self, texts): Emb.calls += 1; return np.ones((len(texts), 2))
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> runs = [BuildRun([], TreeBuildConfig(), Trace(), BuildJournal(folder)) for _ in range(2)]
        >>> [embed_leaves(r, Emb(), [Passage(id="a", text="x")]).shape for r in runs], Emb.calls
        ([(1, 2), (1, 2)], 1)
        >>> runs[1].stats
        {'leaf_batches_reused': 1}
    """
    texts = [o.index_text()[:LEAF_EMBED_CHARS] for o in objects]
    if run.journal.folder is None:
        return embed_texts(embedder, texts)
    path = run.journal.folder / LEAF_VECTORS / f"{run.journal.key(LEAF_VECTORS, texts).split(':')[1]}.npy"
    try:
        kept = np.load(path, allow_pickle=False)
        if kept.dtype == np.float32 and kept.ndim == 2 and kept.shape[0] == len(texts):
            run.bump("leaf_batches_reused")
            return kept
    except (OSError, ValueError):
        pass  # not embedded yet, or a damaged file: embedded again
    vectors = embed_texts(embedder, texts)
    path.parent.mkdir(exist_ok=True)
    part = path.with_name(f"{path.stem}.{os.getpid()}.part")
    with open(part, "wb") as f:
        np.save(f, vectors, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)
    return vectors
