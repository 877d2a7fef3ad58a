"""LATTICE online search: best-first beam search over the tree with calibrated, LLM-scored slates.

Per query (the reference code's behaviour, ``nilesh2797/llm-guided-retrieval`` ``src/tree_objects.py``, unless a
:class:`LatticeConfig` field says otherwise):

1. The frontier starts as the root (path relevance 1.0). Each of ``num_iters`` iterations takes the top
   ``beam_size`` frontier nodes by path relevance (ties by id) and expands them. The search always reaches the
   leaves: it runs at least the tree's height in iterations, then more while no leaf was reached (ours; the
   reference code returns nothing when ``num_iters`` is below the height).
2. The slate of an expanded node is its children plus anchors: the best already-scored node at the expanded
   node's depth (internal slates; it may be the node itself), or ``num_leaf_anchors`` leaves drawn from the leaves
   predicted so far (leaf slates; all of them when there are at most that many).
3. One LLM call scores the slate (:class:`~retrievekit.core.lattice.scoring.SlateScorer`); the slate joins the
   query's history and the latent scores are refit on every slate seen
   (:func:`~retrievekit.core.lattice.calibration.fit_latent_scores`).
4. A child's path relevance is ``f * s + (1 - f) * p(parent)`` (``s <= path_reset`` resets it to ``s``), with
   ``s`` the local slate score (reference code) or the calibrated score (paper). Internal children join the
   frontier; leaves join the predictions.
5. Leaves are ranked by ``w * calibrated + (1 - w) * p(parent)``.

:class:`Lattice` is the retriever over a tree (what :func:`~retrievekit.core.lattice.method.create_lattice` returns):
its scorer and this search, with the corpus exclusions of a dynamic corpus.

Examples:
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.fakes import WordScoreLLM  # scores 90 for items mentioning "sun", else 10
    >>> tree = SemanticTree.flat([Passage(id="a", text="sun power"), Passage(id="b", text="wind")])
    >>> [h.id for h in LatticeSearcher(tree, WordScoreLLM("sun")).search("solar", k=2)]
    ['a', 'b']
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.fallbacks import FallbackMonitor
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.lattice.anchors import gmm_threshold, sample_anchors
from retrievekit.core.lattice.calibration import fit_latent_scores
from retrievekit.core.lattice.config import LatticeConfig
from retrievekit.core.lattice.scoring import SlateFallback, SlateScorer, SlateScores, cosine_scores
from retrievekit.core.lattice.tree import ROOT, SemanticTree
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.trace import Trace, recall, remember
from retrievekit.core.types import ScoredHit

__all__ = ["Lattice", "LatticeSearcher", "SearchState", "gmm_threshold", "sample_anchors"]

MASKED_TEXT = "No Description."


@dataclass
class SearchState:
    """Everything one search did: for the trace, the drawing and tests.

    Attributes:
        query: the query searched.
        expanded: expanded node ids, in order.
        slates: ``(expanded node, slate ids, observed 0..1 scores, source)`` per slate.
        path_relevance: path relevance of every scored node.
        local: latest local score of every scored node.
        calibrated: calibrated latent score of every scored node (after the last fit).
        predicted: leaves reached, in order.
        anchors: anchors added per slate (by expanded node).

    Examples:
        >>> SearchState().expanded
        []
    """

    expanded: list[str] = field(default_factory=list)
    slates: list[tuple[str, list[str], list[float], str]] = field(default_factory=list)
    path_relevance: dict[str, float] = field(default_factory=dict)
    local: dict[str, float] = field(default_factory=dict)
    calibrated: dict[str, float] = field(default_factory=dict)
    predicted: list[str] = field(default_factory=list)
    anchors: dict[str, list[str]] = field(default_factory=dict)
    final_scores: dict[str, float] = field(default_factory=dict)
    query: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary.

        Examples:
            >>> sorted(SearchState().to_dict())[:2]
            ['anchors', 'expanded']
        """
        return {
            "expanded": list(self.expanded),
            "slates": [{"node": n, "ids": i, "scores": s, "source": src} for n, i, s, src in self.slates],
            "predicted": list(self.predicted),
            "anchors": dict(self.anchors),
        }


