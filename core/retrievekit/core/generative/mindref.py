"""MindRef: generative retrieval that recalls a title, then a passage, with no pre-chunking.

Two constrained decoding stages on a local causal LM (a :class:`~retrievekit.core.llm.protocol.ScoringLM`), then a
string-location step (paper: arXiv 2402.17010; behaviour and defaults from the reference code ``www-Ye/MindRef``,
``src/llm2gr.py`` and ``run.sh``):

1. **Titles.** Beam search (15 beams) under a :class:`~retrievekit.core.index.token_trie.TokenTrie` of every
   document title, so each generated title is a real one; the 2 best distinct titles are kept, scored by the
   length-normalised log-probability (HF ``sequences_scores``). Titles that tokenize to the same ids map one trie
   path to all their documents.
2. **Passage prefix.** A per-query :class:`~retrievekit.core.index.suffix_array.TokenSuffixArray` over the recalled
   documents constrains a 16-token prefix (10 beams) to text that occurs in them (the FM-index role).
3. **SPRL.** Each prefix is located in the documents (its first occurrence in each document that contains it) and
   the passage is the 150 tokens starting there. ``score = 0.9 * title_score + 0.1 * passage_score``.

Every hit's passage is a contiguous token span of its document (checked, with the title, on every query; a
violation is recorded as a ``constraint_violation`` trace event and counted in :attr:`MindRef.checks`). Hits carry
the document id, so document-level qrels apply; ``metadata`` holds the token/character span, both scores and the
prefix.

**k.** The paper's pipeline yields at most ``title_return * passages_per_document`` hits (2 by default). When
``search(query, k)`` asks for more, ``MindRefConfig.widen_to_k`` (on by default) widens it in two steps, each
recorded as a ``widen_to_k`` trace event: (1) the next-best distinct titles of the *same* title beam search (up to
``title_beams`` of them; no new title search) get their passages from one more prefix search over just their
documents, scored the same way; (2) if that is still short, further located passages of the recalled documents
(ids ``"{id}#tok{start}"``) fill in. The first ``title_return`` titles' passages are computed exactly as without
widening; all hits are then ranked by score. Fewer than ``k`` hits come back only when the title search found no
more titles and the recalled documents no more passages, and then a ``short_of_k`` trace event says so.
See :class:`MindRef` for an example.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from retrievekit.core.checks import check_corpus, check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.suffix_array import DEFAULT_MAX_TOKENS, TokenSuffixArray
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm.models import DEFAULT_MODEL  # noqa: F401  (the examples use it)
from retrievekit.core.llm.protocol import Beam, ScoringLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.options import config_from_options
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit

__all__ = ["MindRef", "MindRefConfig", "TitleHit", "build_mindref", "create_mindref", "first_sentence_title"]

TITLE_PROMPT = "Question: {query}\n\nThe Wikipedia article corresponding to the above question is:\n\nTitle:"
PASSAGE_PROMPT = "Question: {query}\n\nThe Wikipedia paragraph to answer the above question is:\n\nAnswer:"


@dataclass(frozen=True)
class MindRefConfig:
    """MindRef settings; defaults are the reference code's (``www-Ye/MindRef``, ``src/llm2gr.py`` run by ``run.sh``).

    Attributes:
        title_beams: beams of the title search (``run.sh``: ``--title_gen_beams 15``).
        title_return: distinct titles kept (``run.sh``: ``--title_return_nums 2``).
        title_max_new_tokens: token cap of a title (reference code: max 64 new tokens). A beam cut off by the
            cap still counts when its prefix leads to exactly one title (it is resolved to that title).
        passage_beams: beams of the prefix search (``run.sh``: ``--re_beams 10``).
        prefix_tokens: length of the generated passage prefix (``run.sh``: ``--gen_len 16``).
        passage_tokens: passage length from the located prefix, forward (reference code: 150 tokens).
        lam: weight of the title score, ``score = lam * title + (1 - lam) * passage`` (``run.sh``:
            ``--lam 0.9``).
        length_penalty: exponent of the length normalisation of both scores (HF ``sequences_scores``: 1.0).
        title_prompt: stage-1 prompt, ``{query}`` is replaced (reference code, the NQ/HotpotQA wording).
        passage_prompt: stage-2 prompt (reference code).
        title_prefix: text put before a title when it is tokenized (the model continues ``"Title:"``, so titles
            are encoded as ``" " + title``).
        passage_prefix: text put before a document when it is tokenized for the suffix array.
        untitled: title of a document without one: ``"first_sentence"`` (its first sentence, cut to
            ``title_max_chars``), ``"llm"`` (the LM writes one; needs a ``complete`` method) or ``"id"``.
        title_max_chars: cap on derived titles.
        passages_per_document: passages kept per document; the best keeps the document id, others get
            ``"{id}#tok{start}"``.
        max_sa_tokens: cap on the per-query suffix array (:class:`SuffixArrayTooLargeError` above it).
        widen_to_k: when ``k`` exceeds the hits of the best ``title_return`` titles, recall passages in the next
            titles of the same title search (then more passages per document) until there are ``k`` (ours; the
            paper returns ``title_return`` documents; see the module docstring). False: the paper's output only.

    Examples:
        >>> MindRefConfig().title_beams, MindRefConfig(lam=0.5).lam
        (15, 0.5)
        >>> MindRefConfig.from_options({"title_beams": 4, "nope": 1})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown MindRef option(s): nope; known: ...
    """

    title_beams: int = 15
    title_return: int = 2
    title_max_new_tokens: int = 64
    passage_beams: int = 10
    prefix_tokens: int = 16
    passage_tokens: int = 150
    lam: float = 0.9
    length_penalty: float = 1.0
    title_prompt: str = TITLE_PROMPT
    passage_prompt: str = PASSAGE_PROMPT
    title_prefix: str = " "
    passage_prefix: str = " "
    untitled: Literal["first_sentence", "llm", "id"] = "first_sentence"
    title_max_chars: int = 100
    passages_per_document: int = 1
    max_sa_tokens: int = DEFAULT_MAX_TOKENS
    widen_to_k: bool = True

    def __post_init__(self) -> None:
        for name in ("title_beams", "title_return", "title_max_new_tokens", "passage_beams", "prefix_tokens"):
            if int(getattr(self, name)) < 1:
                raise InvalidInputError(f"MindRefConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("passage_tokens", "title_max_chars", "passages_per_document", "max_sa_tokens"):
            if int(getattr(self, name)) < 1:
                raise InvalidInputError(f"MindRefConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.title_return > self.title_beams:
            raise InvalidInputError(f"title_return ({self.title_return}) must be <= title_beams ({self.title_beams})")
        if not 0.0 <= self.lam <= 1.0:
            raise InvalidInputError(f"lam must be in [0, 1], got {self.lam}")
        if self.untitled not in ("first_sentence", "llm", "id"):
            raise InvalidInputError(f"untitled must be 'first_sentence', 'llm' or 'id', got {self.untitled!r}")
        for name in ("title_prompt", "passage_prompt"):
            if "{query}" not in getattr(self, name):
                raise InvalidInputError(f"{name} must contain '{{query}}'")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> MindRefConfig:
        """Build from ``--option key=value`` pairs (:func:`~retrievekit.core.options.config_from_options`).

        Examples:
            >>> MindRefConfig.from_options({"title_beams": "4", "lam": 1}).title_beams
            4
            >>> MindRefConfig.from_options({"widen_to_k": "false"}).widen_to_k
            False
        """
        return config_from_options(cls, options, label="MindRef")


@dataclass(frozen=True)
class TitleHit:
    """A stage-1 result: a generated title (a real one), its score and the documents that carry it.

    Examples:
        >>> TitleHit(title="Aspirin", token_ids=(5,), score=-0.5, documents=(0,)).documents
        (0,)
    """

    title: str
    token_ids: tuple[int, ...]
    score: float
    documents: tuple[int, ...]
    truncated: bool = False


@dataclass
class _Candidate:
    doc: int
    start: int
    passage_score: float | None
    prefix: str = ""
    token_ids: tuple[int, ...] = field(default=())


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def first_sentence_title(text: str, max_chars: int = 100) -> str:
    """A title for an untitled document: its first sentence, cut at a word boundary to ``max_chars``.

    Examples:
        >>> first_sentence_title("Aspirin thins the blood. It also relieves pain.")
        'Aspirin thins the blood.'
        >>> first_sentence_title("a b c d e f", max_chars=5)
        'a b c'
    """
    first = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0].strip()
    if len(first) <= max_chars:
        return first
    cut = first[: max_chars + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut[:max_chars]).strip()


class MindRef:
    """MindRef retriever over a corpus of titled (or title-derived) documents.

    Args:
        corpus: documents (``Passage``, ``Table`` or ``TableRow``); whole documents, no chunking needed.
        lm: a scoring LM (``LocalLM.load(DEFAULT_MODEL)``, or ``LocalLM(model, tokenizer)`` for any HF causal LM).
        config: :class:`MindRefConfig` (the reference defaults when omitted).
        title_fn: custom title for untitled documents (overrides ``config.untitled``).

    Attributes:
        titles: the title of each document (given or derived), in corpus order.
        checks: running counts ``titles``, ``title_violations``, ``passages``, ``passage_violations`` (a passage
            that is not a token span of its document) and ``text_not_substring`` (its decoded text is not found
            verbatim in the document text, e.g. a tokenizer that normalises text, or a chat control string in the
            document, broken when the model encodes it: :meth:`~retrievekit.core.llm.protocol.ScoringLM.encode`).

    Raises:
        EmptyCorpusError: no documents.

    Examples:
        >>> from retrievekit.core.llm import LocalLM
        >>> docs = [Passage(id="a", title="Aspirin", text="Aspirin thins the blood."), Passage(id="b", text="Wind farms.")]
        >>> mr = MindRef(docs, LocalLM.load(DEFAULT_MODEL))  # doctest: +SKIP
        >>> [(h.id, h.obj.text in docs[0].text) for h in mr.search("What thins the blood?", k=1)]  # doctest: +SKIP
        [('a', True)]
    """

    def __init__(
        self,
        corpus: Sequence[DataObject],
        lm: ScoringLM,
        config: MindRefConfig | None = None,
        *,
        title_fn: Callable[[DataObject], str] | None = None,
    ) -> None:
        self.corpus = check_corpus(corpus)
        self.lm = lm
        self.config = config or MindRefConfig()
        self.titles: list[str] = [self._title_of(o, title_fn) for o in self.corpus]
        eos = lm.eos_token_id
        by_ids: dict[tuple[int, ...], list[int]] = {}
        for i, title in enumerate(self.titles):
            ids = tuple(t for t in lm.encode(self.config.title_prefix + title) if t != eos)
            if not ids:
                ids = tuple(t for t in lm.encode(self.config.title_prefix + self.corpus[i].id) if t != eos)
            by_ids.setdefault(ids, []).append(i)
        self._docs_by_title_ids: dict[tuple[int, ...], tuple[int, ...]] = {k: tuple(v) for k, v in by_ids.items()}
        self.trie = TokenTrie(self._docs_by_title_ids, eos_token_id=eos)
        self._doc_tokens: dict[int, np.ndarray] = {}
        self.checks: dict[str, int] = {"titles": 0, "title_violations": 0, "passages": 0, "passage_violations": 0}
        self.checks["text_not_substring"] = 0

    # ------------------------------------------------------------------ titles and tokens
    def _title_of(self, obj: DataObject, title_fn: Callable[[DataObject], str] | None) -> str:
        title = obj.title.strip() or str(obj.metadata.get("title") or "").strip()
        if title:
            return title
        if title_fn is not None:
            title = str(title_fn(obj)).strip()
        elif self.config.untitled == "first_sentence":
            title = first_sentence_title(obj.text, self.config.title_max_chars)
        elif self.config.untitled == "llm":
            complete = getattr(self.lm, "complete", None)
            if complete is None:
                raise InvalidInputError("untitled='llm' needs an LM with a complete() method (e.g. LocalLM)")
            reply = complete(f"Write a short title for this text:\n\n{obj.text[:2000]}\n\nTitle:", max_tokens=24)
            title = first_sentence_title(str(getattr(reply, "text", reply)).strip().strip('"'), 200)
        return title[: self.config.title_max_chars].strip() or obj.id

    def doc_tokens(self, index: int) -> np.ndarray:
        """Token ids of document ``index`` as indexed (``passage_prefix + text``), encoded on first use."""
        toks = self._doc_tokens.get(index)
        if toks is None:
            text = self.corpus[index].text
            toks = np.asarray(self.lm.encode(self.config.passage_prefix + text) if text else [], dtype=np.int64)
            self._doc_tokens[index] = toks
        return toks

    # ------------------------------------------------------------------ stage 1
    def recall_titles(self, query: str, *, trace: Trace | None = None) -> list[TitleHit]:
        """Stage 1: the best ``title_return`` distinct real titles for ``query``, best first."""
        return self._recall_titles(check_query(query), self.config.title_return, trace)

    def _recall_titles(self, query: str, limit: int, trace: Trace | None) -> list[TitleHit]:
        """The best ``limit`` distinct real titles of one title beam search (at most ``title_beams``)."""
        cfg = self.config
        beams = self.lm.constrained_beam_search(
            cfg.title_prompt.format(query=query),
            self.trie.allowed,
            num_beams=cfg.title_beams,
            num_return_sequences=cfg.title_beams,
            max_new_tokens=cfg.title_max_new_tokens,
            length_penalty=cfg.length_penalty,
            trace=trace,
        )
        out: list[TitleHit] = []
        seen: set[tuple[int, ...]] = set()
        for beam in beams:
            ids, truncated = self._resolve_title(beam, trace)
            if ids is None or ids in seen:
                continue
            seen.add(ids)
            docs = self._docs_by_title_ids.get(ids)
            self.checks["titles"] += 1
            if docs is None:  # cannot happen under the trie; counted, never returned
                self.checks["title_violations"] += 1
                if trace is not None:
                    trace.note("constraint_violation", f"generated title {beam.text!r} is not a corpus title")
                continue
            title = self.titles[docs[0]]
            out.append(TitleHit(title=title, token_ids=ids, score=beam.score, documents=docs, truncated=truncated))
            if len(out) >= limit:
                break
        return out

    def _resolve_title(self, beam: Beam, trace: Trace | None) -> tuple[tuple[int, ...] | None, bool]:
        ids = tuple(int(t) for t in beam.token_ids)
        if beam.finished:
            return ids, False
        done = self.trie.completions(ids, limit=2)
        if len(done) == 1:
            if trace is not None:
                trace.note("title_truncated", "a title beam hit title_max_new_tokens; resolved to its only title")
            return done[0], True
        return None, False

    # ------------------------------------------------------------------ stage 2 + SPRL
    def recall_passages(
        self, query: str, titles: Sequence[TitleHit], *, trace: Trace | None = None
    ) -> list[tuple[_Candidate, float]]:
        """Stages 2 and SPRL: constrained prefixes over the recalled documents, located, scored; best first.

        Returns ``(candidate, final score)`` pairs (internal candidates; :meth:`search` turns them into hits).
        """
        cfg = self.config
        title_score: dict[int, float] = {}
        for t in titles:
            for d in t.documents:
                title_score.setdefault(d, t.score)
        docs = list(title_score)
        if not docs:
            return []
        sa = TokenSuffixArray([self.doc_tokens(d) for d in docs], max_tokens=cfg.max_sa_tokens)
        found: list[_Candidate] = []
        if sa.num_tokens:
            beams = self.lm.constrained_beam_search(
                cfg.passage_prompt.format(query=query),
                sa.allowed,
                num_beams=cfg.passage_beams,
                num_return_sequences=cfg.passage_beams,
                max_new_tokens=cfg.prefix_tokens,
                length_penalty=cfg.length_penalty,
                trace=trace,
            )
            missed = 0
            for beam in beams:
                if not beam.token_ids:
                    continue
                firsts: dict[int, int] = {}
                for local, off in sa.locate(beam.token_ids):
                    firsts.setdefault(local, off)
                if not firsts:
                    missed += 1
                    continue
                for local, off in firsts.items():
                    found.append(_Candidate(docs[local], off, beam.score, beam.text, tuple(beam.token_ids)))
            if missed and trace is not None:
                trace.note("prefix_not_found", f"{missed} generated prefix(es) occur in no recalled document")
        with_passage = {c.doc for c in found}
        floor = min((c.passage_score for c in found if c.passage_score is not None), default=0.0)
        for d in docs:
            if d not in with_passage:
                found.append(_Candidate(d, 0, None))
                if trace is not None:
                    trace.note(
                        "fallback",
                        f"no generated prefix located in document {self.corpus[d].id!r}; using its first "
                        f"{cfg.passage_tokens} tokens",
                    )
        scored = []
        for c in found:
            p = c.passage_score if c.passage_score is not None else floor
            scored.append((c, cfg.lam * title_score[c.doc] + (1.0 - cfg.lam) * p))
        scored.sort(key=lambda x: x[1], reverse=True)
        return scored

    def _passage_hit(self, cand: _Candidate, score: float, title: TitleHit | None, pid: str) -> tuple[Passage, bool]:
        cfg = self.config
        toks = self.doc_tokens(cand.doc)
        end = min(cand.start + cfg.passage_tokens, int(toks.size))
        span = toks[cand.start : end]
        ok = not cand.token_ids or tuple(int(t) for t in toks[cand.start : cand.start + len(cand.token_ids)]) == (
            cand.token_ids
        )
        doc = self.corpus[cand.doc]
        text = self.lm.decode([int(t) for t in span]).strip()
        char_start = doc.text.find(text) if text else 0
        meta: dict[str, Any] = {
            "document_id": doc.id,
            "title": self.titles[cand.doc],
            "token_start": cand.start,
            "token_end": end,
            "char_start": char_start if char_start >= 0 else None,
            "exact_substring": char_start >= 0,
            "title_score": title.score if title else None,
            "passage_score": cand.passage_score,
            "score": score,
            "prefix": cand.prefix,
            "method": "mindref",
        }
        self.checks["passages"] += 1
        if not ok:
            self.checks["passage_violations"] += 1
        if char_start < 0:
            self.checks["text_not_substring"] += 1
        return Passage(id=pid, text=text, title=self.titles[cand.doc], metadata=meta), ok

    def _pick(
        self,
        scored: Sequence[tuple[_Candidate, float]],
        need: int,
        per_doc: dict[int, int],
        seen: set[tuple[int, int]],
        *,
        cap_per_doc: bool,
    ) -> tuple[list[tuple[_Candidate, float, int]], list[tuple[_Candidate, float]]]:
        """Take up to ``need`` new passages, best first: ``(candidate, score, index within its document)``; the
        candidates not taken are returned too (for widening)."""
        picked: list[tuple[_Candidate, float, int]] = []
        left: list[tuple[_Candidate, float]] = []
        for cand, score in scored:
            key = (cand.doc, cand.start)
            if key in seen:
                continue
            full = cap_per_doc and per_doc.get(cand.doc, 0) >= self.config.passages_per_document
            if full or len(picked) >= need:
                left.append((cand, score))
                continue
            seen.add(key)
            n = per_doc.get(cand.doc, 0)
            per_doc[cand.doc] = n + 1
            picked.append((cand, score, n))
        return picked, left

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Titles, then passages; ``k`` hits when the corpus allows, best first (ids are document ids).

        The best ``title_return`` titles give the paper's hits; when ``k`` asks for more and
        ``config.widen_to_k`` is on, the next titles of the same title search and then more passages per document
        fill in (``widen_to_k`` trace events; see the module docstring). Fewer than ``k`` hits are recorded as a
        ``short_of_k`` trace event.
        """
        query = check_query(query)
        k = check_k(k)
        trace = trace if trace is not None else Trace()
        cfg = self.config
        with trace.stage("mindref.titles"):
            titles = self._recall_titles(query, max(cfg.title_return, k) if cfg.widen_to_k else cfg.title_return, trace)
        if not titles:
            trace.note("no_title", "the title search returned no complete title")
            return []
        by_doc = {d: t for t in titles for d in t.documents}
        first, rest = titles[: cfg.title_return], titles[cfg.title_return :]
        with trace.stage("mindref.passages"):
            scored = self.recall_passages(query, first, trace=trace)
        per_doc: dict[int, int] = {}
        seen: set[tuple[int, int]] = set()
        picked, left = self._pick(scored, k, per_doc, seen, cap_per_doc=True)
        if cfg.widen_to_k and len(picked) < k and rest:
            need, extra, n_docs = k - len(picked), [], 0
            for t in rest:  # just enough further titles: every recalled document yields at least one passage
                if n_docs >= need:
                    break
                extra.append(t)
                n_docs += len(t.documents)
            trace.note(
                "widen_to_k",
                f"k={k} asks for more than the {len(picked)} hit(s) of the best {cfg.title_return} title(s); "
                f"recalling passages in the next {len(extra)} title(s) of the same title search",
                titles=[t.title for t in extra],
            )
            trace.count("mindref.widened_titles", len(extra))
            with trace.stage("mindref.passages"):
                scored_extra = self.recall_passages(query, extra, trace=trace)
            more, left_extra = self._pick(scored_extra, need, per_doc, seen, cap_per_doc=True)
            picked += more
            left += left_extra
        if cfg.widen_to_k and len(picked) < k and left:
            more, _ = self._pick(
                sorted(left, key=lambda x: x[1], reverse=True), k - len(picked), per_doc, seen, cap_per_doc=False
            )
            if more:
                trace.note("widen_to_k", f"added {len(more)} more located passage(s) of the recalled documents")
                trace.count("mindref.widened_passages", len(more))
                picked += more
        if len(picked) < k:
            why = (
                "widen_to_k is off (the paper's output: at most title_return x passages_per_document hits)"
                if not cfg.widen_to_k
                else f"the title search (title_beams={cfg.title_beams}) recalled {len(titles)} of the corpus's "
                f"{len(self.trie)} distinct titles and their documents gave no more passages"
            )
            trace.note("short_of_k", f"returning {len(picked)} hit(s) for k={k}: {why}", hits=len(picked), k=k)
        picked.sort(key=lambda x: x[1], reverse=True)
        hits: list[ScoredHit] = []
        for cand, score, n in picked:
            doc_id = self.corpus[cand.doc].id
            pid = doc_id if n == 0 else f"{doc_id}#tok{cand.start}"
            passage, ok = self._passage_hit(cand, score, by_doc.get(cand.doc), pid)
            if not ok:
                trace.note("constraint_violation", f"passage of {doc_id!r} is not a token span of the document")
            hits.append(ScoredHit(obj=passage, score=score, rank=len(hits)))
        return hits

    def __repr__(self) -> str:
        return f"MindRef(<{len(self.corpus)} documents, {len(self.trie)} distinct titles>, lm={self.lm!r})"


