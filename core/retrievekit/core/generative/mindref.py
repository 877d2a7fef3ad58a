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

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrievekit.core.checks import check_corpus, check_held, check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative.mindref_config import (
    PASSAGE_PROMPT,
    TITLE_PROMPT,
    MindRefConfig,
    TitleHit,
    document_title,
    first_sentence_title,
    scoring_lm,
)
from retrievekit.core.index.suffix_array import TokenSuffixArray
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.index.updatable import check_batch, check_ids
from retrievekit.core.llm.models import DEFAULT_MODEL  # noqa: F401  (the examples use it)
from retrievekit.core.llm.protocol import Beam, ScoringLM
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit

__all__ = [
    "PASSAGE_PROMPT",
    "TITLE_PROMPT",
    "MindRef",
    "MindRefConfig",
    "TitleHit",
    "build_mindref",
    "create_mindref",
    "document_title",
    "first_sentence_title",
    "scoring_lm",
]


@dataclass
class _Candidate:
    doc: int
    start: int
    passage_score: float | None
    prefix: str = ""
    token_ids: tuple[int, ...] = field(default=())


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
        self._setup(lm, config, title_fn)
        self.add(check_corpus(corpus))

    def _setup(self, lm: ScoringLM, config: MindRefConfig | None, title_fn: Callable[[DataObject], str] | None) -> None:
        self.lm = lm
        self.config = config or MindRefConfig()
        self._title_fn = title_fn
        self._objects: dict[str, DataObject] = {}  # corpus order: the order documents were added
        self._titles: dict[str, str] = {}
        self._title_seq: dict[str, tuple[int, ...]] = {}  # each document's title path in the trie
        self._by_title: dict[tuple[int, ...], tuple[str, ...]] = {}  # title path -> its documents, in corpus order
        self._views: tuple[list[DataObject], list[str], dict[str, int]] | None = None
        self.trie = TokenTrie.keyed({}, eos_token_id=lm.eos_token_id)
        self._doc_tokens: dict[str, np.ndarray] = {}
        self.checks: dict[str, int] = {"titles": 0, "title_violations": 0, "passages": 0, "passage_violations": 0}
        self.checks["text_not_substring"] = 0

    @classmethod
    def empty(
        cls, lm: ScoringLM, config: MindRefConfig | None = None, *, title_fn: Callable[[DataObject], str] | None = None
    ) -> MindRef:
        """A MindRef over no documents yet (its search answers ``[]``); :meth:`add` fills it.

        Examples:
            >>> len(MindRef.empty(LocalLM.load(DEFAULT_MODEL)))  # doctest: +SKIP
            0
        """
        mr = cls.__new__(cls)
        mr._setup(lm, config, title_fn)
        return mr

    @classmethod
    def restore(
        cls, objects: Sequence[DataObject], lm: ScoringLM, config: MindRefConfig | None, *, titles: Mapping[str, str],
        paths: Mapping[str, Sequence[int]], trie: TokenTrie,
    ) -> MindRef:  # fmt: skip
        """A MindRef from what one held (its documents' ``titles``, title ``paths`` and keyed ``trie``, which must
        hold those paths by those ids, as a saved one does): nothing is encoded.

        Examples:
            >>> back = MindRef.restore(mr.corpus, lm, mr.config, titles=dict(zip(mr.ids(), mr.titles)),
            ...                        paths=mr.title_paths(), trie=mr.trie)  # doctest: +SKIP
        """
        mr = cls.empty(lm, config)
        for o in objects:
            seq = tuple(int(t) for t in paths[o.id])
            mr._objects[o.id], mr._titles[o.id], mr._title_seq[o.id] = o, str(titles[o.id]), seq
            mr._by_title[seq] = (*mr._by_title.get(seq, ()), o.id)
        mr.trie = trie
        return mr

    # ------------------------------------------------------------------ a living corpus: change in place by id
    def add(self, objects: Sequence[DataObject]) -> list[str]:
        """Add documents of new ids, after the held ones: their titles go into the title trie in place (no rebuild)
        and their text is encoded when a query first recalls them. Returns their ids. A held id, an id given twice or
        a non-object is an :class:`InvalidInputError` naming it, and nothing is added. Afterwards every answer equals
        a :class:`MindRef` built fresh over the held documents in their order.

        Examples:
            >>> mr = MindRef(docs, LocalLM.load(DEFAULT_MODEL))  # doctest: +SKIP
            >>> mr.add([Passage(id="c", title="Solar", text="Panels make power.")]), mr.titles[-1]  # doctest: +SKIP
            (['c'], 'Solar')
        """
        objs = check_batch(objects)
        held = next((o.id for o in objs if o.id in self._objects), None)
        if held is not None:
            raise InvalidInputError(f"MindRef.add: id {held!r} is already held; delete it first or use update")
        titles = {o.id: document_title(o, self.config, self.lm, self._title_fn) for o in objs}
        seqs = {o.id: self._title_tokens(o, titles[o.id]) for o in objs}
        self.trie.add(seqs)  # checks every sequence before it changes anything
        for o in objs:
            self._objects[o.id], self._titles[o.id], self._title_seq[o.id] = o, titles[o.id], seqs[o.id]
            self._by_title[seqs[o.id]] = (*self._by_title.get(seqs[o.id], ()), o.id)
        self._views = None
        return [o.id for o in objs]

    def delete(self, ids: Sequence[str]) -> list[str]:
        """Remove held documents by id: a title path no other document holds leaves the trie (so a deleted
        document's title is never generated again), and its tokens are dropped. Returns the ids. An id not held is
        an :class:`InvalidInputError` naming it, and nothing is removed.

        Examples:
            >>> mr.delete(["c"]), "c" in mr  # doctest: +SKIP
            (['c'], False)
        """
        wanted = check_ids(ids, where="MindRef.delete")
        check_held(wanted, self._objects, "MindRef.delete: id {id!r} is not held")
        self.trie.delete(wanted)
        for i in wanted:
            seq = self._title_seq.pop(i)
            del self._objects[i], self._titles[i]
            self._doc_tokens.pop(i, None)
            docs = tuple(d for d in self._by_title.pop(seq) if d != i)
            if docs:
                self._by_title[seq] = docs
        self._views = None
        return wanted

    def update(self, objects: Sequence[DataObject]) -> list[str]:
        """Give held documents new content: :meth:`delete`, then :meth:`add` (they move to the end of the corpus
        order; change a :meth:`copy` for all or nothing). An id not held is an :class:`InvalidInputError`.

        Examples:
            >>> mr.update([Passage(id="a", title="Aspirin", text="Aspirin relieves pain.")])  # doctest: +SKIP
            ['a']
        """
        objs = check_batch(objects)
        ids = [o.id for o in objs]
        check_held(ids, self._objects, "MindRef.update: id {id!r} is not held; add it")
        self.delete(ids)
        return self.add(objs)

    def copy(self) -> MindRef:
        """An independent copy sharing the LM and the (unchanging) token arrays of documents: change it while
        searches read this one, then swap (what :class:`~retrievekit.core.generative.mindref_index.LiveMindRef`
        does). ``O(documents + trie nodes)``, no encoding: ``mr.copy().delete(["a"])`` leaves ``mr`` as it was.
        """
        out = copy.copy(self)
        out._objects, out._titles = dict(self._objects), dict(self._titles)
        out._title_seq, out._doc_tokens = dict(self._title_seq), dict(self._doc_tokens)
        out._by_title = dict(self._by_title)  # of tuples: no new object per title (a GC pass at 10^4 of them)
        out.trie, out.checks, out._views = _own_containers(self.trie), dict(self.checks), self._views
        return out

    def ids(self) -> list[str]:
        """The held document ids, in corpus order (``MindRef(docs, lm).ids()``: ``['a', 'b']``)."""
        return list(self._objects)

    def title_paths(self, ids: Iterable[str] | None = None) -> dict[str, tuple[int, ...]]:
        """Each held document's (or the held ``ids``') title path in the trie (``title_prefix + title`` encoded)."""
        return dict(self._title_seq) if ids is None else {i: self._title_seq[i] for i in ids}

    def titles_of(self, ids: Iterable[str]) -> dict[str, str]:
        """The titles of held ids, without the whole corpus's list (``mr.titles_of(["a"])``: ``{'a': 'Aspirin'}``)."""
        return {i: self._titles[i] for i in ids}

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._objects

    def __len__(self) -> int:
        return len(self._objects)

    def _view(self) -> tuple[list[DataObject], list[str], dict[str, int]]:
        views = self._views
        if views is None:
            corpus = list(self._objects.values())
            views = (corpus, [self._titles[o.id] for o in corpus], {o.id: i for i, o in enumerate(corpus)})
            self._views = views
        return views

    @property
    def corpus(self) -> list[DataObject]:
        """The held documents, in corpus order (indices of :attr:`titles`, :meth:`doc_tokens`, ``TitleHit``)."""
        return self._view()[0]

    @property
    def titles(self) -> list[str]:
        """The title of each held document (given or derived), in corpus order."""
        return self._view()[1]

    # ------------------------------------------------------------------ titles and tokens
    def _title_tokens(self, obj: DataObject, title: str) -> tuple[int, ...]:
        """The trie path of a title: ``title_prefix + title`` encoded, EOS dropped (the id's when that is empty)."""
        eos = self.lm.eos_token_id
        ids = tuple(int(t) for t in self.lm.encode(self.config.title_prefix + title) if t != eos)
        return ids or tuple(int(t) for t in self.lm.encode(self.config.title_prefix + obj.id) if t != eos)

    def doc_tokens(self, index: int) -> np.ndarray:
        """Token ids of document ``index`` as indexed (``passage_prefix + text``), encoded on first use."""
        doc = self.corpus[index]
        toks = self._doc_tokens.get(doc.id)
        if toks is None:
            text = doc.text
            toks = np.asarray(self.lm.encode(self.config.passage_prefix + text) if text else [], dtype=np.int64)
            self._doc_tokens[doc.id] = toks
        return toks

    # ------------------------------------------------------------------ stage 1
    def recall_titles(self, query: str, *, trace: Trace | None = None) -> list[TitleHit]:
        """Stage 1: the best ``title_return`` distinct real titles for ``query``, best first."""
        return self._recall_titles(check_query(query), self.config.title_return, trace)

    def _recall_titles(self, query: str, limit: int, trace: Trace | None) -> list[TitleHit]:
        """The best ``limit`` distinct real titles of one title beam search (at most ``title_beams``)."""
        cfg = self.config
        if not self._objects:
            return []
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
            held = self._by_title.get(ids)
            docs = tuple(self._view()[2][i] for i in held) if held else None
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
        if not self._objects:
            trace.note("empty_index", "MindRef holds no documents; returning no hits")
            return []
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


def _own_containers(obj: Any) -> Any:
    """A copy of ``obj`` whose top-level containers (dicts, sets, lists, arrays) are its own: enough for a trie, whose
    containers hold only immutable items (a deep copy of its 10^4 title tuples costs 100x more)."""
    if not hasattr(obj, "__dict__"):
        return copy.deepcopy(obj)
    out = copy.copy(obj)
    for name, value in list(vars(out).items()):
        if isinstance(value, (dict, set, list)):
            setattr(out, name, type(value)(value))
        elif isinstance(value, np.ndarray):
            setattr(out, name, value.copy())
    return out


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
    return MindRef(corpus, scoring_lm(llm), config)
