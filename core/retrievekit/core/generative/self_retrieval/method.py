"""Self-Retrieval retrieval: trie-constrained title -> passage decoding, then self-assessment scoring.

The model was fine-tuned (:func:`~retrievekit.core.generative.self_retrieval.train.train_self_retrieval`) to write
``{title}\\n Related document content: {passage}`` after ``Question: {query}\\n\\n Related document title: ``, and
``" cannot extract answer"`` after ``\\n\\n Final answer:`` when a passage does not fit the query. Per query:

1. **Titles.** Constrained beam search (``title_beams`` = 5) over a :class:`~retrievekit.core.index.token_trie.
   TokenTrie` of the title token sequences; EOS is allowed where a title ends (the reference's "extra EOS" that
   stops decoding after the title), so every beam is a real title. Score: the length-normalised log-probability.
2. **Passages** of each title, under a trie of that title's ``separator + passage`` token sequences (at most
   ``max_passage_tokens`` passage tokens). Tokens forced by the trie cost no model call; at the first branching
   point the ``passage_beams`` (10) best allowed tokens are kept, then each continues greedily (one forward pass
   per branching step) **until its trie prefix is unique**, and is completed from the trie (reference
   ``evaluation/predict.py``: beam-10 one token, then greedy until the leaf resolves the chunk). A title with a
   single passage needs no call. Every candidate is therefore exactly a corpus passage.
3. **Self-assessment.** The mean token cross-entropy ``L`` of the rejection response after
   ``...{passage}\\n\\n Final answer:`` (batched forward passes), ``s = 1 - exp(-L)``, and
   ``S = softmax(exp(title)/tau) * softmax(s/delta)`` (:func:`~retrievekit.core.generative.self_retrieval.scoring.
   combine_scores`). The top ``top_k`` candidates are kept.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import InvalidInputError, ModelMismatchError
from retrievekit.core.generative.self_retrieval.config import MATCH_SETTINGS, SelfRetrievalConfig
from retrievekit.core.generative.self_retrieval.passages import PassageSet, split_passages
from retrievekit.core.generative.self_retrieval.scoring import assessment_score, combine_scores, softmax
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm.protocol import ScoringLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.options import check_option_keys
from retrievekit.core.registry import MethodContext
from retrievekit.core.threads import model_threads
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit

__all__ = ["KIND", "Candidate", "SelfRetrieval", "build_self_retrieval", "create_self_retrieval"]

KIND = "self-retrieval"
"""Manifest ``kind`` of a trained Self-Retrieval model."""


@dataclass(frozen=True)
class Candidate:
    """A decoded passage candidate of one title, with its scores.

    Attributes:
        passages: indices (into :attr:`SelfRetrieval.passage_set`) of the passage(s) this token sequence encodes
            (several only when passages share their first ``max_passage_tokens`` tokens).
        title: index of the title in the query's title list.
        first_token_logprob: log-probability of the first branching token (``None`` when the trie forced it);
            reported, not used for ranking (as in the reference).
        rejection_ce: mean cross-entropy of the rejection response after the passage.
        score: final score ``S^T * S^P``.

    Examples:
        >>> Candidate(passages=(0,), title=0).score
        0.0
    """

    passages: tuple[int, ...]
    title: int
    first_token_logprob: float | None = None
    rejection_ce: float = 0.0
    score: float = 0.0


def _bos_of(lm: ScoringLM) -> int | None:
    bos = getattr(getattr(lm, "tokenizer", None), "bos_token_id", None)
    return int(bos) if bos is not None else None


def batch_continuation_logprobs(
    lm: ScoringLM, rows: Sequence[tuple[Sequence[int], Sequence[int]]], *, batch_size: int, trace: Trace | None = None
) -> list[list[float]]:
    """Per-token log-probs of each ``(prefix_ids, continuation_ids)`` row, in right-padded batches.

    Uses the HF model of a :class:`~retrievekit.core.llm.local.LocalLM` directly (one forward pass per batch);
    any other ``ScoringLM`` gets one ``token_logprobs`` call per row.

    Examples:
        >>> class Flat:  # a ScoringLM without a HF model: one token_logprobs call per row
        ...     def token_logprobs(self, prompt, continuation, *, trace=None):
        ...         return [-1.0] * len(continuation)
        >>> batch_continuation_logprobs(Flat(), [([1, 5], [6, 7]), ([1], [2])], batch_size=4)
        [[-1.0, -1.0], [-1.0]]
    """
    model = getattr(lm, "model", None)
    if model is None:
        return [list(lm.token_logprobs(list(p), list(c), trace=trace)) for p, c in rows]
    import torch

    pad = int(getattr(lm, "_pad", lm.eos_token_id))
    device = next(model.parameters()).device
    out: list[list[float]] = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        seqs = [list(p) + list(c) for p, c in chunk]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[i, : len(s)] = 1
        with torch.no_grad(), model_threads():
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        for i, (p, c) in enumerate(chunk):
            pos = torch.arange(len(p) - 1, len(p) - 1 + len(c), device=logp.device)
            tgt = torch.tensor(list(c), dtype=torch.long, device=logp.device)
            out.append(logp[i, pos, tgt].tolist())
        if trace is not None:
            trace.record_llm_call(prompt_tokens=int(mask.sum()), completion_tokens=0)
    return out


class SelfRetrieval:
    """Self-Retrieval over a corpus the model has internalised.

    Args:
        corpus: the documents the model was trained on (split into passages exactly as in training).
        lm: the fine-tuned scoring LM (use :meth:`from_model_dir` to load one safely).
        config: :class:`SelfRetrievalConfig` (must match the training settings; :meth:`from_model_dir` checks).

    Attributes:
        passage_set: the passages (deduplicated) with their model-facing titles.
        titles: distinct titles, in first-seen order.
        stats: index counts (``titles``, ``passages``, ``duplicates``, ``passages_clipped`` to
            ``max_passage_tokens``, ``titles_clipped``, ``title_boundary_fixes``).
        checks: running counts ``candidates`` and ``not_exact`` (a returned text that is not its document's
            substring: never expected).

    Examples:
        >>> from retrievekit.core.llm import LocalLM
        >>> from retrievekit.core.types import Passage
        >>> corpus = [Passage(id="solar", title="Solar", text="Solar panels turn sunlight into power."),
        ...           Passage(id="wind", title="Wind", text="Wind farms make power from moving air.")]
        >>> sorted(h.id for h in SelfRetrieval(corpus, LocalLM.load(DEFAULT_MODEL)).search("sunlight", k=2))  # doctest: +SKIP
        ['solar', 'wind']

        ``LocalLM.load(DEFAULT_MODEL)`` is untrained here; :meth:`from_model_dir` loads a model trained on ``corpus``.
    """

    def __init__(self, corpus: Sequence[DataObject], lm: ScoringLM, config: SelfRetrievalConfig | None = None) -> None:
        self.corpus = check_corpus(corpus)
        self.lm = lm
        self.config = config or SelfRetrievalConfig()
        self.manifest: Any = None
        cfg = self.config
        self.passage_set: PassageSet = split_passages(self.corpus, cfg)
        self._bos = _bos_of(lm)
        self._doc_text = {o.id: o.text for o in self.corpus}
        eos = lm.eos_token_id
        self.stats: dict[str, int] = dict(self.passage_set.stats)
        for key in ("passages_clipped", "titles_clipped", "title_boundary_fixes"):
            self.stats[key] = 0
        sep_len = len(lm.encode(cfg.content_separator))
        self._title_ids: dict[str, tuple[int, ...]] = {}
        self._rest: list[tuple[int, ...]] = []
        by_title: dict[str, list[int]] = {}
        for i, (title, p) in enumerate(zip(self.passage_set.titles, self.passage_set.passages, strict=True)):
            full = [t for t in lm.encode(f"{title}{cfg.content_separator}{p.text}") if t != eos]
            cut = self._title_boundary(title, full)
            if cut > cfg.max_title_tokens:
                cut = cfg.max_title_tokens
                self.stats["titles_clipped"] += 1
            head, rest = tuple(full[:cut]), tuple(full[cut:])
            if len(rest) > sep_len + cfg.max_passage_tokens:
                rest = rest[: sep_len + cfg.max_passage_tokens]
                self.stats["passages_clipped"] += 1
            known = self._title_ids.setdefault(title, head)
            if known != head:  # a clipped title shared with another passage: keep the first encoding
                rest = tuple(full[len(known) :])[: sep_len + cfg.max_passage_tokens]
            self._rest.append(rest)
            by_title.setdefault(title, []).append(i)
        self.titles: list[str] = list(by_title)
        self._by_title = by_title
        self._titles_by_ids: dict[tuple[int, ...], str] = {}
        for t in self.titles:
            self._titles_by_ids.setdefault(self._title_ids[t], t)
        self.title_trie = TokenTrie(self._titles_by_ids, eos_token_id=eos)
        self._passage_tries: dict[str, tuple[TokenTrie, dict[tuple[int, ...], tuple[int, ...]]]] = {}
        self._answer_ids = lm.encode(cfg.answer_prompt)
        self._reject_ids = lm.encode(cfg.rejection_response)
        if not self._reject_ids:
            raise InvalidInputError("the rejection response encodes to no tokens")
        self.stats["titles"] = len(self.titles)
        self.checks: dict[str, int] = {"candidates": 0, "not_exact": 0}

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_model_dir(
        cls,
        model_dir: str | os.PathLike[str],
        corpus: Sequence[DataObject],
        config: SelfRetrievalConfig | None = None,
        *,
        device: str | None = None,
        **options: Any,
    ) -> SelfRetrieval:
        """Load a model trained by ``train_self_retrieval`` / ``retrievekit train-self-retrieval`` over ``corpus``.

        The manifest must say ``kind="self-retrieval"``, carry the fingerprint of this very corpus and the same
        prompt/title settings as ``config`` (when ``config`` is omitted they are taken from the manifest and
        ``options`` override the decoding fields).

        Raises:
            ModelMismatchError: another kind of model, another corpus, or different prompt/title settings.
            IndexFormatError: not a trained-model folder.

        Examples:
            >>> import tempfile
            >>> from retrievekit.core.types import Passage
            >>> SelfRetrieval.from_model_dir(tempfile.mkdtemp(), [Passage(id="a", text="x")])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... holds no trained retrievekit model (...)
        """
        from retrievekit.core.index.baselines import corpus_fingerprint
        from retrievekit.core.llm.local import LocalLM
        from retrievekit.core.training.manifest import load_trained_model, read_model_manifest, resolve_model_dir

        corpus = check_corpus(corpus)
        folder = resolve_model_dir(model_dir)
        manifest = read_model_manifest(folder)
        trained = {k: v for k, v in dict(manifest.settings).items() if k in MATCH_SETTINGS}
        if config is None:
            config = SelfRetrievalConfig.from_options({**trained, **options})
        wanted = config.match_settings()
        diff = sorted(k for k in trained if trained[k] != wanted.get(k))
        if manifest.kind == KIND and diff:
            detail = "; ".join(f"{k}: trained {trained[k]!r}, requested {wanted.get(k)!r}" for k in diff)
            raise ModelMismatchError(f"model in {folder} was trained with other Self-Retrieval settings: {detail}")
        model, tokenizer, manifest = load_trained_model(
            folder, kind=KIND, corpus_hash=corpus_fingerprint(corpus), device=device
        )
        lm = LocalLM(model, tokenizer, name=f"self-retrieval:{manifest.base_model}", use_outlines=False)
        sr = cls(corpus, lm, config)
        sr.manifest = manifest
        return sr

    # ------------------------------------------------------------------ tokens
    def _title_boundary(self, title: str, full: list[int]) -> int:
        ids = self.lm.encode(title)
        if full[: len(ids)] == ids:
            return len(ids)
        self.stats["title_boundary_fixes"] += 1  # the title's last token merged with the separator
        for cut in range(1, len(full) + 1):
            if self.lm.decode(full[:cut]).startswith(title):
                return cut
        return max(1, len(ids))

    def _passage_trie(self, title: str) -> tuple[TokenTrie, dict[tuple[int, ...], tuple[int, ...]]]:
        got = self._passage_tries.get(title)
        if got is None:
            leaves: dict[tuple[int, ...], list[int]] = {}
            for i in self._by_title[title]:
                leaves.setdefault(self._rest[i], []).append(i)
            got = (TokenTrie(leaves, eos_token_id=self.lm.eos_token_id), {k: tuple(v) for k, v in leaves.items()})
            self._passage_tries[title] = got
        return got

    def prompt_ids(self, query: str) -> list[int]:
        """Token ids of the query prompt, with the BOS token the trainer prepends (when the tokenizer has one)."""
        ids = self.lm.encode(self.config.query_prompt.format(query=query))
        return ([self._bos] if self._bos is not None else []) + ids

    # ------------------------------------------------------------------ stage 1
    def recall_titles(self, query: str, *, trace: Trace | None = None) -> list[tuple[str, float]]:
        """Stage 1: up to ``title_beams`` distinct corpus titles with their length-normalised log-probabilities."""
        cfg = self.config
        n = min(cfg.title_beams, max(1, len(self.titles)))
        max_len = max(len(k) for k in self._titles_by_ids)
        beams = self.lm.constrained_beam_search(
            self.prompt_ids(check_query(query)),
            self.title_trie.allowed,
            num_beams=n,
            num_return_sequences=n,
            max_new_tokens=max_len + 1,
            trace=trace,
        )
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for beam in beams:
            ids = tuple(int(t) for t in beam.token_ids)
            if not beam.finished:
                done = self.title_trie.completions(ids, limit=2)
                if len(done) != 1:
                    continue
                ids = done[0]
            title = self._titles_by_ids.get(ids)
            if title is None or title in seen:
                continue
            seen.add(title)
            out.append((title, float(beam.score)))
        return out

    # ------------------------------------------------------------------ stage 2
    def _greedy(self, ctx: list[int], trie: TokenTrie, prefix: list[int], trace: Trace | None) -> tuple[int, ...]:
        eos = self.lm.eos_token_id
        limit = self.config.max_passage_tokens + 64
        while len(prefix) <= limit:
            done = trie.completions(prefix, limit=2)
            if len(done) == 1:
                return done[0]
            allowed = trie.allowed(prefix)
            if not allowed:
                break
            if len(allowed) == 1 and allowed[0] != eos:
                prefix.append(allowed[0])
                continue
            logp = self.lm.next_token_logprobs(ctx + prefix, trace=trace)
            if trace is not None:
                trace.count("self_retrieval.greedy_steps")
            best = max(allowed, key=lambda t: (float(logp[t]), -t))
            if best == eos:
                return tuple(prefix)
            prefix.append(best)
        return tuple(prefix) if tuple(prefix) in trie else trie.completions(prefix, limit=1)[0]

    def recall_passages(
        self, query: str, title: str, *, trace: Trace | None = None
    ) -> list[tuple[tuple[int, ...], float | None]]:
        """Stage 2 for one title: ``(passage indices, first-token log-prob)`` per decoded passage."""
        trie, leaves = self._passage_trie(title)
        if len(leaves) == 1:
            return [(next(iter(leaves.values())), None)]
        eos = self.lm.eos_token_id
        ctx = self.prompt_ids(query) + list(self._title_ids[title])
        prefix: list[int] = []
        while True:
            allowed = trie.allowed(prefix)
            if len(allowed) == 1 and allowed[0] != eos:
                prefix.append(allowed[0])
            else:
                break
        logp = self.lm.next_token_logprobs(ctx + prefix, trace=trace)
        allowed = trie.allowed(prefix)
        firsts = sorted(allowed, key=lambda t: (-float(logp[t]), t))[: self.config.passage_beams]
        out: list[tuple[tuple[int, ...], float | None]] = []
        seen: set[tuple[int, ...]] = set()
        for tok in firsts:
            seq = tuple(prefix) if tok == eos else self._greedy(ctx, trie, [*prefix, tok], trace)
            if seq in seen or seq not in leaves:
                continue
            seen.add(seq)
            out.append((leaves[seq], float(logp[tok])))
        return out

    # ------------------------------------------------------------------ stage 3
    def assess(self, query: str, passages: Sequence[int], *, trace: Trace | None = None) -> list[float]:
        """Mean token cross-entropy of the rejection response after each passage (batched forward passes)."""
        base = self.prompt_ids(query)
        rows = []
        for i in passages:
            title = self.passage_set.titles[i]
            rows.append(
                (base + list(self._title_ids[title]) + list(self._rest[i]) + self._answer_ids, self._reject_ids)
            )
        lps = batch_continuation_logprobs(self.lm, rows, batch_size=self.config.assess_batch_size, trace=trace)
        return [float(-np.mean(lp)) for lp in lps]

    # ------------------------------------------------------------------ search
    def candidates(self, query: str, *, trace: Trace | None = None) -> list[Candidate]:
        """All scored candidates of ``query`` (titles -> passages -> assessment), best first, at most ``top_k``."""
        query = check_query(query)
        trace = trace if trace is not None else Trace()
        with trace.stage("self_retrieval.titles"):
            titles = self.recall_titles(query, trace=trace)
        if not titles:
            trace.note("no_title", "the title search returned no complete title")
            return []
        groups: list[list[tuple[tuple[int, ...], float | None]]] = []
        with trace.stage("self_retrieval.passages"):
            for title, _ in titles:
                groups.append(self.recall_passages(query, title, trace=trace))
        with trace.stage("self_retrieval.assess"):
            flat = [c[0][0] for g in groups for c in g]
            ces = iter(self.assess(query, flat, trace=trace))
            ce_groups = [[next(ces) for _ in g] for g in groups]
        finals = combine_scores([s for _, s in titles], ce_groups, tau=self.config.tau, delta=self.config.delta)
        out = []
        for ti, (g, ce, sc) in enumerate(zip(groups, ce_groups, finals, strict=True)):
            for (pids, first), c, s in zip(g, ce, sc, strict=True):
                out.append(
                    Candidate(passages=pids, title=ti, first_token_logprob=first, rejection_ce=c, score=float(s))
                )
        out.sort(key=lambda c: (-c.score, c.passages[0]))
        trace.count("self_retrieval.titles", len(titles))
        trace.count("self_retrieval.candidates", len(out))
        self._last_titles = titles
        return out[: self.config.top_k]

    def _hit_object(self, idx: int, cand: Candidate, titles: list[tuple[str, float]], hit_id: str) -> Passage:
        p = self.passage_set.passages[idx]
        doc_id = str(p.metadata["document_id"])
        a, b = int(p.metadata["char_start"]), int(p.metadata["char_end"])
        exact = self._doc_text.get(doc_id, "")[a:b] == p.text
        self.checks["candidates"] += 1
        self.checks["not_exact"] += int(not exact)
        st = softmax(np.exp([s for _, s in titles]) / self.config.tau)
        meta: dict[str, Any] = {
            **dict(p.metadata),
            "passage_id": p.id,
            "model_title": self.passage_set.titles[idx],
            "title_score": titles[cand.title][1],
            "title_prob": float(st[cand.title]),
            "rejection_ce": cand.rejection_ce,
            "assessment": float(assessment_score([cand.rejection_ce])[0]),
            "first_token_logprob": cand.first_token_logprob,
            "score": cand.score,
            "exact": exact,
            "method": "self-retrieval",
        }
        meta["documents"] = list(meta.get("documents", ()))
        return Passage(id=hit_id, text=p.text, title=p.title, metadata=meta)

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """At most ``k`` hits, best first: passages (``hit_level="passage"``) or documents (``"document"``).

        Every hit's text is exactly a corpus passage (``metadata``: ``document_id``, ``char_start``/``char_end``,
        ``title_score``, ``rejection_ce``, ``score`` ...).
        """
        k = check_k(k)
        trace = trace if trace is not None else Trace()
        cands = self.candidates(query, trace=trace)
        titles = getattr(self, "_last_titles", [])
        hits: list[ScoredHit] = []
        seen: set[str] = set()
        for cand in cands:
            if len(cand.passages) > 1:
                trace.note("ambiguous_passage", f"{len(cand.passages)} passages share the first decoded tokens")
            for idx in cand.passages:
                p = self.passage_set.passages[idx]
                ids = [p.id] if self.config.hit_level == "passage" else [str(d) for d in p.metadata["documents"]]
                for hid in ids:
                    if hid in seen:
                        continue
                    seen.add(hid)
                    obj = self._hit_object(idx, cand, titles, hid)
                    if not obj.metadata["exact"]:
                        trace.note("constraint_violation", f"passage {p.id!r} is not a substring of its document")
                    hits.append(ScoredHit(obj=obj, score=cand.score, rank=len(hits)))
                    if len(hits) >= k:
                        return hits
        return hits

    def __repr__(self) -> str:
        return (
            f"SelfRetrieval(<{len(self.corpus)} documents, {len(self.passage_set)} passages, "
            f"{len(self.titles)} titles>, lm={self.lm!r})"
        )


def create_self_retrieval(
    corpus: Sequence[DataObject],
    *,
    model_dir: str | os.PathLike[str] | None = None,
    llm: Any = None,
    config: SelfRetrievalConfig | None = None,
    **options: Any,
) -> SelfRetrieval:
    """Self-Retrieval over ``corpus`` from a trained ``model_dir`` (checked) or ``llm``, a scoring LM fine-tuned on
    ``corpus`` (already loaded, or named: :func:`~retrievekit.core.llm.resolve.resolve_llm`).

    ``options`` are :class:`SelfRetrievalConfig` fields (ignored when ``config`` is given). The framework
    retrievers' ``from_documents`` use this.

    The corpus is checked before the model is read or loaded.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> create_self_retrieval([Passage(id="a", text="x")], title_beams=3)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: Self-Retrieval needs a trained model: pass model_dir= (...) or llm= (...)
        >>> create_self_retrieval([], model_dir="runs/sr")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    corpus = check_corpus(corpus)
    if model_dir is not None:
        return SelfRetrieval.from_model_dir(Path(model_dir), corpus, config, **options)
    if llm is None:
        raise InvalidInputError(
            "Self-Retrieval needs a trained model: pass model_dir= (train one with `retrievekit train-self-retrieval`)"
            " or llm= (a ScoringLM fine-tuned on this corpus)"
        )
    return SelfRetrieval(corpus, resolve_llm(llm), config or SelfRetrievalConfig.from_options(options))


def build_self_retrieval(ctx: MethodContext) -> SelfRetrieval:
    """``retrievekit bench --method self-retrieval --model-dir DIR``: document-level hits by default.

    Options (``--option key=value``) are :class:`SelfRetrievalConfig` fields; ``model_dir`` comes from
    ``--model-dir``.

    Raises:
        InvalidInputError: no ``model_dir`` (train one first with ``retrievekit train-self-retrieval``).

    Examples:
        >>> build_self_retrieval(MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: Self-Retrieval needs a trained model: ...
    """
    known = [f.name for f in fields(SelfRetrievalConfig) if f.init]
    check_option_keys(ctx.options, [*known, "model_dir", "progress"], label="Self-Retrieval")
    options = dict(ctx.options)
    options.pop("progress", None)
    model_dir = options.pop("model_dir", None)
    if not model_dir:
        raise InvalidInputError(
            "Self-Retrieval needs a trained model: pass --model-dir DIR (or --option model_dir=DIR); train one with "
            "`retrievekit train-self-retrieval --dataset scifact --output-dir DIR`"
        )
    options.setdefault("hit_level", "document")
    sr = SelfRetrieval.from_model_dir(Path(str(model_dir)), ctx.corpus, None, **options)
    return sr
