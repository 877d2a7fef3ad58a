"""LATTICE as a retriever, its ``retrievekit bench`` factories, and the flat LLM-rerank baseline.

* :class:`~retrievekit.core.lattice.search.Lattice` (in :mod:`~retrievekit.core.lattice.search`) -- the
  :class:`~retrievekit.core.retriever.Retriever` over a semantic tree that these functions return.
* :func:`create_lattice` -- load a tree from ``tree_dir`` when one is there, else build one (bottom-up by default)
  and save it there.
* :func:`build_lattice` -- ``retrievekit bench --method lattice [--tree-dir DIR] [--option key=value]``.
* :class:`FlatLLMReranker` / :func:`build_llm_rerank` -- ``--method llm-rerank``: dense top-k candidates scored
  by the same LLM and the same slate scorer in ``calls`` slates, for budget-matched comparisons.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.fakes import WordScoreLLM  # a stand-in LLM (default: DEFAULT_MODEL, loaded)
    >>> from retrievekit.core.fakes import OnesEmbedder as Ones  # a stand-in embedder (default: all-MiniLM-L6-v2)
    >>> docs = [Passage(id="a", text="sun"), Passage(id="b", text="rain")]
    >>> lat = create_lattice(docs, llm=WordScoreLLM("sun"), embedder=Ones(), beam_size=1)  # 2 leaves, searched
    >>> lat.tree.num_leaves, lat.config.beam_size, [h.id for h in lat.search("solar", k=2)]
    (2, 1, ['a', 'b'])
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import fields
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import IndexFormatError, InvalidInputError, RetrieveKitError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.build_lock import build_lock
from retrievekit.core.index.corpus_record import check_same_corpus
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.config import LatticeConfig, TreeBuildConfig, split_options
from retrievekit.core.lattice.rerank_budget import check_slates, rerank_budget
from retrievekit.core.lattice.scoring import SlateFallback, SlateScorer
from retrievekit.core.lattice.search import Lattice
from retrievekit.core.lattice.top_down import build_top_down
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.llm.bridge import run_in_pool
from retrievekit.core.llm.calls import Step
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.options import check_option_keys
from retrievekit.core.paths import check_folder_path
from retrievekit.core.registry import MethodContext
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = [
    "FlatLLMReranker",
    "build_lattice",
    "build_llm_rerank",
    "build_tree",
    "create_lattice",
]


def build_tree(
    corpus: Sequence[DataObject],
    llm: ChatLLM,
    embedder: Embedder,
    config: TreeBuildConfig | None = None,
    *,
    builder: str = "bottom_up",
    build_dir: str | Path | None = None,
    trace: Trace | None = None,
) -> SemanticTree:
    """Build a tree with ``builder`` (``"bottom_up"`` or ``"top_down"``).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> build_tree([Passage(id="a", text="x")], None, None, builder="sideways")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: builder must be 'bottom_up' or 'top_down', got 'sideways'
    """
    if builder not in ("bottom_up", "top_down"):
        raise InvalidInputError(f"builder must be 'bottom_up' or 'top_down', got {builder!r}")
    fn = build_bottom_up if builder == "bottom_up" else build_top_down
    return fn(corpus, llm, embedder, config, build_dir=build_dir, trace=trace)


def _default_embedder() -> Embedder:
    from retrievekit.core.index.embeddings import MiniLMEmbedder

    return MiniLMEmbedder.default()


def create_lattice(
    corpus: Sequence[DataObject] | None = None,
    *,
    llm: Any = None,
    embedder: Any = None,
    tree: SemanticTree | None = None,
    tree_dir: str | os.PathLike[str] | None = None,
    builder: str = "bottom_up",
    build_config: TreeBuildConfig | None = None,
    config: LatticeConfig | None = None,
    rebuild: bool = False,
    **options: Any,
) -> Lattice:
    """A :class:`Lattice` from a tree, a tree folder, or a corpus (built, and saved in ``tree_dir`` when given).

    A ``tree_dir`` holding a tree is loaded (its corpus must match ``corpus`` when both are given, else
    :class:`IndexFormatError`); an empty or missing one gets the new tree, and its ``.build`` sibling keeps the
    resumable journal until the tree is saved (then it is removed); its entries are keyed by the LLM, the prompts,
    the build settings and each entry's inputs, and ``rebuild=True`` discards it. ``options`` are flat
    :class:`TreeBuildConfig` / :class:`LatticeConfig` fields. ``llm`` is a model's name (default
    :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`), a served LLM or a model object, a framework's included
    (:func:`~retrievekit.core.llm.resolve.resolve_llm`).

    Everything is checked before the LLM or the embedder is loaded: the options, the corpus (``EmptyCorpusError``
    for none), ``tree_dir`` (``InvalidPathError`` under a file) and, without a corpus, that ``tree_dir`` holds a tree
    (``IndexFormatError`` naming the folder).

    Examples:
        >>> create_lattice([])  # see the module docstring for a tree built and searched
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
        >>> create_lattice(tree_dir="no/such/tree")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: no LATTICE tree at no/such/tree: the folder does not exist; ...
    """
    embedder = as_embedder(embedder, where="create_lattice")
    build_opts, search_opts, other = split_options(options)
    check_option_keys(other, _config_option_names(), label="LATTICE")
    bcfg = build_config or TreeBuildConfig.from_options(build_opts)
    scfg = config or LatticeConfig.from_options(search_opts)
    if corpus is not None:
        corpus = check_corpus(corpus)
    path = check_folder_path(tree_dir, "tree_dir") if tree_dir is not None else None
    # shards started together build a tree once: the others wait, then load it
    asked = time.time_ns()
    with build_lock(path) if path is not None and tree is None and corpus is not None else nullcontext():
        if rebuild and path is not None and _saved_since(path, asked):
            rebuild = False  # another process rebuilt it while this one waited for the lock: load that one
        if tree is None and path is not None and (path / "manifest.json").exists() and not rebuild:
            tree = _load_tree(path, corpus)
        if tree is None and corpus is None:
            raise _no_tree_error(path, rebuild)
        if tree is None:
            assert corpus is not None  # checked above
            llm = resolve_llm(llm)
            embedder = embedder or _default_embedder()
            tree = _build_and_save(corpus, llm, embedder, bcfg, builder, path, rebuild)
    llm = resolve_llm(llm)  # loaded outside the lock when the tree was only read
    if embedder is None:
        try:
            embedder = _default_embedder()
        except ImportError:
            embedder = None
    return Lattice(tree, llm, scfg, embedder=embedder)


def _saved_since(path: Path, asked_ns: int) -> bool:
    """Whether a tree was saved in ``path`` at or after ``asked_ns`` (``time.time_ns()``): while this process waited
    for the build lock, so a ``rebuild=True`` given to every shard rebuilds once, not once per shard."""
    try:
        return (path / "manifest.json").stat().st_mtime_ns >= asked_ns
    except FileNotFoundError:
        return False


def _load_tree(path: Path, corpus: Sequence[DataObject] | None) -> SemanticTree:
    """The tree saved in ``path``, checked to hold ``corpus`` when one is given: the same ids with the same texts,
    else :class:`~retrievekit.core.errors.CorpusMismatchError` (an :class:`IndexFormatError`) naming both sizes and an
    example id (:func:`~retrievekit.core.index.corpus_record.check_same_corpus`)."""
    tree = SemanticTree.load(path)
    if corpus is not None:
        check_same_corpus(
            (tree.objects[i] for i in tree.leaf_ids()),
            corpus,
            where=f"the tree in {path}",
            held_name="tree",
            advice="a bench pool (--corpus-size) depends on the queries asked (--limit), so another --limit is another "
            "pool; pass rebuild=True (--option rebuild=true) or another --tree-dir",
        )
    return tree


def _no_tree_error(path: Path | None, rebuild: bool) -> RetrieveKitError:
    """Why no tree can be had without a corpus: no ``tree_dir``, or none saved in it."""
    if path is None:
        return InvalidInputError("create_lattice needs a corpus, a tree, or a tree_dir holding a tree")
    state = "the folder does not exist" if not path.exists() else "the folder has no manifest.json"
    if rebuild and path.exists():
        state = "rebuild=True needs the corpus to build from"
    return IndexFormatError(
        f"no LATTICE tree at {path}: {state}; pass the documents to build one there (from_documents / corpus=)"
    )


def _build_and_save(
    corpus: Sequence[DataObject],
    llm: ChatLLM,
    embedder: Embedder,
    bcfg: TreeBuildConfig,
    builder: str,
    path: Path | None,
    rebuild: bool,
) -> SemanticTree:
    """Build a tree, resuming from the journal beside ``path`` unless ``rebuild``; save it in ``path`` when given."""
    build_dir = path.with_name(path.name + ".build") if path is not None else None
    if rebuild and build_dir is not None:  # a rebuild rebuilds: nothing of an earlier build's journal is reused
        shutil.rmtree(build_dir, ignore_errors=True)
    tree = build_tree(corpus, llm, embedder, bcfg, builder=builder, build_dir=build_dir)
    if path is not None:
        tree.save(path)
    if build_dir is not None:  # the tree is saved: the resume journal has done its job
        shutil.rmtree(build_dir, ignore_errors=True)
    return tree


def lattice_from_tree(tree: SemanticTree | str | os.PathLike[str], **kwargs: Any) -> Lattice:
    """:func:`create_lattice` over a tree object or a tree folder (the edges' ``from_tree``).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun")])
        >>> lattice_from_tree(tree, llm=None, embedder=None).tree is tree  # needs SmolLM2  # doctest: +SKIP
        True
    """
    where: dict[str, Any] = {"tree": tree} if isinstance(tree, SemanticTree) else {"tree_dir": tree}
    return create_lattice(None, **where, **kwargs)


def _config_option_names() -> list[str]:
    """The flat option keys of :class:`TreeBuildConfig` and :class:`LatticeConfig`, in field order."""
    return list(dict.fromkeys(f.name for cfg in (TreeBuildConfig, LatticeConfig) for f in fields(cfg) if f.init))


_BENCH_KEYS = ("tree_dir", "builder", "rebuild", "progress", "judge_dir")


def build_lattice(ctx: MethodContext) -> Lattice:
    """``retrievekit bench --method lattice``: load the tree from ``--tree-dir`` (options ``tree_dir``) or build it.

    Options: ``tree_dir``, ``builder`` (``bottom_up`` | ``top_down``), ``rebuild``, and any
    :class:`TreeBuildConfig` / :class:`LatticeConfig` field. Without ``tree_dir`` the tree is cached in
    ``work_dir/lattice-<builder>-<llm>-<corpus fingerprint>`` when a work dir is given; ``<llm>`` names the model
    that writes its summaries, so a run with another LLM never reuses a tree another one built. The LLM is ``--llm``
    (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`); with ``--judge DIR`` (option ``judge_dir``) the trained judge loaded from DIR scores the slates
    (one ``score_relevance`` call per slate) and writes any summaries a new tree needs through its base model.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id="a", text="sun"), Passage(id="b", text="rain")]
        >>> ctx = MethodContext(corpus=docs, options={"beam_size": "1"})
        >>> build_lattice(ctx).config.beam_size  # needs SmolLM2 and all-MiniLM-L6-v2  # doctest: +SKIP
        1
    """
    from retrievekit.core.index.baselines import corpus_fingerprint
    from retrievekit.core.llm.judge_hooks import judge_from_options
    from retrievekit.core.options import option_bool

    _, _, other = split_options({k: v for k, v in ctx.options.items() if k not in _BENCH_KEYS})
    check_option_keys(other, [*_BENCH_KEYS, *_config_option_names()], label="LATTICE")
    judge, opts = judge_from_options(ctx)
    tree_dir = opts.pop("tree_dir", None)
    builder = str(opts.pop("builder", "bottom_up"))
    rebuild = option_bool("rebuild", opts.pop("rebuild", False))
    opts.pop("progress", None)
    if tree_dir is None and ctx.work_dir is not None:
        tag = _summary_llm_tag(ctx, judge)
        tree_dir = Path(ctx.work_dir) / f"lattice-{builder}-{tag}-{corpus_fingerprint(ctx.corpus)}"
    return create_lattice(
        ctx.corpus,
        llm=judge if judge is not None else ctx.llm,
        embedder=ctx.take_embedder(),
        tree_dir=tree_dir,
        builder=builder,
        rebuild=rebuild,
        **opts,
    )


def _summary_llm_tag(ctx: MethodContext, judge: Any) -> str:
    """A short, file-name-safe name of the model that writes a new tree's summaries."""
    import hashlib
    import re

    from retrievekit.core.lattice.summarize import llm_identity
    from retrievekit.core.llm.delegate import ChatDelegate

    if judge is not None and not isinstance(judge, ChatDelegate):  # a trained judge writes through its base model
        base = getattr(judge, "free_text_model", None)  # its untuned base: the tree that model's runs use
        digest = hashlib.sha256(str(ctx.options.get("judge_dir")).encode()).hexdigest()[:8]
        name = str(base) if base else f"judge-{digest}"
    elif ctx.llm_label is None:  # a model object
        ident = llm_identity(ctx.llm)
        name = ident.rsplit(":", 1)[-1] or "llm"
        name = f"{name}-{hashlib.sha256(ident.encode()).hexdigest()[:6]}"
    else:
        name = str(ctx.llm_label)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60]


