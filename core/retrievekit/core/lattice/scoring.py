"""Scoring a slate: the prompt, the JSON reply schema, and what happens to bad replies.

The LLM sees the query and the candidates as numbered data blocks ``<data id="1">text</data>`` (document text is
fenced and neutralised, and the prompt says it is data, never instructions: :mod:`retrievekit.core.llm.untrusted`),
in an order drawn from the query and the texts (``shuffle_slates``: a document cannot know its slot, so a reply
written into it and aimed at its own place lands on a random item; scores come back in item order), and answers
JSON:

* ``reply_format="list"`` (default, compact): ``{"scores": [s1, ..., sn]}``, one integer ``0..score_max`` per item
  in item order; the schema fixes the length, so a schema-constrained local model (Outlines) always answers
  every item;
* ``reply_format="pairs"`` (the reference code's ``relevance_scores``): ``{"scores": [[item, score], ...]}``.

Handling (every case counted in :class:`SlateScores` and noted in the trace):

* an item the reply leaves out gets ``omitted_score`` (0 by default);
* an item number out of range, or a repeated one (the first wins), is dropped;
* a score outside ``0..score_max`` is clipped;
* invalid JSON is repaired / retried by the LLM adapter (``complete_json``); when it still fails, or the reply
  scores no item at all, the slate falls back to embedding cosine scores (``source="fallback"``);
* a reply that ranks nothing (all scores equal, all zero, or a counting sequence in the order shown:
  :mod:`retrievekit.core.lattice.degenerate`) falls back the same way; every LLM-scored slate's ``spread`` (highest
  less lowest score) is kept in :class:`SlateScores` and summed in the trace counter ``lattice.slate_spread`` (over
  ``lattice.llm_slates``), and ``lattice.degenerate_slates`` counts the degenerate ones.

**A relevance judge.** When ``llm`` implements :class:`~retrievekit.core.llm.protocol.RelevanceJudge` (a fine-tuned
judge, ``retrievekit bench --judge DIR``), a slate is scored by one batched ``score_relevance(query, texts)`` call
instead of the JSON prompt: the judge's ``P(relevant)`` is the slate score (the prompt path's ``s / score_max``,
i.e. the same ``0..1`` scale, at full resolution rather than rounded to ``1 / score_max``). One judge call per slate,
as many slates as the prompt path, so call budgets stay comparable; candidates are clipped to
``max_candidate_chars`` as in the prompt. ``source="judge"``, and the trace counts ``lattice.judge_slates`` (plus
``judge.calls``). A judge failure (wrong number of scores, NaN) falls back like a bad JSON reply.

Examples:
    >>> from retrievekit.core.fakes import WordScoreLLM  # scores each block it is shown, in the order shown
    >>> SlateScorer(WordScoreLLM("good")).score("q", ["good", "bad"]).scores
    [0.9, 0.1]
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrievekit.core.lattice.config import LatticeConfig
from retrievekit.core.lattice.degenerate import degenerate_reason, slate_spread
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import send_call
from retrievekit.core.llm.protocol import ChatLLM, RelevanceJudge
from retrievekit.core.llm.untrusted import DATA_RULE, fence, unpredictable_order
from retrievekit.core.trace import Trace

__all__ = [
    "SlateAsk",
    "SlateFallback",
    "SlateScorer",
    "SlateScores",
    "build_prompt",
    "clip_candidate",
    "cosine_fallback",
    "cosine_scores",
    "reply_schema",
]

INTERNAL_TASK = (
    "You navigate a tree of topics to find documents relevant to a search query. Each numbered data block below is "
    "a topic summary. Score each block from 0 to {max} by how likely it contains documents relevant to the query."
)
LEAF_TASK = (
    "You judge documents for a search query. Score each numbered data block (a document) from 0 to {max} by how "
    "relevant it is to the query. A document is relevant only if, read alone, it substantively answers or supports "
    "the query; titles, headings and tables of contents get low scores."
)


def reply_schema(n: int, config: LatticeConfig) -> dict[str, Any]:
    """JSON schema of a reply for ``n`` items.

    Examples:
        >>> reply_schema(3, LatticeConfig())["properties"]["scores"]["minItems"]
        3
        >>> reply_schema(3, LatticeConfig(reply_format="pairs"))["properties"]["scores"]["items"]["minItems"]
        2
    """
    # an enum, not minimum/maximum: Outlines' JSON grammar does not enforce integer bounds (enums it does)
    score = {"type": "integer", "enum": list(range(int(config.score_max) + 1))}
    if config.reply_format == "list":
        scores: dict[str, Any] = {"type": "array", "items": score, "minItems": n, "maxItems": n}
    else:
        pair = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
        scores = {"type": "array", "items": pair, "maxItems": 2 * n}
    return {"type": "object", "properties": {"scores": scores}, "required": ["scores"], "additionalProperties": False}


def build_prompt(query: str, texts: Sequence[str], *, leaf: bool, config: LatticeConfig) -> str:
    """The scoring prompt: task, optional relevance definition, query, the rule that block text is data, the
    candidates as fenced, numbered data blocks, reply format.

    Examples:
        >>> print(build_prompt("q?", ["alpha", "beta"], leaf=True, config=LatticeConfig(score_max=9)).splitlines()[-3])
        <data id="1">alpha</data>
    """
    task = (LEAF_TASK if leaf else INTERNAL_TASK).format(max=config.score_max)
    lines = [task]
    if config.relevance_definition:
        lines.append("Relevance: " + config.relevance_definition)
    lines.append(f"Query: {query}")
    lines.append(DATA_RULE)
    lines.append(fence([clip_candidate(t, config.max_candidate_chars) for t in texts], start=1))
    if config.reply_format == "list":
        lines.append(f'Answer {{"scores": [...]}} with {len(texts)} integers, one per block in id order.')
    else:
        lines.append('Answer {"scores": [[block id, score], ...]}.')
    return "\n".join(lines)


def clip_candidate(text: str, n: int) -> str:
    """A candidate's text as LATTICE shows it to the LLM or the judge: whitespace collapsed, at most ``n`` characters
    (``LatticeConfig.max_candidate_chars``), ``"..."`` marking a cut.

    Examples:
        >>> clip_candidate("Aspirin   reduces  fever in adults.", 20)
        'Aspirin reduces...'
        >>> clip_candidate("short", 20)
        'short'
    """
    t = " ".join(text.split())
    return t if len(t) <= n else t[: max(0, n - 3)].rstrip() + "..."


@dataclass
class SlateScores:
    """Scores of one slate (``0..1``, aligned to the items) and what it took to get them.

    Examples:
        >>> SlateScores(scores=[0.5]).source
        'llm'
    """

    scores: list[float]
    source: str = "llm"
    omitted: int = 0
    invalid_ids: int = 0
    duplicate_ids: int = 0
    clipped: int = 0
    attempts: int = 1
    spread: float | None = None
    events: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SlateAsk:
    """A slate's model call and what reading its reply needs: the query, the texts in item order, the order shown.

    Examples:
        >>> SlateScorer(None).ask("q", ["a"]).texts
        ('a',)
    """

    query: str
    texts: tuple[str, ...]
    order: list[int]
    call: ModelCall


@dataclass
class SlateFallback:
    """A slate whose reply cannot be used: why, and what was read of it (the scores come from the fallback).

    Examples:
        >>> SlateFallback(SlateScorer(None).ask("q", ["a"]), "no reply").why
        'no reply'
    """

    ask: SlateAsk
    why: str
    base: SlateScores | None = None


class SlateScorer:
    """Scores slates with a :class:`~retrievekit.core.llm.protocol.ChatLLM` (one LLM call per slate, plus retries).

    Args:
        llm: the chat LLM (``complete_json`` with a JSON-schema dict).
        config: :class:`~retrievekit.core.lattice.config.LatticeConfig` (reply format, score range, truncation).
        fallback: ``fallback(query, texts) -> scores in 0..1`` used when the LLM fails (e.g. embedding cosine);
            None gives every item ``omitted_score``.

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> pairs = FixedReplyLLM('{"scores": [[2, 70], [9, 50], [2, 10]]}')
        >>> r = SlateScorer(pairs, LatticeConfig(reply_format="pairs", shuffle_slates=False)).score("q", ["a", "b"])
        >>> r.scores, r.omitted, r.invalid_ids, r.duplicate_ids
        ([0.0, 0.7], 1, 1, 1)
    """

    def __init__(
        self,
        llm: ChatLLM,
        config: LatticeConfig | None = None,
        *,
        fallback: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
    ) -> None:
        self.llm = llm
        self.config = config or LatticeConfig()
        self.fallback = fallback
        self._judge: tuple[object, bool] = (None, False)  # (the llm, whether it is a RelevanceJudge)

    def _is_judge(self) -> bool:
        """Whether ``llm`` is a :class:`~retrievekit.core.llm.protocol.RelevanceJudge`, checked once per model (a
        runtime protocol check reads the class's attributes: a slate's ask made it once per call)."""
        if self._judge[0] is not self.llm:
            self._judge = (self.llm, isinstance(self.llm, RelevanceJudge))
        return self._judge[1]

    def score(
        self,
        query: str,
        texts: Sequence[str],
        *,
        leaf: bool = False,
        trace: Trace | None = None,
        refs: Sequence[Collection[str]] | None = None,
    ) -> SlateScores:
        """Score ``texts`` (the slate, in item order) for ``query``: :meth:`ask`, the call sent now
        (:func:`~retrievekit.core.llm.drivers.send_call`), :meth:`read`, and a failed reply's fallback.

        ``refs`` (per item, the ids of the leaves it stands for) go to the judge hook when ``llm`` is a judge.

        Examples:
            >>> SlateScorer(None).score("q", []).scores  # an empty slate needs no call
            []
        """
        if not texts:
            return SlateScores(scores=[])
        ask = self.ask(query, texts, leaf=leaf, refs=refs)
        got = self.read(ask, send_call(ask.call, self.llm, trace), trace)
        return self.fall_back(got, trace) if isinstance(got, SlateFallback) else got

    def ask(
        self, query: str, texts: Sequence[str], *, leaf: bool = False, refs: Sequence[Collection[str]] | None = None
    ) -> SlateAsk:
        """The model call that scores a slate (a value: nothing is sent): a judge call when ``llm`` is a
        :class:`~retrievekit.core.llm.protocol.RelevanceJudge`, else the JSON prompt, its items in an order drawn
        from the prompt's inputs (so no document knows its slot).

        Examples:
            >>> ask = SlateScorer(None, LatticeConfig(shuffle_slates=False)).ask("q", ["a", "b"], leaf=True)
            >>> ask.call.kind, ask.call.purpose, ask.order
            ('json', 'lattice.slate', [0, 1])
        """
        cfg, n = self.config, len(texts)
        if self._is_judge():
            clipped = [clip_candidate(t, cfg.max_candidate_chars) for t in texts]
            return SlateAsk(query, tuple(texts), list(range(n)), ModelCall.judge(query, clipped, refs=refs))
        order = unpredictable_order([query, *texts], n, seed=cfg.seed) if cfg.shuffle_slates else list(range(n))
        prompt = build_prompt(query, [texts[i] for i in order], leaf=leaf, config=cfg)
        max_tokens = max(cfg.score_max_tokens, 8 + n * (6 if cfg.reply_format == "list" else 10))
        call = ModelCall.json("lattice.slate", prompt, reply_schema(n, cfg), max_tokens=max_tokens, retries=cfg.retries)
        return SlateAsk(query, tuple(texts), order, call)

    def read(self, ask: SlateAsk, reply: Any, trace: Trace | None) -> SlateScores | SlateFallback:
        """The slate's scores from the model's reply to :meth:`ask` (an exception: the call failed), or the
        :class:`SlateFallback` that a failed, empty or degenerate reply leads to.

        Examples:
            >>> scorer = SlateScorer(None, LatticeConfig(shuffle_slates=False))
            >>> ask = scorer.ask("q", ["a", "b"])
            >>> from retrievekit.core.llm.protocol import JsonResult
            >>> scorer.read(ask, JsonResult({"scores": [90, 10]}, ""), None).scores
            [0.9, 0.1]
            >>> scorer.read(ask, ValueError("bad"), None).why
            'LLM reply unusable after retries (bad)'
        """
        if ask.call.kind == "judge":
            if isinstance(reply, Exception):
                return SlateFallback(ask, f"judge reply unusable ({str(reply)[:160]})")
            if trace is not None:
                trace.count("lattice.judge_slates")
            return SlateScores(scores=list(reply), source="judge")
        if isinstance(reply, Exception):
            return SlateFallback(ask, f"LLM reply unusable after retries ({str(reply)[:160]})")
        n = len(ask.texts)
        out = self._parse(reply.value, n)
        shown = out.scores
        out.scores = [0.0] * n
        for slot, item in enumerate(ask.order):
            out.scores[item] = shown[slot]
        out.attempts = int(getattr(reply, "attempts", 1))
        if out.omitted == n:
            return SlateFallback(ask, "the LLM reply scored no item", out)
        # a reply that ranks nothing (all equal, all zero, counted off in the order shown) is a fallback too
        out.spread = slate_spread(out.scores)
        if trace is not None:
            trace.count("lattice.llm_slates")
            trace.count("lattice.slate_spread", out.spread)
        degenerate = degenerate_reason(shown)
        if degenerate is not None:
            if trace is not None:
                trace.count("lattice.degenerate_slates")
            return SlateFallback(ask, f"the LLM reply ranks nothing: {degenerate}", out)
        if trace is not None:
            for name in ("omitted", "invalid_ids", "duplicate_ids", "clipped"):
                value = getattr(out, name)
                if value:
                    trace.count(f"lattice.{name}", value)
                    trace.note(f"lattice.{name}", f"{value} item(s) {name.replace('_', ' ')} in an LLM slate reply")
        return out

    def _parse(self, value: Any, n: int) -> SlateScores:
        cfg = self.config
        raw = value.get("scores") if isinstance(value, dict) else None
        got: dict[int, float] = {}
        invalid = dup = clipped = 0
        if isinstance(raw, list):
            if cfg.reply_format == "list":
                pairs: list[Any] = [[i + 1, s] for i, s in enumerate(raw)]
            else:
                pairs = raw
            for pair in pairs:
                if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                    invalid += 1
                    continue
                item, s = pair
                if isinstance(item, bool) or not isinstance(item, (int, float)) or not 1 <= int(item) <= n:
                    invalid += 1
                    continue
                if isinstance(s, bool) or not isinstance(s, (int, float)) or not np.isfinite(float(s)):
                    invalid += 1
                    continue
                if int(item) in got:
                    dup += 1
                    continue
                sv = float(s)
                if not 0 <= sv <= cfg.score_max:
                    clipped += 1
                    sv = min(max(sv, 0.0), float(cfg.score_max))
                got[int(item)] = sv / cfg.score_max
        scores = [got.get(i + 1, cfg.omitted_score) for i in range(n)]
        return SlateScores(scores=scores, omitted=n - len(got), invalid_ids=invalid, duplicate_ids=dup, clipped=clipped)

    def fall_back(
        self, failed: SlateFallback, trace: Trace | None, *, scores: Sequence[float] | None = None
    ) -> SlateScores:
        """The scores of a slate whose reply failed: ``scores`` when given (cosine scores from stored vectors), else
        the ``fallback`` scorer's, else ``omitted_score`` for every item; counted and noted in ``trace``.

        Examples:
            >>> scorer = SlateScorer(None)
            >>> failed = scorer.read(scorer.ask("q", ["a"]), ValueError("x"), None)
            >>> scorer.fall_back(failed, None).scores, scorer.fall_back(failed, None, scores=[0.7]).source
            ([0.0], 'fallback')
        """
        texts = failed.ask.texts
        n = len(texts)
        if scores is not None:
            how = "embedding cosine scores"
        elif self.fallback is not None:
            scores = [float(s) for s in self.fallback(failed.ask.query, texts)]
            how = "embedding cosine scores"
        else:
            scores = [self.config.omitted_score] * n
            how = f"score {self.config.omitted_score} for every item (no fallback scorer)"
        if trace is not None:
            trace.count("lattice.fallback_slates")
            trace.note("fallback", f"{failed.why}; using {how} for this slate of {n}")
        out = failed.base or SlateScores(scores=[])
        out.scores = [float(s) for s in scores]
        out.source = "fallback"
        out.events.append(failed.why)
        return out


def cosine_scores(query_vector: np.ndarray, vectors: np.ndarray) -> list[float]:
    """Cosine between a query vector and each row, mapped from ``[-1, 1]`` to ``[0, 1]`` (the fallback's scale).

    Examples:
        >>> cosine_scores(np.array([1.0, 0.0]), np.array([[1.0, 0.0], [0.0, 1.0]]))
        [1.0, 0.5]
    """
    q = np.asarray(query_vector, dtype=np.float64)
    d = np.asarray(vectors, dtype=np.float64)
    qn = q / (np.linalg.norm(q) or 1.0)
    dn = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    return [round(float((1.0 + c) / 2.0), 6) for c in dn @ qn]


def cosine_fallback(
    embed_query: Callable[[str], np.ndarray], embed_documents: Callable[[Sequence[str]], np.ndarray]
) -> Callable[[str, Sequence[str]], list[float]]:
    """A fallback scorer: cosine between the query and each text, mapped from ``[-1, 1]`` to ``[0, 1]``.

    Examples:
        >>> import numpy as np
        >>> f = cosine_fallback(lambda q: np.array([1.0, 0.0]), lambda ts: np.array([[1.0, 0.0], [0.0, 1.0]]))
        >>> f("q", ["a", "b"])
        [1.0, 0.5]
    """

    def score(query: str, texts: Sequence[str]) -> list[float]:
        return cosine_scores(embed_query(query), embed_documents(list(texts)))

    return score