_Job = tuple[str, list[str], list[str], bool]
"""A slate to score: ``(expanded node, children, anchors, leaf slate?)``."""


@dataclass(frozen=True)
class _SearchRun:
    """One query's search: its inputs, the RNG of its anchors, and the containers the iterations update."""

    query: str
    excluded: frozenset[str]
    trace: Trace
    rng: np.random.Generator
    state: SearchState = field(default_factory=lambda: SearchState(path_relevance={ROOT: 1.0}))
    frontier: set[str] = field(default_factory=lambda: {ROOT})
    history: list[tuple[list[str], list[float]]] = field(default_factory=list)
    created: list[str] = field(default_factory=lambda: [ROOT])
    by_depth: dict[int, list[str]] = field(default_factory=dict)  # the scored nodes (root aside) by tree depth
    hidden: dict[str, bool] = field(default_factory=dict)
    query_vector: list[np.ndarray] = field(default_factory=list)  # embedded once, at the first fallback
    thresholds: dict[tuple[float, ...], float | None] = field(default_factory=dict)  # anchor draws' mixture fits


_Gen = Generator[list[ModelCall], list[Any], Any]


class _StateSlot:
    """The key a searcher's last state is kept under, per thread and asyncio task (``retrievekit.core.trace``)."""


class LatticeSearcher:
    """Best-first beam search over a :class:`~retrievekit.core.lattice.tree.SemanticTree` with an LLM scorer.

    Args:
        tree: the semantic tree.
        llm: the chat LLM that scores slates (or pass ``scorer``).
        config: :class:`~retrievekit.core.lattice.config.LatticeConfig`.
        scorer: a ready :class:`~retrievekit.core.lattice.scoring.SlateScorer` (overrides ``llm``).
        fallback: embedding fallback for failed slates (see ``SlateScorer``).
        embedder: the embedder of the tree's vectors: a failed slate is scored by cosine between the query's vector
            (one embedding call per search, at its first fallback) and the vectors the tree stores (none embedded
            again); a node without a stored vector is embedded with the others of its batch.

    Attributes:
        last_state: the :class:`SearchState` of the latest search made from the current thread or asyncio task.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.lattice.scoring import SlateScorer
        >>> tree = SemanticTree.flat([Passage(id="a", text="sun")])
        >>> LatticeSearcher(tree, scorer=SlateScorer(None, LatticeConfig(beam_size=3))).config.beam_size
        3
        >>> LatticeSearcher(tree)
        Traceback (most recent call last):
        ...
        ValueError: LatticeSearcher needs an llm or a scorer
    """

    def __init__(
        self,
        tree: SemanticTree,
        llm: ChatLLM | None = None,
        config: LatticeConfig | None = None,
        *,
        scorer: SlateScorer | None = None,
        fallback: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
        embedder: Any = None,
    ) -> None:
        self.tree = tree
        self.embedder = embedder
        self.config = config or (scorer.config if scorer is not None else LatticeConfig())
        if scorer is None:
            if llm is None:
                raise ValueError("LatticeSearcher needs an llm or a scorer")
            scorer = SlateScorer(llm, self.config, fallback=fallback)
        self.scorer = scorer
        self._states = _StateSlot()  # last_state is kept per thread and asyncio task, as last_trace is

    @property
    def last_state(self) -> SearchState | None:
        """The :class:`SearchState` of the latest search made from the current thread or asyncio task (concurrent
        callers each read their own; a thread or task that made none reads the latest from anywhere)."""
        return cast("SearchState | None", recall(self._states))

    @last_state.setter
    def last_state(self, state: SearchState | None) -> None:
        remember(self._states, cast(Any, state))

    # ------------------------------------------------------------------ helpers
    def _visible(self, node_id: str, excluded: Collection[str], hidden: dict[str, bool]) -> bool:
        if not excluded or self.config.mask_mode == "reference":
            return True
        got = hidden.get(node_id)
        if got is None:
            got = any(leaf not in excluded for leaf in self.tree.leaves_under(node_id))
            hidden[node_id] = got
        return got

    def _text(self, node_id: str, excluded: Collection[str]) -> str:
        if node_id in excluded:
            return MASKED_TEXT
        return self.tree.text(node_id)

    def _rng(self, query: str) -> np.random.Generator:
        h = int(hashlib.sha1(f"{self.config.seed}\x1f{query}".encode()).hexdigest()[:12], 16)
        return np.random.default_rng(h)

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        k: int = 10,
        *,
        trace: Trace | None = None,
        excluded_ids: Collection[str] = (),
    ) -> list[ScoredHit]:
        """Run the beam search for ``query``; return at most ``k`` leaves, best first.

        ``excluded_ids`` (a dynamic corpus) are never returned (``mask_mode`` says how they are shown).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.fakes import WordScoreLLM  # scores 90 for items mentioning "sun", else 10
            >>> docs = [Passage(id="a", text="sun"), Passage(id="b", text="sunny"), Passage(id="c", text="rain")]
            >>> searcher = LatticeSearcher(SemanticTree.flat(docs), WordScoreLLM("sun"))
            >>> [h.id for h in searcher.search("solar", k=5, excluded_ids={"a"})]
            ['b', 'c']
        """
        trace = trace if trace is not None else Trace()
        step = self.search_step(query, k, trace=trace, excluded_ids=excluded_ids)
        return cast(list[ScoredHit], drive(step, self.scorer.llm, trace=trace, **self._driver_options()))

    async def asearch(
        self, query: str, k: int = 10, *, trace: Trace | None = None, excluded_ids: Collection[str] = ()
    ) -> list[ScoredHit]:
        """:meth:`search` awaited: the same step, its slates sent by the async driver
        (:func:`~retrievekit.core.llm.drivers.adrive`) on the caller's loop.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.fakes import WordScoreLLM
            >>> docs = [Passage(id="a", text="sun"), Passage(id="b", text="rain")]
            >>> [h.id for h in asyncio.run(LatticeSearcher(SemanticTree.flat(docs), WordScoreLLM("sun")).asearch("q"))]
            ['a', 'b']
        """
        trace = trace if trace is not None else Trace()
        step = self.search_step(query, k, trace=trace, excluded_ids=excluded_ids)
        # its calibration, anchors and prompts on the loop, in the loop's turns (retrievekit.core.llm.loop_turns)
        return cast(list[ScoredHit], await adrive(step, self.scorer.llm, trace=trace, **self._driver_options()))

    def _driver_options(self) -> dict[str, Any]:
        return {"max_concurrency": self.config.max_concurrency, "embedder": self.embedder}

    def search_step(
        self, query: str, k: int, *, trace: Trace, excluded_ids: Collection[str] = ()
    ) -> Step[list[ScoredHit]]:
        """The search as a step (:mod:`retrievekit.core.llm.calls`): it yields each iteration's slates as one batch
        of model calls and returns the hits; :meth:`search` and :meth:`asearch` drive it."""
        query = check_query(query)
        k = check_k(k)
        run = _SearchRun(query, frozenset(excluded_ids), trace, self._rng(query))
        run.state.query = query
        with trace.stage("lattice.search"):
            yield from self._run_iterations(run)
            final = self._final_scores(run.state)
        run.state.final_scores = final
        self.last_state = run.state
        self._record_search(trace, run.state)
        ranked = sorted(final, key=lambda n: (-final[n], n))[:k]
        return [ScoredHit(obj=self.tree.objects[n], score=final[n], rank=i) for i, n in enumerate(ranked)]

    def _run_iterations(self, run: _SearchRun) -> _Gen:
        """``num_iters`` iterations, extended so that the search reaches the leaves: at least the tree's height, then
        more while no leaf was reached and the frontier is not empty, each of those expanding the deepest frontier
        nodes, so a leaf comes within the tree's height (a ``lattice.iters_extended`` note says so)."""
        asked = self.config.num_iters
        budget = max(asked, self.tree.height)
        done = 0
        while run.frontier and (done < budget or not run.state.predicted):
            yield from self._iterate(run, deepest_first=done >= budget)
            done += 1
        if done > asked:
            run.trace.count("lattice.iters_extended", done - asked)
            run.trace.note(
                "lattice.iters_extended",
                f"num_iters={asked} is below what reaching the leaves of this tree (height {self.tree.height}) takes: "
                f"ran {done} iterations",
            )

    def _chain(self, s: float, parent_p: float) -> float:
        """Path relevance of a node with score ``s`` under a parent of path relevance ``parent_p``."""
        cfg = self.config
        f = cfg.relevance_chain_factor
        return s if s <= cfg.path_reset else f * s + (1.0 - f) * parent_p

    def _expand_beam(self, run: _SearchRun, deepest_first: bool = False) -> list[_Job]:
        """Take the top ``beam_size`` frontier nodes off the frontier (by path relevance; the deepest first, then by
        path relevance, with ``deepest_first``); the slates to score for them."""
        cfg, tree, state = self.config, self.tree, run.state
        depth = tree.depth if deepest_first else (lambda n: 0)
        beam = sorted(run.frontier, key=lambda n: (-depth(n), -state.path_relevance.get(n, 0.0), n))[: cfg.beam_size]
        jobs: list[_Job] = []
        for v in beam:
            run.frontier.discard(v)
            state.expanded.append(v)
            children = [c for c in tree.children(v) if self._visible(c, run.excluded, run.hidden)]
            if cfg.mask_mode == "hide":
                children = [c for c in children if c not in run.excluded]
            if not children:
                continue
            leaf_slate = all(tree.is_leaf(c) for c in children)
            anchors = self._anchors(v, children, leaf_slate, run)
            state.anchors[v] = anchors
            jobs.append((v, children, anchors, leaf_slate))
        return jobs

    def _apply_slate(self, run: _SearchRun, job: _Job, res: SlateScores) -> None:
        """Record a scored slate; update its children's scores, the frontier and the predicted leaves."""
        v, children, anchors, _leaf = job
        state, excluded = run.state, run.excluded
        slate = children + anchors
        scores = list(res.scores)
        if self.config.mask_mode == "reference":
            scores = [0.0 if n in excluded else s for n, s in zip(slate, scores, strict=True)]
        run.history.append((slate, scores))
        state.slates.append((v, slate, scores, res.source))
        run.trace.count("lattice.slates")
        run.trace.count("lattice.candidates_scored", len(slate))
        parent_p = state.path_relevance.get(v, 0.0)
        for c, s in zip(children, scores[: len(children)], strict=True):
            state.local[c] = s
            if c not in state.path_relevance:
                run.created.append(c)
                run.by_depth.setdefault(self.tree.depth(c), []).append(c)
            state.path_relevance[c] = self._chain(s, parent_p)
            if self.tree.is_leaf(c):
                if c not in excluded and c not in state.predicted:
                    state.predicted.append(c)
            elif c not in state.expanded:
                run.frontier.add(c)
        for a, s in zip(anchors, scores[len(children) :], strict=True):
            state.local.setdefault(a, s)

    def _recalibrate(self, run: _SearchRun) -> None:
        """Refit the latent scores on every slate so far; with calibrated path scores, recompute the paths."""
        cfg, state = self.config, run.state
        cal = fit_latent_scores(
            run.history, tau=cfg.tau, weight_floor=cfg.calib_weight_floor, bias_ridge=cfg.calib_bias_ridge
        )
        state.calibrated = cal.scores
        if cfg.path_scores == "calibrated":
            for n in run.created[1:]:
                parent = self.tree.parent(n) or ROOT
                s = cal.scores.get(n, state.local.get(n, 0.0))
                state.path_relevance[n] = self._chain(s, state.path_relevance.get(parent, 0.0))

    def _iterate(self, run: _SearchRun, deepest_first: bool = False) -> _Gen:
        """One iteration: expand the beam, score its slates (one batch of calls), apply them, recalibrate."""
        jobs = self._expand_beam(run, deepest_first)
        results = yield from self._score_all(run, jobs)
        for job, res in zip(jobs, results, strict=True):
            self._apply_slate(run, job, res)
        if run.history:
            self._recalibrate(run)

    @staticmethod
    def _record_search(trace: Trace, state: SearchState) -> None:
        """The search's counters and its ``lattice.explored`` note."""
        trace.count("lattice.expanded", len(state.expanded))
        trace.count("lattice.leaves_predicted", len(state.predicted))
        trace.note(
            "lattice.explored",
            f"expanded {len(state.expanded)} nodes, scored {len(state.slates)} slates, reached {len(state.predicted)} leaves",
            expanded=list(state.expanded),
            predicted=list(state.predicted),
        )

    def _anchors(self, v: str, children: list[str], leaf_slate: bool, run: _SearchRun) -> list[str]:
        cfg, state = self.config, run.state
        child_set = set(children)
        if not leaf_slate:
            if not cfg.internal_anchor or v == ROOT:
                return []
            same = [n for n in run.by_depth.get(self.tree.depth(v), ()) if n not in child_set]
            if not same:
                return []
            return [min(same, key=lambda n: (-state.path_relevance[n], n))]
        pool = {n: state.calibrated.get(n, state.local.get(n, 0.0)) for n in state.predicted if n not in child_set}
        return sample_anchors(pool, cfg.num_leaf_anchors, mode=cfg.anchor_sampling, rng=run.rng, fitted=run.thresholds)

    def _score_all(self, run: _SearchRun, jobs: list[_Job]) -> _Gen:
        """The slates of one iteration: their calls as one batch, their replies read, failed ones scored by the
        fallback (:meth:`_fall_back`)."""
        asks = []
        for _v, children, anchors, leaf in jobs:
            texts = [self._text(n, run.excluded) for n in children + anchors]
            refs = [self.tree.leaf_ref(n) for n in children + anchors]  # what each node stands for (the judge hook)
            asks.append(self.scorer.ask(run.query, texts, leaf=leaf, refs=refs))
        if not asks:
            return []
        replies = yield [a.call for a in asks]
        read = [self.scorer.read(a, r, run.trace) for a, r in zip(asks, replies, strict=True)]
        failed = [(job, r) for job, r in zip(jobs, read, strict=True) if isinstance(r, SlateFallback)]
        scores = (yield from self._fallback_scores(run, failed)) if failed else {}
        return [
            self.scorer.fall_back(r, run.trace, scores=scores.get(id(r))) if isinstance(r, SlateFallback) else r
            for r in read
        ]

    def _fallback_scores(self, run: _SearchRun, failed: list[tuple[_Job, SlateFallback]]) -> _Gen:
        """Cosine scores of the failed slates from the tree's stored vectors and the query's (embedded once per
        search); none without an embedder (or with a ``fallback`` scorer of the caller's, which is used instead)."""
        if self.embedder is None or self.scorer.fallback is not None:
            return {}
        if not run.query_vector:
            (got,) = yield [ModelCall.embed([run.query], purpose="lattice.fallback.query")]
            if isinstance(got, Exception):
                raise got
            run.query_vector.append(np.asarray(got)[0])
        nodes = sorted({n for (_v, children, anchors, _l), _f in failed for n in children + anchors})
        vectors = {n: self.tree.embeddings[n] for n in nodes if n in self.tree.embeddings and n not in run.excluded}
        missing = [n for n in nodes if n not in vectors]
        if missing:
            (got,) = yield [ModelCall.embed([self._text(n, run.excluded) for n in missing], purpose="lattice.fallback")]
            if isinstance(got, Exception):
                raise got
            vectors.update(zip(missing, np.asarray(got), strict=True))
        out: dict[int, list[float]] = {}
        for (_v, children, anchors, _l), f in failed:
            matrix = np.stack([vectors[n] for n in children + anchors])
            out[id(f)] = cosine_scores(run.query_vector[0], matrix)
        return out

    def _final_scores(self, state: SearchState) -> dict[str, float]:
        w = self.config.leaf_score_weight
        out: dict[str, float] = {}
        for leaf in state.predicted:
            parent = self.tree.parent(leaf) or ROOT
            cal = state.calibrated.get(leaf, state.local.get(leaf, 0.0))
            p_parent = state.path_relevance.get(parent, 0.0)
            score = w * cal + (1.0 - w) * p_parent
            out[leaf] = float(score) if math.isfinite(score) else 0.0
        return out


