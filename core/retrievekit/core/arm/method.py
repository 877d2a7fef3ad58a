"""ARM: alignment-oriented retrieval over passages and tables (arXiv 2501.18539; reference code ``peterbaile/arm``).

One query runs five stages, each recorded in the trace (``arm.*`` stage times, LLM calls, fallbacks):

1. **Information alignment** (:mod:`~retrievekit.core.arm.keywords`): the LLM decomposes the question into
   keywords; each is rephrased into N-grams of the top-50 dense objects (constrained decoding with a scoring LM,
   free generation + snapping with a chat LLM).
2. **Base objects** (:mod:`~retrievekit.core.arm.base`): ``0.9 * dense + 0.1 * BM25(question + keywords +
   N-grams)``, max-normalised over the candidate pool, top ``base_k = 5``.
3. **Expansion drafts** (:mod:`~retrievekit.core.arm.drafts`): for each ``k`` in ``expand_ks`` the base objects
   plus each one's ``k`` best partners by relevance + compatibility (:mod:`~retrievekit.core.arm.compatibility`).
4. **Structure alignment** (:mod:`~retrievekit.core.arm.mip`): a MIP keeps at most ``ilp_k`` objects per draft
   (relevance top-``ilp_k`` with ``mip=False``).
5. **Self-verification and aggregation** (:mod:`~retrievekit.core.arm.verify`,
   :mod:`~retrievekit.core.arm.aggregate`): the LLM names the objects it needs from each draft; votes and name
   log-probs are aggregated (with ``verify=False``: objects in a majority of the drafts).

ARM returns a *set* (``returns_set = True`` for ``retrievekit bench``, which then reports set precision/recall/F1):
hits in aggregation order, at most ``k``. Each hit's ``obj.metadata`` holds ``arm_links`` (the joins/links that
connect it to the other selected objects, e.g. ``"cell 'X' in table 'T' links to passage 'X'"``), ``arm_score``,
``arm_votes``, ``arm_logprob``, ``arm_relevance``, ``arm_set`` (all selected ids) and ``arm_selected``; a table's
bulky ``cell_links`` list is left out of the returned copy.

Examples:
    >>> from retrievekit.core.types import Passage, Table
    >>> from retrievekit.core.fakes import OnesEmbedder as Ones  # a stand-in embedder; the default is all-MiniLM-L6-v2
    >>> corpus = [Table(id="t", title="Cast", header=("Role", "Series"), rows=(("Robert", "Prime Suspect"),)),
    ...           Passage(id="p", title="Prime Suspect", text="Prime Suspect was created by Lynda La Plante.")]
    >>> arm = Arm(corpus, llm=None, config=ArmConfig(expand_ks=(1,)), embedder=Ones())
    >>> sorted(h.id for h in arm.search("Who created the series with Robert?", k=2))
    ['p', 't']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np  # noqa: F401  (the examples use it)

from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.keyword_cache import KeywordCache
from retrievekit.core.arm.retriever import Arm, Draft
from retrievekit.core.checks import check_corpus
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.options import cache_folder_option
from retrievekit.core.registry import MethodContext
from retrievekit.core.retriever import Retriever
from retrievekit.core.types import DataObject

__all__ = ["Arm", "ArmConfig", "Draft", "build_arm", "build_arm_no_mip", "build_arm_no_verify", "create_arm"]


def build_arm(ctx: MethodContext) -> Arm:
    """``retrievekit bench --method arm``: ARM with the local LM named by ``--llm`` (default ``smollm2``;
    ``--llm none`` runs without LLM stages). Dense and BM25 indexes are cached in ``--work-dir`` by corpus
    fingerprint (shared with the ``dense`` / ``bm25`` baselines).

    Options (``--option key=value``) are :class:`ArmConfig` fields, e.g. ``mip=false``, ``verify=false``,
    ``expand_ks=3,4``, and ``bm25_engine`` (the BM25 index's engine, ``tantivy`` by default, as for ``bm25``).
    ``--judge DIR`` (option ``judge_dir``) loads a trained judge and uses it as the LLM: it verifies drafts with
    ``score_relevance`` (``judge_threshold``) and decomposes keywords through its base model.
    Keyword alignments are cached in ``<work-dir>/arm-keywords`` (option ``keyword_cache=DIR`` elsewhere,
    ``keyword_cache=none`` to turn it off), keyed by the keyword model, question, vocabulary, settings and prompts.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ctx = MethodContext(corpus=[Passage(id="p", text="Prime Suspect is a drama.")])
        >>> build_arm(ctx)  # needs SmolLM2 and all-MiniLM-L6-v2  # doctest: +SKIP
        Arm(<1 objects>, llm=scoring, mip=True, verify=True)
    """
    from retrievekit.core.index.baselines import build_bm25, build_dense
    from retrievekit.core.llm.judge_hooks import judge_from_options

    judge, options = judge_from_options(ctx)
    progress = options.pop("progress", False)
    engine = options.pop("bm25_engine", None)  # as for bm25 (None: the default engine)
    cache_dir = cache_folder_option("keyword_cache", options.pop("keyword_cache", None), ctx.work_dir, "arm-keywords",
                                    default_on=True)  # fmt: skip
    config = ArmConfig.from_options(options)
    index_ctx = ctx.stage(options={"progress": progress})
    llm = judge if judge is not None else ctx.load_llm()
    cache = None
    if llm is not None and cache_dir is not None:
        cache = KeywordCache(cache_dir, model=_keyword_model(ctx, judge))
    bm25 = build_bm25(ctx.stage(options={"progress": progress, "bm25_engine": engine}))
    return Arm(ctx.corpus, llm, config, dense=build_dense(index_ctx), bm25=bm25, keyword_cache=cache)


def _keyword_model(ctx: MethodContext, judge: Any) -> str:
    """Who decodes the keywords: a trained judge's base model (its ``free_text_model``, so the cache is shared with
    runs of that model; the judge's own name when it writes with its tuned weights), else the given or
    registry-named LLM (the oracle and cosine judges hand free text to that LLM)."""
    from retrievekit.core.llm.delegate import ChatDelegate

    if judge is not None and not isinstance(judge, ChatDelegate):
        base = getattr(judge, "free_text_model", None)
        return str(base) if base else f"judge:{ctx.options.get('judge_dir') or type(judge).__qualname__}"
    label = ctx.llm_label
    if label is None:  # a model object
        return str(getattr(ctx.llm, "name", "") or type(ctx.llm).__qualname__)
    return label


def build_arm_no_mip(ctx: MethodContext) -> Arm:
    """``--method arm-no-mip``: ARM with relevance top-``ilp_k`` drafts instead of the MIP (ablation).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ctx = MethodContext(corpus=[Passage(id="p", text="Prime Suspect is a drama.")], llm="none")
        >>> build_arm_no_mip(ctx).config.mip  # needs all-MiniLM-L6-v2  # doctest: +SKIP
        False
    """
    return build_arm(dataclasses.replace(ctx, options={**ctx.options, "mip": False}))


def build_arm_no_verify(ctx: MethodContext) -> Arm:
    """``--method arm-no-verify``: ARM's MIP drafts without LLM verification (vote-only aggregation; ablation).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ctx = MethodContext(corpus=[Passage(id="p", text="Prime Suspect is a drama.")], llm="none")
        >>> build_arm_no_verify(ctx).config.verify  # needs all-MiniLM-L6-v2  # doctest: +SKIP
        False
    """
    return build_arm(dataclasses.replace(ctx, options={**ctx.options, "verify": False}))


def create_arm(
    corpus: Sequence[DataObject],
    *,
    llm: Any = DEFAULT_MODEL,
    config: ArmConfig | None = None,
    dense: Retriever | None = None,
    bm25: BM25Index | None = None,
    embedder: Any = None,
    **options: Any,
) -> Arm:
    """ARM over ``corpus`` with ``llm``: a model's name (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`),
    a served LLM or a model object (:func:`~retrievekit.core.llm.resolve.resolve_llm`); ``None`` or ``"none"``: no LLM
    stages.

    ``options`` are :class:`ArmConfig` fields, ignored when ``config`` is given. The framework retrievers'
    ``from_documents`` use this. The corpus and the options are checked before the LLM is loaded. ``embedder`` is any
    embedding model :func:`~retrievekit.core.index.as_embedder.as_embedder` takes (default: all-MiniLM-L6-v2).

    Examples:
        >>> from retrievekit.core.index.dense import DenseIndex
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import OnesEmbedder as Ones
        >>> corpus = [Passage(id="p", text="Prime Suspect is a drama.")]
        >>> create_arm(corpus, llm=None, dense=DenseIndex.build(corpus, embedder=Ones()), base_k=3).config.base_k
        3
        >>> create_arm([])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    corpus = check_corpus(corpus)
    config = config or ArmConfig.from_options(options)
    llm = resolve_llm(llm, default=None)
    return Arm(corpus, llm, config, dense=dense, bm25=bm25, embedder=embedder)


# The public home of these names stays this module (docs, the demo corpus's ids, pickles), as before the split.
for _public in (Arm, Draft):
    _public.__module__ = __name__
del _public
