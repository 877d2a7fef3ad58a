"""The One-SHOT selector: dedupe → relevance → (filter: drop) → knapsack → (filter: add, re-select) → crop, refill.

Mechanisms 1 (token-constrained Top-K_max knapsack) and 2 (metadata filter, LLM cropping) of "Fishing for Answers"
(arXiv 2509.04820); the stages and their settings are described in ``docs/methods/oneshot.md`` ("Pipeline").

:class:`OneShotSelector` is framework-free; ``retrievekit.llama_index.OneShotPostprocessor`` and
``retrievekit.langchain.OneShotCompressor`` are thin wrappers over it.

Input is a ranked candidate pool: :class:`~retrievekit.core.types.ScoredHit` objects, ``(object, score)`` pairs or
bare objects (score ``None``). Output is a :class:`OneShotResult`: the selected chunks **in relevance order**
(best first), the tokens they use (always <= the budget) and a trace of every decision.

Bad input is handled, never silently: an empty pool returns an empty result (noted); copies of one id with one text
are merged (at the first copy's rank, with the best finite score), one id with two texts is refused, duplicate texts
under other ids are dropped, all noted; missing scores switch the pool to rank-based relevance of the input order
(noted), and a NaN or infinite score ranks after every candidate with a finite score, which keep their order
(noted; :mod:`~retrievekit.core.oneshot.relevance`);
a budget below the smallest chunk returns nothing (noted) or raises with ``if_nothing_fits="raise"``; unparseable
dates are kept by the date rule (noted).

Examples:
    >>> from retrievekit.core.types import Passage
    >>> pool = [(Passage(id=f"p{i}", text="word " * (10 * (i + 1))), 1.0 / (i + 1)) for i in range(5)]
    >>> res = OneShotSelector(OneShotConfig(budget=60)).select("question?", pool)
    >>> res.ids, res.tokens_used
    (['p0', 'p1', 'p2'], 60)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from retrievekit.core.errors import InvalidInputError, RetrieveKitError
from retrievekit.core.llm.calls import Step
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.oneshot.candidates import Candidate, CandidateLike, OneShotResult, SelectedChunk, as_candidates
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.cropping import CropAsk, CropResult, SentenceCropper, sentence_spans
from retrievekit.core.oneshot.filters import (
    AddRule,
    DocumentCatalog,
    DropRule,
    FilterContext,
    MetadataKeys,
    Proposal,
    analyze_query,
    default_rules,
)
from retrievekit.core.oneshot.knapsack import KnapsackItem, KnapsackResult, solve_knapsack
from retrievekit.core.oneshot.relevance import pool_relevance
from retrievekit.core.oneshot.tokens import make_token_counter
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage

__all__ = ["Candidate", "OneShotResult", "OneShotSelector", "SelectedChunk", "as_candidates"]


@dataclass
class _Pool:
    """A pool entry during selection: the object, its scores, its token cost and where it came from."""

    obj: DataObject
    score: float | None
    relevance: float
    tokens: int
    rank: int
    origin: str = "knapsack"


_Proposals = dict[str, tuple[Proposal, str]]


def _by_relevance(pool: Iterable[_Pool]) -> list[_Pool]:
    """Relevance desc, ties by input rank: the order of results and of cropping."""
    return sorted(pool, key=lambda p: (-p.relevance, p.rank))


def _merge_duplicates(
    cands: Sequence[Candidate], *, dedupe_text: bool
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Stage 1: merge duplicate ids, then drop duplicate texts.

    Copies of one id with one text (whitespace aside) are one candidate: at the first copy's rank, with the best
    finite score of the copies (the first's when none is better). One id with two different texts is refused
    (``InvalidInputError`` naming the id): keeping either would silently lose the other. A duplicate text under
    another id is dropped; the first copy wins. Returns the unique candidates (input order) and ``(id, reason)`` for
    each one removed.
    """
    uniq: list[Candidate] = []
    dropped: list[tuple[str, str]] = []
    at: dict[str, int] = {}
    seen_text: dict[str, str] = {}
    for c in cands:
        key = " ".join(c.obj.text.split())
        if c.obj.id in at:
            i = at[c.obj.id]
            if key != " ".join(uniq[i].obj.text.split()):
                raise InvalidInputError(
                    f"two candidates have the id {c.obj.id!r} but different texts: give each chunk its own id"
                )
            if _finite(c.score) and (not _finite(uniq[i].score) or float(c.score) > float(uniq[i].score)):  # type: ignore[arg-type]
                uniq[i] = replace(uniq[i], score=c.score)
            dropped.append((c.obj.id, "duplicate id"))
            continue
        if dedupe_text and key and key in seen_text:
            at[c.obj.id] = -1
            dropped.append((c.obj.id, f"same text as {seen_text[key]}"))
            continue
        seen_text.setdefault(key, c.obj.id)
        at[c.obj.id] = len(uniq)
        uniq.append(c)
    return uniq, dropped


