"""Baseline methods registered for ``retrievekit bench``: ``bm25``, ``dense`` and ``hybrid``.

With a ``work_dir`` the built indexes are cached there under a fingerprint of
the corpus, so a second run over the same corpus reopens them instead of
re-embedding; processes started together (shards) build each one once
(:func:`~retrievekit.core.index.build_lock.build_lock`). Each factory refuses an option it does not read (``--option``
typos), naming the keys it knows (:data:`BM25_OPTIONS`, :data:`DENSE_OPTIONS`, :data:`HYBRID_OPTIONS`).

Examples:
    >>> from retrievekit.core.registry import MethodContext
    >>> from retrievekit.core.types import Passage
    >>> r = build_bm25(MethodContext(corpus=[Passage(id="a", text="ice cream"), Passage(id="b", text="hot soup")]))
    >>> r.search("cream", k=1)[0].id
    'a'
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import CorpusMismatchError, IndexFormatError, InvalidInputError
from retrievekit.core.index.bm25 import BM25Index, config_for_option
from retrievekit.core.index.build_lock import build_lock
from retrievekit.core.index.corpus_record import check_same_corpus
from retrievekit.core.index.hybrid import FusionConfig, HybridRetriever
from retrievekit.core.index.store_dense import DEFAULT_STORE, dense_in_store, store_kind_option
from retrievekit.core.options import check_option_keys, coerce_option, option_bool
from retrievekit.core.registry import MethodContext
from retrievekit.core.retriever import Retriever
from retrievekit.core.types import DataObject, object_to_dict

__all__ = [
    "BM25_OPTIONS",
    "DENSE_OPTIONS",
    "HYBRID_OPTIONS",
    "build_bm25",
    "build_dense",
    "build_hybrid",
    "corpus_fingerprint",
    "first_stage_options",
    "hybrid_settings",
]

BM25_OPTIONS = ("progress", "bm25_engine")
"""The options ``bm25`` reads (``bm25_engine``: ``tantivy``, the default, or ``bm25s``, :class:`BM25Config`)."""
DENSE_OPTIONS = ("progress", "store")
"""The options ``dense`` reads (``progress``: a bar while embedding; ``store``: the vector store kind the corpus is
embedded into, ``chroma`` by default or ``faiss``, :mod:`~retrievekit.core.index.store_dense`)."""
HYBRID_OPTIONS = ("fusion", "dense_weight", "bm25_weight", "rrf_k", "candidate_k", "progress", "store", "bm25_engine")
"""The options ``hybrid`` reads (see :func:`build_hybrid`)."""


def corpus_fingerprint(objects: Sequence[DataObject]) -> str:
    """A short stable hash of a corpus (ids, texts, metadata, in order).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> corpus_fingerprint([Passage(id="a", text="x")]) == corpus_fingerprint([Passage(id="a", text="x")])
        True
    """
    h = hashlib.sha256()
    for o in objects:
        h.update(json.dumps(object_to_dict(o), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def _cache_dir(ctx: MethodContext, kind: str) -> Path | None:
    if ctx.work_dir is None:
        return None
    return Path(ctx.work_dir) / f"{kind}-{corpus_fingerprint(ctx.corpus)}"


def _another_corpus(e: CorpusMismatchError, cache: Path) -> CorpusMismatchError:
    """A cache entry named for this corpus that holds another one (copied or written there by hand), refused with
    what to do."""
    return CorpusMismatchError(
        f"{e}; this work_dir entry is named for this corpus: remove {cache} to rebuild it, or use another work_dir",
        indexed=e.indexed,
        given=e.given,
        example=e.example,
    )


def build_bm25(ctx: MethodContext) -> BM25Index:
    """BM25 over the corpus (cached in ``ctx.work_dir`` when given), on the engine of the ``bm25_engine`` option
    (``tantivy`` by default: on disk, read per hit; or ``bm25s``: in memory).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> len(build_bm25(MethodContext(corpus=[Passage(id="a", text="x y")])))
        1
        >>> build_bm25(MethodContext(corpus=[Passage(id="a", text="x y")], options={"bm25_engine": "tantivy"})).config.engine
        'tantivy'
    """
    check_option_keys(ctx.options, BM25_OPTIONS, label="bm25")
    config = config_for_option(ctx.options.get("bm25_engine"))
    cache = _cache_dir(ctx, "bm25" if config.engine == "bm25s" else f"bm25-{config.engine}")
    if cache is None:
        return BM25Index.build(ctx.corpus, config)
    with build_lock(cache):  # shards started together build it once; the others load it
        if cache.exists():
            try:
                return BM25Index.load(cache, corpus=ctx.corpus)
            except CorpusMismatchError as e:  # named for this corpus, holding another one: never served
                raise _another_corpus(e, cache) from e
            except IndexFormatError:
                pass  # stale or damaged cache: rebuild below (atomically replaces it)
        idx = BM25Index.build(ctx.corpus, config)
        idx.save(cache)
        return idx


def first_stage_options(first_stage: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options a method hands its first stage named ``first_stage``, taken out of its own ``options``: the
    ``bm25_engine`` of a ``bm25`` or ``hybrid`` first stage (refused, by name, for another one).

    Examples:
        >>> opts = {"calls": 2, "bm25_engine": "tantivy"}
        >>> first_stage_options("bm25", opts), opts
        ({'bm25_engine': 'tantivy'}, {'calls': 2})
        >>> first_stage_options("dense", {"bm25_engine": "tantivy"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option bm25_engine reaches no BM25 index with first_stage=dense; leave it out
    """
    if "bm25_engine" not in options:
        return {}
    engine = options.pop("bm25_engine")
    if first_stage not in ("bm25", "hybrid"):
        raise InvalidInputError(
            f"option bm25_engine reaches no BM25 index with first_stage={first_stage}; leave it out"
        )
    config_for_option(engine)  # an unknown engine: refused now, before anything is built
    return {"bm25_engine": engine}