class FlatLLMReranker:
    """Flat LLM rerank baseline: the dense (or any) top-``candidates`` scored by the LLM in ``calls`` slates.

    The candidates are cut into ``calls`` slates of equal size (in first-stage order); each slate is one LLM call
    of the same :class:`~retrievekit.core.lattice.scoring.SlateScorer` LATTICE uses (one ``score_relevance`` call
    per slate when ``llm`` is a :class:`~retrievekit.core.llm.protocol.RelevanceJudge`). Scored candidates are ranked by
    LLM score (ties by first-stage rank), then the rest of the first-stage ranking follows.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id="a", text="sun power"), Passage(id="b", text="sun and rain")]
        >>> FlatLLMReranker(BM25Index.build(docs), llm=None, candidates=2, calls=1).calls
        1
    """

    def __init__(
        self,
        first_stage: Retriever,
        llm: ChatLLM,
        config: LatticeConfig | None = None,
        *,
        candidates: int = 100,
        calls: int = 5,
    ) -> None:
        check_slates(candidates, calls)
        self.first_stage = first_stage
        self.config = config or LatticeConfig()
        self.scorer = SlateScorer(llm, self.config)
        self.candidates = candidates
        self.calls = calls

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Rerank the first stage's top candidates with ``calls`` LLM slates (sent side by side)."""
        query, k = check_query(query), check_k(k)
        trace = trace if trace is not None else Trace()
        first = self._first(query, k, trace)
        step = self.rerank_step(query, k, first, trace)
        return drive(step, self.scorer.llm, trace=trace, max_concurrency=self.config.max_concurrency)

    async def asearch(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """:meth:`search` awaited: the first stage on the bounded pool (or its own ``asearch``), the slates by the
        async driver on the caller's loop.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.index.bm25 import BM25Index
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.fakes import WordScoreLLM
            >>> docs = [Passage(id="a", text="sun rain"), Passage(id="b", text="sun power")]
            >>> r = FlatLLMReranker(BM25Index.build(docs), WordScoreLLM("power"), candidates=2, calls=1)
            >>> [h.id for h in asyncio.run(r.asearch("sun"))]
            ['b', 'a']
        """
        query, k = check_query(query), check_k(k)
        trace = trace if trace is not None else Trace()
        first_async = getattr(self.first_stage, "asearch", None)
        if first_async is not None:
            with trace.stage("llm_rerank.first_stage"):
                first = await first_async(query, max(k, self.candidates), trace=trace)
        else:
            first = await run_in_pool(self._first, query, k, trace)
        step = self.rerank_step(query, k, first, trace)
        return await adrive(step, self.scorer.llm, trace=trace, max_concurrency=self.config.max_concurrency)

    def _first(self, query: str, k: int, trace: Trace) -> list[ScoredHit]:
        with trace.stage("llm_rerank.first_stage"):
            return self.first_stage.search(query, max(k, self.candidates), trace=trace)

    def _chunks(self, pool: list[ScoredHit]) -> list[list[ScoredHit]]:
        """Exactly ``calls`` slates of near-equal size, in first-stage order."""
        n_chunks = min(self.calls, len(pool))
        base, extra = divmod(len(pool), n_chunks)
        chunks, start = [], 0
        for c in range(n_chunks):
            chunks.append(pool[start : start + base + (1 if c < extra else 0)])
            start += len(chunks[-1])
        return chunks

    def rerank_step(self, query: str, k: int, first: list[ScoredHit], trace: Trace) -> Step[list[ScoredHit]]:
        """The rerank as a step: its slates are one batch of model calls; returns the top ``k``."""
        pool = first[: self.candidates]
        scored: dict[str, float] = {}
        with trace.stage("llm_rerank.score"):
            if self.calls > 0 and pool:
                chunks = self._chunks(pool)
                asks = [
                    self.scorer.ask(query, [h.obj.index_text() for h in c], leaf=True, refs=[(h.id,) for h in c])
                    for c in chunks
                ]
                replies = yield [a.call for a in asks]  # the slates are independent: side by side
                for chunk, ask, reply in zip(chunks, asks, replies, strict=True):
                    got = self.scorer.read(ask, reply, trace)
                    scores = self.scorer.fall_back(got, trace) if isinstance(got, SlateFallback) else got
                    for h, s in zip(chunk, scores.scores, strict=True):
                        scored[h.id] = s
        rank = {h.id: i for i, h in enumerate(first)}
        head = sorted((h for h in first if h.id in scored), key=lambda h: (-scored[h.id], rank[h.id]))
        tail = [h for h in first if h.id not in scored]
        out = head + tail
        return [
            ScoredHit(obj=h.obj, score=scored.get(h.id, -1.0 - i / max(1, len(out))), rank=i)
            for i, h in enumerate(out[:k])
        ]


def build_llm_rerank(ctx: MethodContext) -> FlatLLMReranker:
    """``retrievekit bench --method llm-rerank``: dense top-``candidates`` (100) reranked in ``calls`` (40) slates.

    Options: ``candidates``, ``calls`` (default 40 = LATTICE's B*N; given one, the other is derived at the default
    slate size, and ``calls >= candidates`` is refused: :mod:`~retrievekit.core.lattice.rerank_budget`), ``first_stage`` (``dense`` | ``bm25`` |
    ``hybrid``), ``bm25_engine`` (its BM25 index's engine) and :class:`LatticeConfig` scoring fields (``score_max``, ``reply_format``, ...). With ``--judge DIR``
    the judge scores each slate (one ``score_relevance`` call per slate, as in LATTICE), so the two compare fairly.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import WordScoreLLM  # a stand-in LLM (default: --llm's default model)
        >>> docs = [Passage(id="a", text="sun or rain"), Passage(id="b", text="rain, rain")]
        >>> options = {"calls": "1", "first_stage": "bm25"}
        >>> r = build_llm_rerank(MethodContext(corpus=docs, llm=WordScoreLLM("sun"), options=options))
        >>> r.calls, r.candidates, [h.id for h in r.search("rain", k=2)]
        (1, 100, ['a', 'b'])
    """
    from retrievekit.core.index.baselines import first_stage_options
    from retrievekit.core.llm.judge_hooks import judge_from_options
    from retrievekit.core.registry import build_method

    rerank_keys = ("candidates", "calls", "first_stage", "progress", "judge_dir", "bm25_engine")
    check_option_keys(ctx.options, [*rerank_keys, *(f.name for f in fields(LatticeConfig))], label="llm-rerank")
    judge, opts = judge_from_options(ctx)
    raw = (opts.pop("candidates", None), opts.pop("calls", None))
    candidates, calls = rerank_budget(*(int(v) if v is not None else None for v in raw))
    first = str(opts.pop("first_stage", "dense"))
    opts.pop("progress", None)
    first_opts = first_stage_options(first, opts)
    base = build_method(first, ctx.stage(options=first_opts))  # the user's embedder and store reach the first stage
    llm = judge if judge is not None else ctx.load_llm()
    opts.setdefault("max_concurrency", 4)  # slates of a flat rerank are all independent (LATTICE's own default: B)
    return FlatLLMReranker(base, llm, LatticeConfig.from_options(opts), candidates=candidates, calls=calls)