def _finite(score: float | None) -> bool:
    """Whether ``score`` is a finite number (not None, NaN or infinite)."""
    return score is not None and math.isfinite(score)


def _entity_vocabulary(ranked: Iterable[DataObject], key: str) -> list[str]:
    """Every entity named in the pool's metadata (``key``), sorted: what the query analysis may recognise."""
    vocab: set[str] = set()
    for o in ranked:
        raw = o.metadata.get(key)
        if isinstance(raw, str):
            vocab.add(raw)
        elif isinstance(raw, (list, tuple, set, frozenset)):
            vocab.update(str(e) for e in raw if isinstance(e, str))
    return sorted(vocab)


def _split_by_drop_rules(
    pool: Sequence[_Pool], rules: Sequence[DropRule], fctx: FilterContext
) -> tuple[list[_Pool], list[tuple[str, str]]]:
    """Stage 3 core: the first drop rule that gives a reason removes a candidate; returns (survivors, drops)."""
    survivors: list[_Pool] = []
    drops: list[tuple[str, str]] = []
    for p in pool:
        reason = None
        for rule in rules:
            why = rule.drop_reason(p.obj, fctx)
            if why:
                reason = f"{rule.name}: {why}"
                break
        if reason is None:
            survivors.append(p)
        else:
            drops.append((p.obj.id, reason))
    return survivors, drops


def _collect_proposals(
    rules: Sequence[AddRule], pool: Sequence[_Pool], chosen: Sequence[_Pool], fctx: FilterContext
) -> _Proposals:
    """Stage 5a: every add rule's proposals for chunks not chosen yet; per id the most relevant one (and its rule)."""
    relmap = {p.obj.id: p.relevance for p in pool}
    kept = [(p.obj, p.relevance) for p in chosen]
    proposals: _Proposals = {}
    for rule in rules:
        for prop in rule.propose(kept, relmap, fctx):
            if prop.obj.id in {p.obj.id for p in chosen}:
                continue
            old = proposals.get(prop.obj.id)
            if old is None or prop.relevance > old[0].relevance:
                proposals[prop.obj.id] = (prop, rule.name)
    return proposals


def _note_admitted(
    proposals: _Proposals, by_id: dict[str, _Pool], before: set[str], after: set[str], trace: Trace
) -> None:
    """Stage 5c: mark and note the proposals the re-selection admitted, the chunks they displaced, the rest."""
    for pid in sorted(after - before):
        if pid not in proposals:
            continue  # an ordinary pool chunk the re-selection preferred
        prop, rname = proposals[pid]
        by_id[pid].origin = f"add:{rname}"
        trace.note("oneshot.add", f"added {pid} ({rname}): {prop.reason}", id=pid, rule=rname, reason=prop.reason)
    displaced = sorted(before - after)
    if displaced:
        trace.note(
            "oneshot.add",
            f"{len(displaced)} chunk(s) gave way to added ones within the budget",
            displaced=displaced,
        )
    not_admitted = len(proposals) - len(after & set(proposals))
    if not_admitted:
        trace.note("oneshot.add", f"{not_admitted} proposal(s) did not fit the budget profitably")