def build_dense(ctx: MethodContext) -> Retriever:
    """Dense (Chroma + all-MiniLM-L6-v2, or the store kind of the ``store`` option: ``faiss``) over the corpus
    (cached in ``ctx.work_dir`` when given), or the user's
    vector store when ``ctx.store`` is set (:func:`~retrievekit.core.index.store_retriever.as_store_retriever`; the
    store is searched as it is, nothing is built).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ctx = MethodContext(corpus=[Passage(id="a", text="ice cream"), Passage(id="b", text="hot soup")])
        >>> build_dense(ctx).search("dessert", k=1)[0].id  # needs all-MiniLM-L6-v2  # doctest: +SKIP
        'a'
    """
    from retrievekit.core.index.dense import DenseIndex

    check_option_keys(ctx.options, DENSE_OPTIONS, label="dense")
    if ctx.store is not None:
        from retrievekit.core.index.store_retriever import as_store_retriever

        return as_store_retriever(ctx.store)
    kind = store_kind_option(ctx.options.get("store"))
    if kind != DEFAULT_STORE:
        folder = _cache_dir(ctx, f"dense-{kind}")
        if folder is None:
            return dense_in_store(ctx.corpus, kind, ctx.take_embedder(), None)
        with build_lock(folder):
            return dense_in_store(ctx.corpus, kind, ctx.take_embedder(), folder)
    cache = _cache_dir(ctx, "dense")
    progress = option_bool("progress", ctx.options.get("progress", False))
    embedder = ctx.take_embedder()
    if cache is None:
        return DenseIndex.build(ctx.corpus, embedder=embedder, progress=progress)
    with build_lock(cache):
        found = _reopen_dense(cache, embedder, ctx.corpus) if cache.exists() else None
        if found is not None:
            return found
        return DenseIndex.build(ctx.corpus, path=cache, overwrite=True, embedder=embedder, progress=progress)


def _reopen_dense(cache: Path, embedder: object, corpus: Sequence[DataObject]) -> Retriever | None:
    """The dense index cached in ``cache`` when it holds ``corpus``; None when it is stale or damaged (rebuilt) or
    built by another embedding model (``EmbedderMismatchError``: rebuilt); another corpus is refused."""
    from retrievekit.core.index.dense import DenseIndex
    from retrievekit.core.index.dense_corpus import stored_objects

    try:
        idx = DenseIndex.open(cache, embedder=embedder)
    except IndexFormatError:
        return None
    try:
        check_same_corpus(stored_objects(idx), corpus, where=f"the dense index in {cache}")
    except CorpusMismatchError as e:  # named for this corpus, holding another one: never served
        idx.close()
        raise _another_corpus(e, cache) from e
    except IndexFormatError:  # a row it cannot read back: damaged, rebuilt
        idx.close()
        return None
    except BaseException:
        idx.close()
        raise
    return idx


def hybrid_settings(options: Mapping[str, Any]) -> tuple[FusionConfig, list[float]]:
    """The fusion settings and ``[dense_weight, bm25_weight]`` that ``hybrid``'s options give (see
    :func:`build_hybrid`); unknown keys and bad values raise :class:`InvalidInputError`.

    Examples:
        >>> cfg, weights = hybrid_settings({"fusion": "weighted", "bm25_weight": "0.1"})
        >>> cfg.fusion, weights
        ('weighted', [0.5, 0.1])
    """
    check_option_keys(options, HYBRID_OPTIONS, label="hybrid")
    fusion = str(options.get("fusion", "rrf"))
    if fusion not in ("rrf", "weighted"):
        raise InvalidInputError(f"fusion must be 'rrf' or 'weighted', got {fusion!r}")
    cfg = FusionConfig(
        fusion=fusion,  # type: ignore[arg-type]
        rrf_k=coerce_option("rrf_k", int, options.get("rrf_k", 60)),
        candidate_k=coerce_option("candidate_k", int, options.get("candidate_k", 100)),
    )
    weights = []
    for key in ("dense_weight", "bm25_weight"):
        w = coerce_option(key, float, options.get(key, 0.5))
        if not (math.isfinite(w) and w >= 0):
            raise InvalidInputError(f"option {key} must be a finite number >= 0, got {options.get(key)!r}")
        weights.append(w)
    return cfg, weights


def build_hybrid(ctx: MethodContext) -> HybridRetriever:
    """BM25 + dense fused by RRF (default) or weighted max-normalised scores.

    Options (``ctx.options``): ``fusion`` ("rrf" | "weighted"), ``dense_weight`` (0.5), ``bm25_weight`` (0.5),
    ``rrf_k`` (60), ``candidate_k`` (100), ``store`` (the dense side's store kind, as for ``dense``),
    ``bm25_engine`` (the BM25 side's engine, as for ``bm25``). ``ctx.store``
    (the user's vector store) is the dense side when set.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id="a", text="ice cream"), Passage(id="b", text="hot soup")]
        >>> ctx = MethodContext(corpus=docs, options={"fusion": "weighted"})
        >>> build_hybrid(ctx).search("cream dessert", k=1)[0].id  # needs all-MiniLM-L6-v2  # doctest: +SKIP
        'a'
    """
    opts = ctx.options
    cfg, weights = hybrid_settings(opts)
    progress = opts.get("progress", False)
    dense = build_dense(ctx.stage(options={"progress": progress, "store": opts.get("store")}))
    bm25 = build_bm25(ctx.stage(options={"progress": progress, "bm25_engine": opts.get("bm25_engine")}))
    return HybridRetriever([dense, bm25], weights, config=cfg, names=["dense", "bm25"])
