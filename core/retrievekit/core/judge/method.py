"""``judge-rerank``: a first stage's top-k reranked by a relevance judge (trained or zero-shot).

:class:`JudgeRerankRetriever` takes any first-stage :class:`~retrievekit.core.retriever.Retriever` (BM25 by default)
and any :class:`~retrievekit.core.llm.protocol.RelevanceJudge`; it scores the first ``rerank_k`` hits (issue #9:
BM25 top-100) and orders them by the judge's probability, or, with ``mix > 0``, by
``(1 - mix) * z(logit p) + mix * z(first-stage score)`` (both z-scored per query, so neither scale dominates).
Ties keep the first-stage order. Hits past ``rerank_k`` are not returned (``k <= rerank_k`` is the useful range).

Examples:
    >>> from retrievekit.core.index.bm25 import BM25Index
    >>> from retrievekit.core.types import Passage
    >>> class Overlap:
    ...     def score_relevance(self, query, candidates, *, trace=None):
    ...         q = set(query.lower().split())
    ...         return [len(q & set(c.lower().split())) / len(q) for c in candidates]
    >>> docs = [Passage(id="a", text="red apples and pears"), Passage(id="b", text="red apples")]
    >>> r = JudgeRerankRetriever(BM25Index.build(docs), Overlap(), JudgeRerankConfig(rerank_k=10))
    >>> [(h.id, h.score) for h in r.search("red apples pears", k=2)]
    [('a', 1.0), ('b', 0.6666666666666666)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.judge.data import object_text
from retrievekit.core.llm.judge_hooks import judge_from_options, judge_relevance, parse_judge
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.llm.resolve import llm_label
from retrievekit.core.options import check_option_keys, config_from_options
from retrievekit.core.registry import MethodContext
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["JudgeRerankConfig", "JudgeRerankRetriever", "build_judge_rerank", "create_judge_rerank", "zscore"]


def zscore(x: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` (zeros when the values are all equal).

    Examples:
        >>> zscore(np.array([1.0, 2.0, 3.0])).round(3).tolist()
        [-1.225, 0.0, 1.225]
        >>> zscore(np.array([5.0, 5.0])).tolist()
        [0.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    sd = float(x.std()) if x.size else 0.0
    return np.zeros_like(x) if sd == 0.0 else (x - x.mean()) / sd


@dataclass(frozen=True)
class JudgeRerankConfig:
    """Settings of :class:`JudgeRerankRetriever`.

    Attributes:
        rerank_k: first-stage hits the judge scores (issue #9 acceptance: BM25 top-100).
        mix: weight of the z-scored first-stage score in the final order (0: judge only, so a run reports the judge
            itself; docs/methods/judge.md shows what a 0.5 blend gave a zero-shot judge).

    Examples:
        >>> JudgeRerankConfig().rerank_k
        100
        >>> JudgeRerankConfig(mix=2)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: mix must be in [0, 1], got 2
    """

    rerank_k: int = 100
    mix: float = 0.0

    def __post_init__(self) -> None:
        check_k(self.rerank_k)
        if not 0.0 <= float(self.mix) <= 1.0:
            raise InvalidInputError(f"mix must be in [0, 1], got {self.mix}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> JudgeRerankConfig:
        """Build from ``--option`` strings (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> JudgeRerankConfig.from_options({"rerank_k": "20", "mix": "0.5"})
            JudgeRerankConfig(rerank_k=20, mix=0.5)
        """
        return config_from_options(cls, options, label="judge-rerank")


class JudgeRerankRetriever:
    """First-stage retrieval, then the judge's probabilities decide the order.

    Args:
        first_stage: any retriever (``search(query, k, trace=...)``).
        judge: anything implementing ``score_relevance`` (a :class:`~retrievekit.core.judge.Judge`).
        config: :class:`JudgeRerankConfig`.
        label: what the trace says about the judge (e.g. ``"trained judge from runs/judge"``).

    A hit's score is the judge's probability (``mix == 0``) or the blended z-score; :attr:`last_details` maps the
    last reranked ids to ``judge_p``, ``first_stage_score`` and ``first_stage_rank``.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import WordJudge
        >>> docs = [Passage(id="a", text="pain and more pain"), Passage(id="b", text="Aspirin eases pain.")]
        >>> r = JudgeRerankRetriever(BM25Index.build(docs), WordJudge("aspirin"))
        >>> hit = r.search("pain", k=2)[0]
        >>> hit.id, r.last_details[hit.id]["judge_p"], r.last_details[hit.id]["first_stage_rank"]
        ('b', 0.9, 1)
    """

    def __init__(
        self,
        first_stage: Retriever,
        judge: RelevanceJudge,
        config: JudgeRerankConfig | None = None,
        *,
        label: str | None = None,
    ) -> None:
        if not hasattr(judge, "score_relevance"):
            raise InvalidInputError(f"judge must implement score_relevance, got {type(judge).__name__}")
        self.first_stage = first_stage
        self.judge = judge
        self.config = config or JudgeRerankConfig()
        self.label = label or repr(judge)
        self.last_details: dict[str, dict[str, float]] = {}

    def __repr__(self) -> str:
        return f"JudgeRerankRetriever({self.label}, rerank_k={self.config.rerank_k}, mix={self.config.mix})"

    def rerank(self, query: str, hits: Sequence[ScoredHit], *, trace: Trace | None = None) -> list[ScoredHit]:
        """Reorder ``hits`` (first-stage order) by the judge; returns all of them with new scores and ranks."""
        if not hits:
            return []
        texts = [object_text(h.obj) for h in hits]
        scores = judge_relevance(self.judge, query, texts, trace=trace, refs=[(h.id,) for h in hits])
        probs = np.asarray(scores, dtype=np.float64)
        mix = float(self.config.mix)
        if mix > 0:
            p = np.clip(probs, 1e-6, 1 - 1e-6)
            first = np.array([h.score for h in hits], dtype=np.float64)
            final = (1 - mix) * zscore(np.log(p / (1 - p))) + mix * zscore(first)
        else:
            final = probs
        order = sorted(range(len(hits)), key=lambda i: (-final[i], i))
        self.last_details = {
            hits[i].id: {"judge_p": float(probs[i]), "first_stage_score": float(hits[i].score), "first_stage_rank": i}
            for i in order
        }
        return [ScoredHit(obj=hits[i].obj, score=float(final[i]), rank=rank) for rank, i in enumerate(order)]

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Top ``k`` of the first stage's ``rerank_k`` hits, in the judge's order."""
        query = check_query(query)
        k = check_k(k)
        if trace is not None:
            trace.note("judge", self.label)
        if trace is not None:
            with trace.stage("first_stage"):
                hits = self.first_stage.search(query, k=max(k, self.config.rerank_k), trace=trace)
        else:
            hits = self.first_stage.search(query, k=max(k, self.config.rerank_k))
        hits = list(hits)[: self.config.rerank_k]
        if trace is not None:
            with trace.stage("judge"):
                ranked = self.rerank(query, hits, trace=trace)
        else:
            ranked = self.rerank(query, hits)
        return ranked[:k]


def _is_zero_shot(judge_dir: str | Path) -> bool:
    """``--judge zero-shot`` (when no folder of that name exists) asks for the untrained judge, as in the hooks."""
    spec = parse_judge(judge_dir)
    return spec is not None and spec.kind == "zero-shot"


def _load_or_zero_shot(
    judge_dir: str | Path | None,
    llm: Any,
    *,
    batch_size: int,
    max_passage_tokens: int | None,
) -> tuple[Any, str]:
    from retrievekit.core.judge.scorer import Judge, load_judge

    if judge_dir is not None and str(judge_dir).strip() and not _is_zero_shot(judge_dir):
        judge = load_judge(judge_dir, llm=llm_label(llm, default=None), batch_size=batch_size)
        return judge, f"trained judge from {judge_dir} (base {judge.base_model})"
    judge = Judge.zero_shot(llm, batch_size=batch_size, max_passage_tokens=max_passage_tokens or 256)
    return judge, f"zero-shot judge {getattr(llm, 'name', None) or llm_label(llm)} (no trained judge given)"


def create_judge_rerank(
    corpus: Sequence[DataObject],
    *,
    judge: RelevanceJudge | None = None,
    judge_dir: str | Path | None = None,
    llm: Any = None,
    first_stage: str | Retriever = "bm25",
    work_dir: str | Path | None = None,
    batch_size: int = 32,
    max_passage_tokens: int | None = None,
    store: Any = None,
    embedder: Any = None,
    **options: Any,
) -> JudgeRerankRetriever:
    """A :class:`JudgeRerankRetriever` over ``corpus``: ``judge`` as given, else loaded from ``judge_dir``, else the
    zero-shot judge of ``llm`` (a loaded ``LocalLM`` or a model's name; default
    :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`); ``first_stage`` a method name (``bm25`` | ``dense`` |
    ``hybrid``) or a retriever; ``store`` the user's vector store as the dense side of a ``dense`` or ``hybrid``
    first stage (``MethodContext.store``), ``embedder`` the embedding model of such a stage (``MethodContext.embedder``);
    ``options`` are :class:`JudgeRerankConfig` fields.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.fakes import WordJudge  # a stand-in judge
        >>> docs = [Passage(id="a", text="pain and more pain"), Passage(id="b", text="Aspirin eases pain.")]
        >>> [h.id for h in create_judge_rerank(docs, judge=WordJudge("aspirin"), rerank_k=50).search("pain", k=2)]
        ['b', 'a']
    """
    from retrievekit.core.registry import build_method

    config = JudgeRerankConfig.from_options(options)
    if isinstance(first_stage, str):
        base = build_method(
            first_stage,
            MethodContext(
                corpus=corpus, work_dir=Path(work_dir) if work_dir is not None else None, store=store, embedder=embedder
            ),
        )
    else:
        base = first_stage
    if judge is not None:
        label = repr(judge)
    else:
        judge, label = _load_or_zero_shot(judge_dir, llm, batch_size=batch_size, max_passage_tokens=max_passage_tokens)
    return JudgeRerankRetriever(base, judge, config, label=label)


def build_judge_rerank(ctx: MethodContext) -> JudgeRerankRetriever:
    """``retrievekit bench --method judge-rerank [--judge DIR]``: BM25 top-100 reranked by the judge.

    Options: ``first_stage`` (``bm25`` | ``dense`` | ``hybrid``), ``bm25_engine`` (its BM25 index's engine, as for
    ``bm25``), ``rerank_k`` (100), ``mix`` (0.0), ``batch_size`` (32), ``max_passage_tokens`` (zero-shot only; a
    trained judge uses its manifest's). The judge comes from
    ``judge_dir`` (set by ``--judge``; with ``--llm`` also given, the judge's base model must match it), else the
    zero-shot ``--llm`` model (default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`; also what ``--judge zero-shot``
    asks for); the trace says which. ``--judge cosine``, ``--judge served`` (with ``--llm CLIENT:MODEL@URL``) and the
    harness's ``--judge oracle[:S]`` work too. The judge scores exactly ``rerank_k``
    first-stage hits per query (one call), so ``rerank_k=N`` is the flat rerank that spends N judged items per query.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> class Aspirin:  # a stand-in judge (the harness puts --judge oracle here)
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.9 if "aspirin" in c.lower() else 0.2 for c in candidates]
        ...     def __repr__(self): return "Aspirin()"
        >>> docs = [Passage(id="a", text="pain and more pain"), Passage(id="b", text="Aspirin eases pain.")]
        >>> build_judge_rerank(MethodContext(corpus=docs, judge=Aspirin(), options={"rerank_k": "20"}))
        JudgeRerankRetriever(Aspirin(), rerank_k=20, mix=0.0)
    """
    from retrievekit.core.index.baselines import first_stage_options

    own = ("first_stage", "batch_size", "max_passage_tokens", "judge_dir", "progress", "bm25_engine")
    check_option_keys(ctx.options, [*(f.name for f in fields(JudgeRerankConfig)), *own], label="judge-rerank")
    opts = dict(ctx.options)
    opts.pop("progress", None)
    judge_dir = opts.pop("judge_dir", None)
    judge = ctx.judge  # a ready judge (the harness's --judge oracle), else --judge cosine, else loaded below
    spec = parse_judge(judge_dir)
    if judge is None and spec is not None and spec.kind not in ("trained", "zero-shot"):  # built here, not below
        judge, _ = judge_from_options(ctx)
    first = str(opts.pop("first_stage", "bm25"))
    first_opts = first_stage_options(first, opts)
    batch_size = int(opts.pop("batch_size", 32))
    mpt = opts.pop("max_passage_tokens", None)
    JudgeRerankConfig.from_options(opts)  # bad values refused before the first stage is built
    from retrievekit.core.registry import build_method

    return create_judge_rerank(
        ctx.corpus,
        judge=judge,
        judge_dir=spec.label if spec is not None else None,  # a JudgeSpec as its --judge string
        llm=ctx.llm,
        first_stage=build_method(first, ctx.stage(options=first_opts)),  # the user's embedder and store reach it
        work_dir=ctx.work_dir,
        store=ctx.store,
        batch_size=batch_size,
        max_passage_tokens=int(mpt) if mpt is not None else None,
        **opts,
    )