class OneShotSelector:
    """Token-budgeted chunk selection with an optional metadata filter and LLM cropping.

    Args:
        config: :class:`OneShotConfig` (budget, K_max, solver, filter/crop switches...).
        rules: filter rules (drop and add rules, applied in order) when ``config.filter``; default
            :func:`~retrievekit.core.oneshot.filters.default_rules`.
        catalog: documents the query may name (titles/aliases); merged with one built from the pool's metadata.
        keys: which metadata keys hold document id, order, date, title and entities.
        lookup: ``lookup(doc_id, order) -> object | None`` to fetch neighbours outside the pool (e.g. from a corpus:
            see :meth:`corpus_lookup`).
        llm: a ChatLLM for cropping (required when ``config.crop``).
        token_counter: overrides ``config.tokenizer`` (any ``callable(text) -> int`` or tokenizer with ``encode``).

    Examples:
        >>> sel = OneShotSelector(OneShotConfig(budget=5, k_max=2))
        >>> sel.select("q", [(Passage(id="a", text="one two"), 3.0), (Passage(id="b", text="three"), 1.0)]).ids
        ['a', 'b']
    """

    def __init__(
        self,
        config: OneShotConfig | None = None,
        *,
        rules: Sequence[DropRule | AddRule] | None = None,
        catalog: DocumentCatalog | None = None,
        keys: MetadataKeys | None = None,
        lookup: Callable[[Any, Any], DataObject | None] | None = None,
        llm: ChatLLM | None = None,
        token_counter: Callable[[str], int] | Any = None,
    ) -> None:
        self.config = config or OneShotConfig()
        self.rules = list(rules) if rules is not None else default_rules()
        for r in self.rules:
            if not isinstance(r, (DropRule, AddRule)):
                raise InvalidInputError(f"rule {r!r} implements neither DropRule.drop_reason nor AddRule.propose")
        self.catalog = catalog
        self.keys = keys or MetadataKeys()
        self.lookup = lookup
        self.llm = llm
        if self.config.crop and llm is None:
            raise InvalidInputError("config.crop=True needs an llm= (any ChatLLM, e.g. a loaded LocalLM)")
        self.count_tokens = make_token_counter(token_counter if token_counter is not None else self.config.tokenizer)

    @staticmethod
    def corpus_lookup(
        corpus: Iterable[DataObject], keys: MetadataKeys | None = None
    ) -> Callable[[Any, Any], DataObject | None]:
        """A neighbour lookup over a corpus: ``(doc_id, order) -> object``.

        Examples:
            >>> lk = OneShotSelector.corpus_lookup([Passage(id="a", text="x", metadata={"DocumentID": 1, "order": 0})])
            >>> lk(1, 0).id, lk(1, 1)
            ('a', None)
        """
        keys = keys or MetadataKeys()
        table: dict[tuple[Any, Any], DataObject] = {}
        for o in corpus:
            d, k = o.metadata.get(keys.document), o.metadata.get(keys.order)
            if d is not None and k is not None:
                table.setdefault((d, k), o)
        return lambda doc, order: table.get((doc, order))

    # ----------------------------------------------------------------- main
    def select(self, query: str, candidates: Iterable[CandidateLike], *, trace: Trace | None = None) -> OneShotResult:
        """Select chunks for ``query`` from a ranked pool within the token budget.

        The stages, in order: dedupe, relevance and tokens, drop rules, knapsack, add rules (a second knapsack),
        crop and refill; each is one method below and records its decisions in ``trace``. The cropping calls are
        sent by the sync model driver (:func:`~retrievekit.core.llm.drivers.drive`, side by side on a served LLM).

        Examples:
            >>> OneShotSelector().select("q", []).chunks
            []
        """
        trace = trace if trace is not None else Trace()
        step = self.select_step(query, candidates, trace=trace)
        return drive(step, self.llm, trace=trace, max_concurrency=self.config.max_concurrency)

    async def aselect(
        self, query: str, candidates: Iterable[CandidateLike], *, trace: Trace | None = None
    ) -> OneShotResult:
        """:meth:`select` awaited: the same step, its cropping calls sent by the async model driver
        (:func:`~retrievekit.core.llm.drivers.adrive`) on the caller's loop (a served LLM through its async client,
        no thread per query or request); cancelling it cancels the calls in flight and sends no more.

        Examples:
            >>> import asyncio
            >>> pool = [(Passage(id="a", text="one two"), 3.0), (Passage(id="b", text="three"), 1.0)]
            >>> asyncio.run(OneShotSelector(OneShotConfig(budget=5, k_max=2)).aselect("q", pool)).ids
            ['a', 'b']
        """
        trace = trace if trace is not None else Trace()
        step = self.select_step(query, candidates, trace=trace)
        return await adrive(step, self.llm, trace=trace, max_concurrency=self.config.max_concurrency)

    def select_step(self, query: str, candidates: Iterable[CandidateLike], *, trace: Trace) -> Step[OneShotResult]:
        """The selection as a step (:mod:`retrievekit.core.llm.calls`): it yields the cropping calls as one batch
        (when cropping is on) and returns the :class:`OneShotResult`; :meth:`select` and :meth:`aselect` drive it."""
        cfg = self.config
        cands = as_candidates(candidates)
        with trace.stage("oneshot"):
            if not cands:
                trace.note("oneshot.empty", "no candidates to select from; returning nothing")
                return OneShotResult([], cfg.budget, 0, "empty", [], trace)
            uniq, dropped = self._dedupe(cands, trace)
            pool = self._score(uniq, trace)
            fctx = self._filter_context(query, pool, trace) if cfg.filter else None
            if fctx is not None:
                pool = self._drop(pool, fctx, dropped, trace)
            if not self._anything_fits(pool, trace):
                return OneShotResult([], cfg.budget, 0, "empty", dropped, trace)
            res, chosen = self._knapsack(pool, cfg.budget, cfg.k_max, trace)
            if fctx is not None:
                res, chosen = self._add(pool, chosen, res, dropped, len(uniq), fctx, trace)
            cropped_ids = yield from self._crop(query, chosen, trace)
            chosen = self._refill(pool, chosen, trace) if cfg.crop_refill and cropped_ids else chosen
            return self._result(chosen, cropped_ids, res, dropped, len(cands), trace)

    # ----------------------------------------------------------------- stages
    def tokens_of(self, obj: DataObject) -> int:
        """Tokens charged for ``obj``: its text's count plus ``per_chunk_overhead``, at least 1.

        Examples:
            >>> OneShotSelector().tokens_of(Passage(id="a", text=""))
            1
        """
        return max(1, int(self.count_tokens(obj.text)) + self.config.per_chunk_overhead)

    def _dedupe(self, cands: Sequence[Candidate], trace: Trace) -> tuple[list[Candidate], list[tuple[str, str]]]:
        """Stage 1: :func:`_merge_duplicates`, noted in the trace."""
        uniq, dropped = _merge_duplicates(cands, dedupe_text=self.config.dedupe_text)
        if dropped:
            trace.note(
                "oneshot.dedupe",
                f"merged {len(dropped)} duplicate candidate(s) (one id, one text: the first copy's rank with the best "
                "score; one text, another id: the first copy)",
                ids=[d[0] for d in dropped],
            )
        return uniq, dropped

    def _score(self, uniq: Sequence[Candidate], trace: Trace) -> list[_Pool]:
        """Stage 2: the knapsack value (normalised relevance) and token cost of every unique candidate."""
        rel = self._relevances(uniq, trace)
        return [
            _Pool(c.obj, c.score, r, self.tokens_of(c.obj), i) for i, (c, r) in enumerate(zip(uniq, rel, strict=True))
        ]

    def _relevances(self, cands: Sequence[Candidate], trace: Trace) -> list[float]:
        """The knapsack values of the pool's scores: :func:`~retrievekit.core.oneshot.relevance.pool_relevance`."""
        cfg = self.config
        scores = [c.score for c in cands]
        ids = [c.obj.id for c in cands]
        return pool_relevance(scores, cfg.score_normalization, cfg.relevance_floor, trace, ids=ids)

    def _filter_context(self, query: str, pool: Sequence[_Pool], trace: Trace) -> FilterContext:
        """What the filter rules see: the query analysed against the pool's and the catalog's documents and entities."""
        ranked = [p.obj for p in _by_relevance(pool)]
        with trace.stage("oneshot.filter"):
            catalog = DocumentCatalog.from_chunks(ranked, self.keys)
            if self.catalog is not None:
                for d in self.catalog.documents.values():
                    catalog.merge(d)
            info = analyze_query(query, catalog, _entity_vocabulary(ranked, self.keys.entities))
        return FilterContext(query=info, ranked=ranked, keys=self.keys, lookup=self.lookup, trace=trace)

    def _drop(
        self, pool: list[_Pool], fctx: FilterContext, dropped: list[tuple[str, str]], trace: Trace
    ) -> list[_Pool]:
        """Stage 3: apply the drop rules; returns the survivors and appends the drops to ``dropped``.

        Drops that would empty the pool are ignored for this query (noted as a fallback).
        """
        rules = [r for r in self.rules if isinstance(r, DropRule)]
        with trace.stage("oneshot.filter"):
            survivors, drops = _split_by_drop_rules(pool, rules, fctx)
            if drops and not survivors:
                trace.note(
                    "fallback",
                    f"drop rules would remove all {len(pool)} candidates; ignoring the drops for this query",
                )
                return pool
            for cid, why in drops:
                trace.note("oneshot.drop", f"dropped {cid}: {why}", id=cid, reason=why)
        dropped.extend(drops)
        return survivors

    def _anything_fits(self, pool: Sequence[_Pool], trace: Trace) -> bool:
        """Whether some candidate fits the budget; if none does, note why (or raise: ``if_nothing_fits="raise"``)."""
        budget = self.config.budget
        if any(p.tokens <= budget for p in pool):
            return True
        smallest = min(p.tokens for p in pool)
        msg = (
            f"budget {budget} tokens is below the smallest candidate ({smallest} tokens); "
            "nothing fits, nothing selected"
        )
        if self.config.if_nothing_fits == "raise":
            raise InvalidInputError(msg)
        trace.note("oneshot.budget", msg, budget=budget, smallest=smallest)
        return False

    def _knapsack(
        self, pool: Sequence[_Pool], budget: int, k_max: int | None, trace: Trace
    ) -> tuple[KnapsackResult, list[_Pool]]:
        """Stage 4: the 0/1 knapsack over ``pool``; returns the solver's result and the chosen entries (its order)."""
        with trace.stage("oneshot.select"):
            res = self._solve(pool, budget, k_max)
        by_id = {p.obj.id: p for p in pool}
        return res, [by_id[i] for i in res.ids]

    def _solve(self, pool: Sequence[_Pool], budget: int, k_max: int | None) -> KnapsackResult:
        cfg = self.config
        items = [KnapsackItem(p.obj.id, p.relevance, p.tokens) for p in pool if p.relevance >= cfg.min_relevance]
        return solve_knapsack(
            items, budget, k_max=k_max, method=cfg.solver, bucket=cfg.bucket, max_cells=cfg.max_dp_cells
        )

    def _add(
        self,
        pool: Sequence[_Pool],
        chosen: list[_Pool],
        res: KnapsackResult,
        dropped: Sequence[tuple[str, str]],
        next_rank: int,
        fctx: FilterContext,
        trace: Trace,
    ) -> tuple[KnapsackResult, list[_Pool]]:
        """Stage 5: add rules propose chunks; a second knapsack over pool + proposals decides which land.

        Returns the (possibly unchanged) knapsack result and selection. Adds never resurrect dropped chunks.
        """
        rules = [r for r in self.rules if isinstance(r, AddRule)]
        if not rules:
            return res, chosen
        with trace.stage("oneshot.filter"):
            proposals = _collect_proposals(rules, pool, chosen, fctx)
            if not proposals:
                return res, chosen
            extended = self._extend_pool(pool, proposals, dropped, next_rank)
            res, chosen2 = self._knapsack(extended, self.config.budget, self.config.k_max, trace)
            by_id = {p.obj.id: p for p in extended}
            _note_admitted(proposals, by_id, {p.obj.id for p in chosen}, {p.obj.id for p in chosen2}, trace)
        return res, chosen2

    def _extend_pool(
        self, pool: Sequence[_Pool], proposals: _Proposals, dropped: Sequence[tuple[str, str]], next_rank: int
    ) -> list[_Pool]:
        """Stage 5b: the pool plus the proposals (new chunks ranked after the input; known ones raised in relevance)."""
        extended = {p.obj.id: p for p in pool}
        for pid, (prop, rname) in sorted(proposals.items()):
            cur = extended.get(pid)
            if cur is None:
                if any(d[0] == pid for d in dropped):
                    continue  # a drop rule removed it; adds never resurrect drops
                extended[pid] = _Pool(
                    prop.obj, None, prop.relevance, self.tokens_of(prop.obj), next_rank, f"add:{rname}"
                )
                next_rank += 1
            elif prop.relevance > cur.relevance:
                extended[pid] = replace(cur, relevance=prop.relevance, origin=f"add:{rname}")
        return list(extended.values())

    def _crop(self, query: str, chosen: Sequence[_Pool], trace: Trace) -> Step[set[str]]:
        """Stage 6: let the LLM crop the most relevant chosen chunks (in place); returns the ids it cropped. Their
        calls go out as one batch (side by side); the replies are read, and noted, in relevance order."""
        cfg = self.config
        cropped_ids: set[str] = set()
        if not cfg.crop or self.llm is None:
            return cropped_ids
        if not query.strip():
            trace.note("fallback", "cropping needs a question and none was given; chunks left uncropped")
            return cropped_ids
        with trace.stage("oneshot.crop"):
            cropper = SentenceCropper(
                self.llm,
                max_tokens=cfg.crop_max_tokens,
                judge_threshold=cfg.crop_judge_threshold,
                shuffle_ids=cfg.crop_shuffle_ids,
            )
            todo = [
                p
                for p in _by_relevance(chosen)
                if isinstance(p.obj, Passage) and len(sentence_spans(p.obj.text)) >= cfg.crop_min_sentences
            ][: max(0, cfg.crop_max_chunks)]
            asks = [cropper.ask(query, p.obj.text, chunk_id=p.obj.id) for p in todo]
            calls = [a.call for a in asks if isinstance(a, CropAsk)]
            replies = iter((yield calls) if calls else [])
            for p, ask in zip(todo, asks, strict=True):
                out = cropper.read(ask, next(replies), trace) if isinstance(ask, CropAsk) else ask
                if self._crop_one(p, out, trace):
                    cropped_ids.add(p.obj.id)
        return cropped_ids

    def _crop_one(self, p: _Pool, out: CropResult, trace: Trace) -> bool:
        """Apply one chosen passage's crop in place (text, metadata, tokens); whether the LLM removed sentences."""
        passage = p.obj
        if not out.cropped or not isinstance(passage, Passage):  # tables and rows are never cropped
            return False
        meta = dict(passage.metadata)
        meta["oneshot_original_tokens"] = p.tokens
        meta["oneshot_kept_sentences"] = list(out.kept)
        p.obj = replace(passage, text=out.text, metadata=meta)
        new_tokens = self.tokens_of(p.obj)
        trace.note(
            "oneshot.crop",
            f"cropped {p.obj.id}: kept {len(out.kept)}/{out.n_sentences} sentences, {p.tokens} -> {new_tokens} tokens",
            id=p.obj.id,
        )
        p.tokens = new_tokens
        return True

    def _refill(self, pool: Sequence[_Pool], chosen: list[_Pool], trace: Trace) -> list[_Pool]:
        """Stage 7: fill the budget cropping freed with the best unchosen chunks (one knapsack round)."""
        cfg = self.config
        left = cfg.budget - sum(p.tokens for p in chosen)
        chosen_ids = {p.obj.id for p in chosen}
        rest = [p for p in pool if p.obj.id not in chosen_ids and p.tokens <= left]
        k_left = None if cfg.k_max is None else cfg.k_max - len(chosen)
        if not rest or left <= 0 or (k_left is not None and k_left <= 0):
            return chosen
        extra = self._solve(rest, left, k_left)
        by_rest = {p.obj.id: p for p in rest}
        for i in extra.ids:
            by_rest[i].origin = "refill"
        if extra.ids:
            trace.note("oneshot.refill", f"cropping freed {left} tokens; refilled with {len(extra.ids)} chunk(s)")
        return [*chosen, *(by_rest[i] for i in extra.ids)]

    def _result(
        self,
        chosen: Sequence[_Pool],
        cropped_ids: set[str],
        res: KnapsackResult,
        dropped: list[tuple[str, str]],
        n_candidates: int,
        trace: Trace,
    ) -> OneShotResult:
        """The final selection in relevance order, its token use and the summary note."""
        budget = self.config.budget
        final = [
            SelectedChunk(p.obj, p.score, p.relevance, p.tokens, p.origin, p.obj.id in cropped_ids)
            for p in _by_relevance(chosen)
        ]
        used = sum(c.tokens for c in final)
        if used > budget:
            raise RetrieveKitError(f"internal error: selection uses {used} tokens, over the budget of {budget}")
        algo = f"{res.algorithm} ({res.guarantee})"
        trace.note(
            "oneshot.select",
            f"selected {len(final)} of {n_candidates} candidates, {used}/{budget} tokens, {algo}",
            selected=len(final),
            tokens=used,
            budget=budget,
            algorithm=res.algorithm,
        )
        return OneShotResult(final, budget, used, algo, dropped, trace)


# The public home of these names stays this module (docs, the demo corpus's ids, pickles), as before the split.
for _public in (Candidate, OneShotResult, SelectedChunk, as_candidates):
    _public.__module__ = __name__
del _public
