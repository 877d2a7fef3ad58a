"""ARM's retriever (:class:`Arm`): alignment, base retrieval, drafts, verification and aggregation per query; the
method and its factories are described in :mod:`retrievekit.core.arm.method`."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from retrievekit.core.arm.aggregate import aggregate
from retrievekit.core.arm.base import fuse_scores, top_k
from retrievekit.core.arm.compatibility import compatibility
from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.drafts import expand
from retrievekit.core.arm.keyword_cache import KeywordCache
from retrievekit.core.arm.keywords import KeywordAlignment, align_keywords, align_keywords_step, has_scoring
from retrievekit.core.arm.mip import relevance_top_k, solve_mip
from retrievekit.core.arm.ngrams import NGramIndex
from retrievekit.core.arm.objects import MAX_LINKED, HeldObjects, ObjectsById, StoredObjects, linked_passages
from retrievekit.core.arm.recover import recovering
from retrievekit.core.arm.serialize import serialize_object, unique_names
from retrievekit.core.arm.vectors import ArmVectors
from retrievekit.core.arm.verify import Verdict, VerifyAsk, ask_verification, read_verification, verify_draft
from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import EmptyCorpusError, InvalidInputError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.llm.calls import Step
from retrievekit.core.llm.concurrency import map_calls
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["MAX_LINKED", "Arm", "Draft"]


@dataclass(frozen=True)
class Draft:
    """One structure-aligned draft: pool indices of its objects and the connections kept between them.

    Examples:
        >>> Draft(expand_k=3, objects=(0, 2), edges=((0, 2),), status="optimal").objects
        (0, 2)
    """

    expand_k: int
    objects: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    status: str
    candidates: int = 0


class Arm:
    """ARM over a corpus of passages, tables and table rows.

    Args:
        corpus: the data objects (tables keep their ``cell_links`` metadata when the data has hyperlinks).
        llm: a scoring LM (``LocalLM``: constrained keywords and verification) or any chat LLM with
            ``complete_json`` (snapped keywords, JSON verification); ``None`` runs without LLM stages (noted).
            A :class:`~retrievekit.core.llm.protocol.RelevanceJudge` verifies drafts with ``score_relevance``
            (``config.judge_threshold``); its keywords go through its chat (or scoring) side as usual.
        config: :class:`ArmConfig` (reference defaults when omitted).
        dense: a dense index with ``search`` and ``embedder`` (default: an in-memory ``DenseIndex``).
        bm25: a :class:`~retrievekit.core.index.bm25.BM25Index` (default: built over ``corpus``).
        embedder: embeds cells and headers (default: the dense index's embedder).
        keyword_cache: a :class:`~retrievekit.core.arm.keyword_cache.KeywordCache`: keyword alignments are read
            from it when present and stored after decoding (a sweep then decodes each question once), a fallback to
            the question's words too when the model's reply caused it (not when the model could not be reached).

    Attributes:
        returns_set: True unless ``config.fill_to_k`` (``retrievekit bench`` then scores set F1).

    Examples:
        >>> from retrievekit.core.types import Passage, Table
        >>> from retrievekit.core.fakes import OnesEmbedder as Ones
        >>> corpus = [Table(id="t", title="Cast", header=("Role", "Series"), rows=(("Robert", "Prime Suspect"),)),
        ...           Passage(id="p", title="Prime Suspect", text="Prime Suspect was created by Lynda La Plante.")]
        >>> arm = Arm(corpus, None, embedder=Ones())  # None: no LLM stages; LocalLM.load(DEFAULT_MODEL) adds them
        >>> hits = arm.search("Who created the series with Robert?", k=5)
        >>> arm.returns_set, hits[0].obj.metadata["arm_links"]
        (True, ["cell 'Prime Suspect' in table 'Cast' matches passage 'Prime Suspect'"])
    """

    def __init__(
        self,
        corpus: Sequence[DataObject],
        llm: Any = None,
        config: ArmConfig | None = None,
        *,
        dense: Retriever | None = None,
        bm25: BM25Index | None = None,
        embedder: Any = None,
        keyword_cache: KeywordCache | None = None,
    ) -> None:
        self.corpus: Sequence[DataObject] | None = check_corpus(corpus)
        bm25 = bm25 if bm25 is not None else BM25Index.build(self.corpus)
        embedder = as_embedder(embedder, where="Arm")
        if dense is None:
            from retrievekit.core.index.dense import DenseIndex

            # a unique collection: in-memory Chroma shares one client per process, and a rebuilt name is replaced
            dense = DenseIndex.build(self.corpus, embedder=embedder, collection_name=f"arm-{uuid.uuid4().hex[:16]}")
        self._setup(HeldObjects(self.corpus), llm, config, dense, bm25, embedder, keyword_cache)

    @classmethod
    def from_indexes(
        cls,
        bm25: BM25Index,
        dense: Retriever,
        llm: Any = None,
        config: ArmConfig | None = None,
        *,
        embedder: Any = None,
        keyword_cache: KeywordCache | None = None,
    ) -> Arm:
        """ARM over a BM25 index and a dense index (or store) built before over the same objects, with no corpus
        listed: a search reads the objects it needs (its candidates and the passages their tables link to) from
        ``bm25``'s document store, for them alone on the tantivy engine. A BM25 index opened from its folder
        (:meth:`BM25Index.load <retrievekit.core.index.bm25.BM25Index.load>`) and a vector store then serve millions
        of objects in a process that holds what one search reads; :attr:`corpus` is None. Candidates the BM25 index
        does not hold are left out (an ``unknown_candidates`` event). Other arguments as for :class:`Arm`.

        Examples:
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> from retrievekit.core.index.bm25 import BM25Config
            >>> from retrievekit.core.index.dense import DenseIndex
            >>> from retrievekit.core.types import Passage
            >>> docs = [Passage(id="p", text="Prime Suspect was created by Lynda La Plante."),
            ...         Passage(id="q", text="Tea is grown in Assam.")]
            >>> bm25 = BM25Index.build(docs, BM25Config(engine="tantivy"))
            >>> arm = Arm.from_indexes(bm25, DenseIndex.build(docs, embedder=OnesEmbedder()), None)
            >>> arm.corpus is None, [h.id for h in arm.search("Who created Prime Suspect?", k=1)]
            (True, ['p'])
        """
        if not isinstance(bm25, BM25Index):
            raise InvalidInputError(f"Arm.from_indexes needs a BM25Index as bm25, not {type(bm25).__name__}")
        if not callable(getattr(dense, "search", None)):
            raise InvalidInputError(f"Arm.from_indexes needs a dense index with search(), not {type(dense).__name__}")
        if len(bm25) == 0:
            raise EmptyCorpusError("the BM25 index holds no objects: nothing to search")
        arm = cls.__new__(cls)
        arm.corpus = None
        arm._setup(StoredObjects(bm25), llm, config, dense, bm25, as_embedder(embedder, where="Arm"), keyword_cache)
        return arm

    def _setup(
        self,
        objects: ObjectsById,
        llm: Any,
        config: ArmConfig | None,
        dense: Retriever,
        bm25: BM25Index,
        embedder: Any,
        keyword_cache: KeywordCache | None,
    ) -> None:
        """What both constructors set: the objects' home, the model, the indexes, the embedder and the caches."""
        self.objects = objects
        self.keyword_cache = keyword_cache
        self.config = config or ArmConfig()
        self.llm = llm
        self.scoring = has_scoring(llm)
        self.bm25 = bm25
        self.dense = dense
        emb = embedder if embedder is not None else getattr(dense, "embedder", None)
        if emb is None:
            from retrievekit.core.index.embeddings import MiniLMEmbedder

            emb = MiniLMEmbedder.default()
        self.embedder = emb
        self.vectors = ArmVectors(emb, dense)

    @property
    def returns_set(self) -> bool:
        """Whether hits are ARM's selected set (not padded to ``k``)."""
        return not self.config.fill_to_k

    # ------------------------------------------------------------------ stages
    def align(self, query: str, vocab: Sequence[DataObject], trace: Trace) -> KeywordAlignment:
        """Stage 1: keywords and their corpus N-grams (``mode="off"`` when disabled or without an LLM); the step of
        :meth:`search_step`'s keyword stage, its call sent now."""
        return cast(KeywordAlignment, drive(self._align_step(query, vocab, trace), self._driven(), trace=trace))

    def _align_step(self, query: str, vocab: Sequence[DataObject], trace: Trace) -> Step[KeywordAlignment]:
        cfg = self.config
        if not cfg.keywords or cfg.max_keywords < 1:
            return KeywordAlignment([], {}, "off")
        if self.llm is None:
            trace.note("no_llm", "no LLM given: keyword alignment skipped")
            return KeywordAlignment([], {}, "off")
        key = None
        if self.keyword_cache is not None:
            key = self.keyword_cache.key(query, [o.id for o in vocab], self._alignment_settings())
            cached = self.keyword_cache.get(key)
            if cached is not None:
                trace.count("arm.keyword_cache_hits")
                if cached.fallback:
                    trace.note(
                        "fallback", f"{cached.fallback} (cached); using the question's content words as keywords"
                    )
                return cached
        index = NGramIndex.from_texts(
            ((o.id, serialize_object(o, query, rows=cfg.view_rows, chars=2000)) for o in vocab), cfg.ngram_max
        )
        trace.count("arm.vocab_ngrams", len(index))
        options: dict[str, Any] = {
            "max_keywords": cfg.max_keywords,
            "beams": cfg.keyword_beams,
            "keep": cfg.words_per_keyword,
            "max_tokens": cfg.keyword_max_tokens,
            "decompose_max_tokens": cfg.decompose_max_tokens,
            "constrained": cfg.constrained,
            "trace": trace,
        }
        keyword_llm = self._keyword_llm()
        if keyword_llm is self.llm:
            out = yield from align_keywords_step(keyword_llm, query, index, **options)
        else:  # a judge's in-process base model decodes the keywords (not the model the steps are driven through)
            out = align_keywords(keyword_llm, query, index, **options)
        if out.fallback:
            trace.note("fallback", f"{out.fallback}; using the question's content words as keywords")
        trace.note(
            "keywords",
            "; ".join(f"{kw} -> {', '.join(out.ngrams.get(kw, [])) or '-'}" for kw in out.keywords),
            mode=out.mode,
            keywords=list(out.keywords),
            ngrams={kw: list(v) for kw, v in out.ngrams.items()},
        )
        if key is not None and self.keyword_cache is not None and not out.transient:
            self.keyword_cache.put(key, out)  # a fallback from the model's own reply recurs: kept too
        return out

    def _keyword_llm(self) -> Any:
        """Who decodes the keywords: the LLM, or, for a judge that hands free text to a base model (a trained or
        zero-shot judge, the oracle and cosine judges: their ``chat_model()``), that base model, so a judge changes
        verification only and the keywords are decoded as without it (constrained, when the base is a scoring LM)."""
        chat_model = getattr(self.llm, "chat_model", None)
        if callable(chat_model):
            base = chat_model()
            if base is not None and has_scoring(base):
                return base
        return self.llm

    def _alignment_settings(self) -> dict[str, Any]:
        """What keyword alignment depends on besides the model, the question and the vocabulary."""
        cfg = self.config
        names = (
            "view_rows",
            "ngram_max",
            "max_keywords",
            "keyword_beams",
            "words_per_keyword",
            "keyword_max_tokens",
            "decompose_max_tokens",
            "constrained",
        )
        return {**{n: getattr(cfg, n) for n in names}, "scoring": has_scoring(self._keyword_llm())}

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """ARM's object set for ``query`` (at most ``k`` hits, aggregation order; see the module docstring):
        :meth:`search_step`, its model calls sent by the sync driver (:func:`~retrievekit.core.llm.drivers.drive`)."""
        trace = trace if trace is not None else Trace()
        step = self.search_step(query, k, trace=trace)
        return cast(
            list[ScoredHit], drive(step, self._driven(), trace=trace, max_concurrency=self.config.max_concurrency)
        )

    async def asearch(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """:meth:`search` awaited: the same step, its keyword and verification calls sent by the async driver
        (:func:`~retrievekit.core.llm.drivers.adrive`) on the caller's loop (no thread per query or per request
        for a served model; cancelling the awaiting task stops the query's requests). The stages without a model
        call (dense and BM25 retrieval, the MIP, a scoring LM's in-process decoding) run on the bridge's bounded pool
        between the calls, so the loop is never held by them.

        Examples:
            >>> import asyncio
            >>> from retrievekit.core.types import Passage
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> arm = Arm([Passage(id="p", text="Prime Suspect was created by Lynda La Plante.")], None,
            ...           embedder=OnesEmbedder())
            >>> [h.id for h in asyncio.run(arm.asearch("Who created Prime Suspect?"))]
            ['p']
        """
        trace = trace if trace is not None else Trace()
        step = self.search_step(query, k, trace=trace)
        width = self.config.max_concurrency
        return cast(
            list[ScoredHit], await adrive(step, self._driven(), trace=trace, max_concurrency=width, off_loop=True)
        )

    def _driven(self) -> Any:
        """The model the steps' calls are sent to (:func:`~retrievekit.core.arm.recover.recovering`)."""
        return None if self.llm is None else recovering(self.llm)

    def search_step(self, query: str, k: int, *, trace: Trace) -> Step[list[ScoredHit]]:
        """The search as a step (:mod:`retrievekit.core.llm.calls`): it yields the keyword call, then the drafts'
        verification calls as one batch, and returns the hits; :meth:`search` and :meth:`asearch` drive it."""
        query = check_query(query)
        k = check_k(k)
        cfg = self.config
        with trace.stage("arm.retrieve"):
            dense_hits = self.dense.search(query, max(cfg.vocab_objects, cfg.pool_size), trace=trace)
            qvec = self.vectors.query(query)
        with trace.stage("arm.keywords"):
            alignment = yield from self._align_step(query, [h.obj for h in dense_hits[: cfg.vocab_objects]], trace)
        trace.count("arm.keywords", len(alignment.keywords))
        trace.count("arm.keyword_ngrams", sum(len(v) for v in alignment.ngrams.values()))
        with trace.stage("arm.base"):
            base = self._base(query, alignment, dense_hits, qvec, trace)
        if base is None:
            return []
        pool, fused, base_ids, known = base
        objs = [known[i] for i in pool]
        R = np.array([fused[i] for i in pool], dtype=float)
        base_idx = [pool.index(b) for b in base_ids]
        trace.count("arm.pool_size", len(pool))
        with trace.stage("arm.compatibility"):
            vecs = self.vectors
            comp = compatibility(
                objs,
                vecs.of_objects(pool, known),
                query,
                vecs.embed,
                view_rows=cfg.view_rows,
                cell_cache=vecs.text_cache(),
            )
        drafts = self._drafts(base_idx, R, comp.matrix, trace)
        verdicts, min_votes, threshold = yield from self._verify(query, objs, drafts, comp, trace)
        with trace.stage("arm.aggregate"):
            agg = aggregate(
                verdicts,
                logprob_weight=cfg.logprob_weight,
                threshold=threshold,
                min_votes=min_votes,
                tiebreak={objs[i].id: float(R[i]) for i in range(len(objs))},
            )
            chosen = [a.id for a in agg][:k]
            if not chosen:
                trace.note("fallback", "no object passed aggregation; returning the base objects")
                chosen = base_ids[:k]
        info = {a.id: a for a in agg}
        trace.count("arm.set_size", len(chosen))
        return self._hits(chosen, info, pool, objs, R, drafts, comp, k, trace)

    def _base(
        self, query: str, alignment: KeywordAlignment, dense_hits: Sequence[ScoredHit], qvec: np.ndarray, trace: Trace
    ) -> tuple[list[str], dict[str, float], list[str], dict[str, DataObject]] | None:
        """The candidate pool (dense and BM25 with the keywords, fused; passages linked from the base tables), its
        fused relevance, the base objects and the pool's objects by id; None (noted) when there is no candidate."""
        cfg = self.config
        terms = alignment.all_terms()
        bm25_query = " ".join([query, *terms])
        if not self.bm25.query_terms(bm25_query):
            trace.note(
                "no_searchable_terms",
                "the query (with its keywords) has no searchable terms (only stop words or punctuation); "
                "BM25 adds nothing, objects are ranked by dense similarity alone",
            )
        bm25_hits = self.bm25.search(bm25_query, cfg.pool_size)  # the engine's top hits: no score for every object
        bm25_ids = [h.id for h in bm25_hits]
        cand = list(dict.fromkeys([h.id for h in dense_hits[: cfg.pool_size]] + bm25_ids))
        known = self.objects.fetch(cand, given={h.id: h.obj for h in bm25_hits})
        if len(known) < len(cand):
            missing = [i for i in cand if i not in known]
            trace.note(
                "unknown_candidates", f"{len(missing)} candidate(s) not among ARM's objects left out", ids=missing
            )
            cand = [i for i in cand if i in known]
        if not cand:
            trace.note("no_candidates", "neither dense nor BM25 returned a candidate; returning no hits")
            return None
        vecs = self.vectors.of_objects(cand, known)
        dense_s = {oid: float(v @ qvec) for oid, v in zip(cand, vecs, strict=True)}
        bm25_s = self.bm25.scores_of(bm25_query, cand)  # ids the BM25 index does not hold: left out
        fused = fuse_scores(dense_s, bm25_s, cfg.dense_weight, cfg.bm25_weight, ids=cand)
        base_ids = top_k(fused, cfg.base_k)
        pool = top_k(fused, cfg.pool_size)
        linked_objects = (
            linked_passages([known[b] for b in base_ids], set(pool), self.objects) if cfg.linked_passages else {}
        )
        known |= linked_objects
        linked = list(linked_objects)
        if linked:
            lv = self.vectors.of_objects(linked, known)
            for oid, v in zip(linked, lv, strict=True):
                dense_s[oid] = float(v @ qvec)
            bm25_s |= self.bm25.scores_of(bm25_query, linked)
            fused = fuse_scores(dense_s, bm25_s, cfg.dense_weight, cfg.bm25_weight, ids=[*pool, *linked])
            pool = [*pool, *linked]
            trace.count("arm.linked_passages", len(linked))
        return pool, fused, base_ids, known

    def _drafts(self, base_idx: Sequence[int], R: np.ndarray, C: np.ndarray, trace: Trace) -> list[Draft]:
        cfg = self.config
        drafts: list[Draft] = []
        for ek in cfg.expand_ks:
            with trace.stage("arm.expand"):
                cand = expand(base_idx, R, C, ek)
            sub_r, sub_c = R[cand], C[np.ix_(cand, cand)]
            with trace.stage("arm.mip"):
                if cfg.mip:
                    res = solve_mip(
                        sub_r,
                        sub_c,
                        cfg.ilp_k,
                        relevance_weight=cfg.relevance_weight,
                        compatibility_weight=cfg.compatibility_weight,
                        time_limit=cfg.mip_time_limit,
                        min_compatibility=cfg.min_compatibility,
                    )
                    sel, edges, status = res.selected, res.edges, res.status
                    trace.count("arm.mip_seconds", res.seconds)
                    if status != "optimal":
                        trace.count(f"arm.mip_{status}")
                        trace.note(f"mip_{status}", f"draft k={ek}: {res.message}", expand_k=ek)
                else:
                    sel, edges = relevance_top_k(sub_r, sub_c, cfg.ilp_k, min_compatibility=cfg.min_compatibility)
                    status = "relevance"
            drafts.append(
                Draft(
                    expand_k=ek,
                    objects=tuple(cand[i] for i in sel),
                    edges=tuple((cand[a], cand[b]) for a, b in edges),
                    status=status,
                    candidates=len(cand),
                )
            )
        trace.count("arm.drafts", len(drafts))
        return drafts

    def _verify(
        self, query: str, objs: Sequence[DataObject], drafts: Sequence[Draft], comp: Any, trace: Trace
    ) -> Step[tuple[list[dict[str, float]], int, float]]:
        cfg = self.config
        vote_only = [{objs[i].id: 0.0 for i in d.objects} for d in drafts]
        majority = cfg.min_votes or (len(drafts) // 2 + 1)
        if not cfg.verify:
            return vote_only, majority, float("-inf")
        if self.llm is None:
            trace.note("no_llm", "no LLM given: verification skipped; objects in a majority of drafts are kept")
            return vote_only, majority, float("-inf")
        with trace.stage("arm.verify"):
            verdicts = yield from self._verify_drafts(query, objs, drafts, comp, trace)
        if not verdicts:
            with trace.stage("arm.aggregate"):  # the votes' fallback, not an LLM ask of its own
                trace.note("fallback", "verification failed for every draft; objects in a majority of drafts are kept")
            return vote_only, majority, float("-inf")
        return verdicts, 1, cfg.threshold

    def _verify_drafts(
        self, query: str, objs: Sequence[DataObject], drafts: Sequence[Draft], comp: Any, trace: Trace
    ) -> Step[list[dict[str, float]]]:
        """Each draft's verdict (the chosen objects and their log-probs); failed drafts cast no votes."""
        cfg = self.config
        # one verification per distinct draft (an identical draft gets the identical greedy verdict), side by side
        keys = [(d.objects, d.edges) for d in drafts]
        distinct = list(dict.fromkeys(keys)) if cfg.verify_beams == 1 else keys
        first = [drafts[keys.index(key)] for key in distinct]
        results = yield from self._verdicts(query, objs, first, comp, trace)
        by_key = dict(zip(distinct, results, strict=True))
        verdicts: list[dict[str, float]] = []
        seen: set[tuple[Any, ...]] = set()
        for i, (d, key) in enumerate(zip(drafts, keys, strict=True)):
            v = by_key[key] if cfg.verify_beams == 1 else results[i]
            if key in seen and cfg.verify_beams == 1:
                trace.count("arm.verify_reused")
                if v.ok:
                    verdicts.append(dict(v.chosen))
                continue
            seen.add(key)
            if v.ok:
                verdicts.append(v.chosen)
            else:
                trace.count("arm.verify_failed")
                trace.note("fallback", f"draft k={d.expand_k}: {v.message}; it casts no votes", expand_k=d.expand_k)
        return verdicts

    def _verdicts(
        self, query: str, objs: Sequence[DataObject], drafts: Sequence[Draft], comp: Any, trace: Trace
    ) -> Step[list[Verdict]]:
        """The verdicts of ``drafts``: a chat LLM's or a judge's calls as one batch (yielded); a scoring LM decodes
        each in-process (one at a time: a local model)."""
        cfg = self.config
        if self.scoring and not isinstance(self.llm, RelevanceJudge):
            return map_calls(
                lambda d, sub: self._verify_one(query, objs, d, comp, sub),
                list(drafts),
                llm=self.llm,
                max_concurrency=cfg.max_concurrency,
                trace=trace,
            )
        asks = [self._ask(query, objs, d, comp) if d.objects else None for d in drafts]
        sent = [a for a in asks if a is not None]
        replies = iter((yield [a.call for a in sent]) if sent else [])
        return [
            Verdict({}, True, "empty draft") if a is None else read_verification(a, next(replies), trace) for a in asks
        ]

    def _ask(self, query: str, objs: Sequence[DataObject], d: Draft, comp: Any) -> VerifyAsk:
        """The call verifying one draft (:func:`~retrievekit.core.arm.verify.ask_verification`)."""
        return ask_verification(self.llm, query, *self._draft_parts(objs, d, comp), **self._verify_options())

    def _verify_one(self, query: str, objs: Sequence[DataObject], d: Draft, comp: Any, trace: Trace) -> Any:
        """One draft's LLM self-verification (:func:`~retrievekit.core.arm.verify.verify_draft`)."""
        return verify_draft(
            self.llm,
            query,
            *self._draft_parts(objs, d, comp),
            scoring=self.scoring,
            beams=self.config.verify_beams,
            trace=trace,
            **self._verify_options(),
        )

    @staticmethod
    def _draft_parts(objs: Sequence[DataObject], d: Draft, comp: Any) -> tuple[list[DataObject], list[str], list[Any]]:
        """A draft's objects, their unique names and the links between them: what its verification shows."""
        dobjs = [objs[i] for i in d.objects]
        connections = [comp.link(a, b) for a, b in d.edges if comp.link(a, b)]
        return dobjs, unique_names(dobjs), connections

    def _verify_options(self) -> dict[str, Any]:
        """The prompt settings a draft's verification takes, the same for its ask and its in-process decoding."""
        cfg = self.config
        return {
            "max_objects": cfg.verify_max_objects,
            "rows": cfg.prompt_rows,
            "chars": cfg.prompt_chars,
            "max_chars": cfg.prompt_max_chars,
            "judge_threshold": cfg.judge_threshold,
        }

    def _hits(
        self,
        chosen: Sequence[str],
        info: dict[str, Any],
        pool: Sequence[str],
        objs: Sequence[DataObject],
        R: np.ndarray,
        drafts: Sequence[Draft],
        comp: Any,
        k: int,
        trace: Trace,
    ) -> list[ScoredHit]:
        pos = {oid: i for i, oid in enumerate(pool)}
        draft_edges = {tuple(sorted(e)) for d in drafts for e in d.edges}
        chosen_set = set(chosen)
        links: dict[str, list[tuple[float, str]]] = {oid: [] for oid in chosen}
        for a_i, a in enumerate(chosen):
            for b in chosen[a_i + 1 :]:
                i, j = sorted((pos[a], pos[b]))
                text = comp.link(i, j)
                if text and ((i, j) in draft_edges or " links to " in text):
                    links[a].append((float(comp.matrix[i, j]), text))
                    links[b].append((float(comp.matrix[i, j]), text))
        n_links = sum(len(v) for v in links.values()) // 2
        trace.count("arm.links", n_links)
        hits: list[ScoredHit] = []
        for oid in chosen:
            agg = info.get(oid)
            score = float(agg.score) if agg else float(R[pos[oid]])
            meta: dict[str, Any] = {
                "arm_selected": True,
                "arm_score": score,
                "arm_votes": int(agg.votes) if agg else 0,
                "arm_logprob": float(agg.mean_logprob) if agg else 0.0,
                "arm_relevance": float(R[pos[oid]]),
                "arm_links": [t for _, t in sorted(links[oid], key=lambda x: (-x[0], x[1]))],
                "arm_set": list(chosen),
            }
            hits.append(ScoredHit(obj=self._with_meta(objs[pos[oid]], meta), score=score, rank=len(hits)))
        if self.config.fill_to_k and len(hits) < k:
            rest = sorted((i for i in range(len(pool)) if pool[i] not in chosen_set), key=lambda i: (-R[i], pool[i]))
            low = min((h.score for h in hits), default=0.0)
            for i in rest[: k - len(hits)]:
                meta = {"arm_selected": False, "arm_relevance": float(R[i]), "arm_links": [], "arm_set": list(chosen)}
                score = min(low, float(R[i])) - 1.0
                hits.append(ScoredHit(obj=self._with_meta(objs[i], meta), score=score, rank=len(hits)))
            trace.count("arm.filled", len(hits) - len(chosen))
        return hits

    @staticmethod
    def _with_meta(obj: DataObject, extra: dict[str, Any]) -> DataObject:
        meta = {key: v for key, v in obj.metadata.items() if key != "cell_links"}
        meta.update(extra)
        return dataclasses.replace(obj, metadata=meta)

    def __repr__(self) -> str:
        llm = "none" if self.llm is None else ("scoring" if self.scoring else "chat")
        return f"Arm(<{len(self.objects)} objects>, llm={llm}, mip={self.config.mip}, verify={self.config.verify})"