def build_mindref(ctx: MethodContext) -> MindRef:
    """``retrievekit bench --method mindref``: MindRef on the local LM named by ``--llm`` (default
    :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`).

    Options (``--option key=value``) are :class:`MindRefConfig` fields, e.g. ``title_beams=5``. Unlike the
    framework retrievers, the benchmark keeps the paper's output (``widen_to_k=False``: the best ``title_return``
    documents, whatever ``--k`` is) unless ``--option widen_to_k=true`` is given, so its figures stay comparable.

    Examples:
        >>> docs = [Passage(id="a", title="Aspirin", text="Aspirin thins the blood.")]
        >>> build_mindref(MethodContext(corpus=docs, options={"title_beams": "5"})).config  # doctest: +SKIP
        MindRefConfig(title_beams=5, ..., widen_to_k=False)
    """
    options = {"widen_to_k": False, **ctx.options}  # benchmarks measure the paper's output unless asked
    return create_mindref(ctx.corpus, llm=ctx.llm, **options)


def create_mindref(
    corpus: Sequence[DataObject],
    *,
    llm: Any = None,
    config: MindRefConfig | None = None,
    **options: Any,
) -> MindRef:
    """MindRef over ``corpus`` with ``llm``, a scoring LM or a local model's name (default
    :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`; :func:`~retrievekit.core.llm.resolve.resolve_llm`);
    ``options`` are :class:`MindRefConfig` fields, ignored when ``config`` is given. The framework retrievers'
    ``from_documents`` use this. The corpus and the options are checked before the model is loaded.

    Examples:
        >>> docs = [Passage(id="a", title="Aspirin", text="Aspirin thins the blood.")]
        >>> create_mindref(docs, title_beams=5).config.title_beams  # doctest: +SKIP
        5
        >>> create_mindref(docs, title_beams=0)  # options are checked before the model is loaded
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: MindRefConfig.title_beams must be >= 1, got 0
        >>> create_mindref([])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    corpus = check_corpus(corpus)
    config = config or MindRefConfig.from_options(options)
    lm = resolve_llm(llm)
    if not isinstance(lm, ScoringLM):
        raise InvalidInputError(f"MindRef needs a scoring LM (e.g. LocalLM.load(...)), got {type(lm).__name__}")
    return MindRef(corpus, lm, config)