class Lattice:
    """LATTICE retriever: LLM-guided beam search over a :class:`~retrievekit.core.lattice.tree.SemanticTree`.

    Args:
        tree: the semantic tree (built or loaded).
        llm: chat LLM that scores slates (a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` scores them with
            one ``score_relevance`` call each instead of the JSON prompt).
        config: :class:`~retrievekit.core.lattice.config.LatticeConfig`.
        embedder: query/text embedder for the per-slate fallback when the LLM fails (None: omitted score).
        excluded_ids: ids never returned (a dynamic corpus); per call ``search(..., excluded_ids=...)`` adds more.

    Attributes:
        last_state: the :class:`~retrievekit.core.lattice.search.SearchState` of the latest search made from the
            current thread or asyncio task (explored nodes, slates, scores; concurrent callers each read their own),
            e.g. for :func:`~retrievekit.core.lattice.draw.draw_search`.
        fallbacks: the :class:`~retrievekit.core.fallbacks.FallbackMonitor` of its searches: a
            :class:`~retrievekit.core.errors.FallbackWarning` once when slates fall back to cosine scores on more than
            5 % of the LLM asks (a server answering garbage), the rule ``retrievekit bench`` warns by.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> Lattice(SemanticTree.flat([Passage(id="a", text="x")]), llm=None).config.beam_size
        2
    """

    def __init__(
        self,
        tree: SemanticTree,
        llm: ChatLLM,
        config: LatticeConfig | None = None,
        *,
        embedder: Any = None,
        excluded_ids: Collection[str] = (),
    ) -> None:
        self.tree = tree
        self.llm = llm
        self.config = config or LatticeConfig()
        self.embedder = embedder = as_embedder(embedder, where="Lattice")
        self.excluded_ids = frozenset(excluded_ids)
        self.scorer = SlateScorer(llm, self.config)
        self.searcher = LatticeSearcher(tree, config=self.config, scorer=self.scorer, embedder=embedder)
        self.fallbacks = FallbackMonitor("LATTICE")

    @property
    def last_state(self) -> SearchState | None:
        """State of the latest search made from the current thread or asyncio task."""
        return self.searcher.last_state

    def search(
        self, query: str, k: int = 10, *, trace: Trace | None = None, excluded_ids: Collection[str] = ()
    ) -> list[ScoredHit]:
        """Beam search for ``query``; at most ``k`` leaves (only leaves the search reached), best first."""
        excluded = self.excluded_ids | frozenset(excluded_ids)
        sub = Trace()  # this query's own counts, for the fallback rate; merged into the caller's trace
        try:
            return self.searcher.search(query, k, trace=sub, excluded_ids=excluded)
        finally:
            if trace is not None:
                trace.merge(sub)
            self.fallbacks.observe(sub)

    async def asearch(
        self, query: str, k: int = 10, *, trace: Trace | None = None, excluded_ids: Collection[str] = ()
    ) -> list[ScoredHit]:
        """:meth:`search` awaited: the slates' requests await the model's async API on the caller's loop (no thread
        per query or per request for a served model); cancelling the awaiting task stops the search's requests.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.fakes import WordScoreLLM
            >>> lat = Lattice(SemanticTree.flat([Passage(id="a", text="sun")]), WordScoreLLM("sun"))
            >>> [h.id for h in asyncio.run(lat.asearch("solar"))]
            ['a']
        """
        excluded = self.excluded_ids | frozenset(excluded_ids)
        sub = Trace()
        try:
            return await self.searcher.asearch(query, k, trace=sub, excluded_ids=excluded)
        finally:
            if trace is not None:
                trace.merge(sub)
            self.fallbacks.observe(sub)

    def __repr__(self) -> str:
        return f"Lattice({self.tree!r}, llm={self.llm!r})"
