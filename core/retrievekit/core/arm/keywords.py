"""Information alignment: decompose the question into keywords, then rephrase each into corpus N-grams.

Two paths (reference: ``align_info.py`` with ``constraint_decoder.py``):

* **Scoring LM** (a local causal LM, e.g. ``LocalLM``): the keywords are the best beams of a search constrained
  to the question's own N-grams (the reference decomposes the question into its substrings), then each keyword
  is rephrased by a beam search (5 beams) whose every step is constrained by a token trie over the
  per-query N-gram vocabulary, so each returned phrase *is* a corpus N-gram. Up to 5 N-grams per keyword, ranked
  by length-normalised log-probability; N-grams already chosen for an earlier keyword cannot be chosen again.
* **Chat LLM only** (no logits): one JSON call returns keywords with free "similar words", and every phrase is
  *snapped* to the nearest corpus N-gram by string similarity (:func:`snap`). This is an approximation of the
  paper's constrained decoding: the model never sees the vocabulary, so the snapped N-gram may differ in meaning.

A decomposition that fails (invalid JSON after repair and retries, or an LLM error) falls back to the question's
content words, and the trace says so.

Examples:
    >>> from retrievekit.core.arm.ngrams import NGramIndex
    >>> from retrievekit.core.types import Passage
    >>> idx = NGramIndex.build([Passage(id="a", text="Prime Suspect was created by Lynda La Plante")])
    >>> snap("prime suspects", idx, 1)
    ['prime suspect']
    >>> fallback_keywords("Who created the series Prime Suspect?", 3)
    ['created', 'series', 'prime']
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrievekit.core.arm.ngrams import NGramIndex
from retrievekit.core.arm.recover import failure_of, falls_back, recovering
from retrievekit.core.arm.serialize import words
from retrievekit.core.errors import ConstraintError, LLMOutputError, RetrieveKitError
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.drivers import drive
from retrievekit.core.llm.protocol import ScoringLM
from retrievekit.core.trace import Trace

__all__ = [
    "DECOMPOSE_PROMPT",
    "REPHRASE_PROMPT",
    "KeywordAlignment",
    "align_keywords",
    "align_keywords_step",
    "decompose",
    "decompose_constrained",
    "decompose_step",
    "fallback_keywords",
    "has_scoring",
    "in_text",
    "rephrase_constrained",
    "snap",
]

DECOMPOSE_PROMPT = (
    "Split the question into its key search phrases (names, entities, attributes), at most {n}, each a few words "
    "copied from the question.\n"
    'Example: "Which year did the director of Jaws win an Oscar?" -> ["director", "Jaws", "Oscar", "year"]\n'
    "Question: {question}"
)
SNAP_PROMPT = (
    "Split the question into its key search phrases (at most {n}) and, for each, list up to {m} words or short "
    "phrases with the same meaning that a table or an encyclopedia article would use.\nQuestion: {question}"
)
DECOMPOSE_CONSTRAINED_PROMPT = (
    "Question: {question}\nThe key search phrase (a name, entity or attribute) in the question:"
)
REPHRASE_PROMPT = "Question: {question}\nKeyword: {keyword}\nWords from the data that match the keyword:"


def has_scoring(llm: object) -> bool:
    """Whether ``llm`` offers constrained beam search (a scoring LM) rather than chat only.

    Examples:
        >>> has_scoring(object())
        False
    """
    return callable(getattr(llm, "constrained_beam_search", None)) and callable(getattr(llm, "encode", None))


@dataclass
class KeywordAlignment:
    """What information alignment produced for one question.

    Attributes:
        keywords: the decomposition (after clean-up).
        ngrams: ``{keyword: [corpus N-grams]}``, best first.
        mode: ``"constrained"``, ``"snap"`` or ``"off"``.
        fallback: why the decomposition fell back to the question's words (``""`` when it did not).
        transient: the fallback came from a failure that may not recur (the model could not be reached, a missing
            dependency), not from the model's reply; such an alignment is not worth keeping (the keyword cache
            skips it). A reply that did not fit the schema, or no usable keyword, is the model's answer: not transient.

    Examples:
        >>> KeywordAlignment(["x"], {"x": ["x y"]}, "snap").all_terms()
        ['x', 'x y']
    """

    keywords: list[str]
    ngrams: dict[str, list[str]] = field(default_factory=dict)
    mode: str = "off"
    fallback: str = ""
    transient: bool = False

    def all_terms(self) -> list[str]:
        """Keywords and their N-grams, de-duplicated in order (the BM25 query of the base stage).

        Examples:
            >>> KeywordAlignment(["a", "b"], {"a": ["b", "c"]}).all_terms()
            ['a', 'b', 'c']
        """
        out: list[str] = []
        for kw in self.keywords:
            for t in [kw, *self.ngrams.get(kw, [])]:
                if t not in out:
                    out.append(t)
        return out


def _is_transient(error: BaseException) -> bool:
    """Whether a decomposition failure may not recur: anything but the model's own unusable reply."""
    return not isinstance(error, (LLMOutputError, ConstraintError))


def fallback_keywords(question: str, n: int) -> list[str]:
    """The first ``n`` distinct content words of the question (the decomposition fallback).

    Examples:
        >>> fallback_keywords("What is the capital of France?", 5)
        ['capital', 'france']
    """
    out: list[str] = []
    for w in words(question, drop_stopwords=True):
        if w not in out:
            out.append(w)
    return out[:n]


def _clean(items: Sequence[Any], n: int) -> list[str]:
    out: list[str] = []
    for item in items:
        text = " ".join(str(item).split())[:80].strip(" .,;:!?\"'")
        if text and text.lower() not in (o.lower() for o in out):
            out.append(text)
        if len(out) >= n:
            break
    return out


def decompose(
    llm: Any, question: str, n: int, *, max_tokens: int = 64, trace: Trace | None = None
) -> tuple[list[str], str]:
    """Keywords of ``question`` from schema-constrained JSON; returns ``(keywords, fallback reason or "")``
    (:func:`decompose_step`, its call sent now).

    Examples:
        >>> decompose(object(), "Who founded Rome?", 2)
        (['founded', 'rome'], 'the LLM has no complete_json method')
    """
    return drive(decompose_step(llm, question, n, max_tokens=max_tokens), recovering(llm), trace=trace)


def decompose_step(llm: Any, question: str, n: int, *, max_tokens: int = 64) -> Step[tuple[list[str], str]]:
    """:func:`decompose` as a step (:mod:`retrievekit.core.llm.calls`): it yields its one JSON call (none for a
    model without ``complete_json``) and reads the reply; a failed call falls back to the question's words.

    Examples:
        >>> from retrievekit.core.llm.drivers import drive
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> drive(decompose_step(object(), "Who founded Rome?", 2), FixedReplyLLM('{"keywords": ["Rome"]}'))
        (['founded', 'rome'], 'the LLM has no complete_json method')
        >>> drive(decompose_step(FixedReplyLLM(""), "Who founded Rome?", 2), FixedReplyLLM('{"keywords": ["Rome"]}'))
        (['Rome'], '')
    """
    if n < 1:
        return [], ""
    schema = {
        "type": "object",
        "properties": {
            "keywords": {"type": "array", "items": {"type": "string", "maxLength": 40}, "minItems": 1, "maxItems": n}
        },
        "required": ["keywords"],
    }
    if not callable(getattr(llm, "complete_json", None)):
        return fallback_keywords(question, n), "the LLM has no complete_json method"
    prompt = DECOMPOSE_PROMPT.format(n=n, question=question)
    (reply,) = yield [ModelCall.json("arm.keywords", prompt, schema, max_tokens=max_tokens)]
    error = failure_of(reply)
    if error is not None:
        return fallback_keywords(question, n), _failed(error)
    value = reply.value if isinstance(reply.value, dict) else {}
    kws = _clean(value.get("keywords") or [], n * 2)
    in_question = [kw for kw in kws if in_text(kw, question)][:n]
    if not in_question:
        why = "the LLM returned no keywords" if not kws else f"no keyword occurs in the question (got {kws[:n]})"
        return fallback_keywords(question, n), why
    return in_question, ""


def _failed(error: BaseException) -> str:
    """Why a decomposition fell back, from the failure of its call (raised again when ARM does not fall back on it:
    an unreachable served model, the caller hears of it)."""
    if not falls_back(error):
        raise error
    return f"keyword decomposition failed ({type(error).__name__}: {str(error)[:120]})"


def in_text(phrase: str, text: str) -> bool:
    """Whether every word of ``phrase`` occurs in ``text`` (the reference decomposes the question into its own
    substrings; a small model also echoes words of the JSON schema, which this drops).

    Examples:
        >>> in_text("Nonso Anozie", "played by actor Nonso Anozie?"), in_text("array", "Who is it?")
        (True, False)
    """
    ws = words(phrase)
    have = set(words(text))
    return bool(ws) and all(w in have for w in ws)


def decompose_constrained(
    lm: ScoringLM, question: str, n: int, *, max_tokens: int = 16, trace: Trace | None = None
) -> tuple[list[str], str]:
    """Keywords as the ``n`` best beams of a search constrained to the question's own N-grams (n <= 3, no
    stopword at either end): the reference decomposes the question into its substrings, and a small model asked
    for JSON tends to echo the schema instead. Returns ``(keywords, fallback reason or "")``.

    Examples:
        >>> from retrievekit.core.llm import LocalLM
        >>> decompose_constrained(LocalLM.load(DEFAULT_MODEL), "Who created Prime Suspect?", 2)  # doctest: +SKIP
        (['created prime suspect'], '')
    """
    kws, why, _ = _decompose_constrained(lm, question, n, max_tokens=max_tokens, trace=trace)
    return kws, why


def _decompose_constrained(
    lm: ScoringLM, question: str, n: int, *, max_tokens: int, trace: Trace | None
) -> tuple[list[str], str, bool]:
    """:func:`decompose_constrained` and whether its fallback is transient (:class:`KeywordAlignment`)."""
    if n < 1:
        return [], "", False
    index = NGramIndex.from_texts([("question", question)], 3)
    trie, back = index.token_trie(lm.encode, lm.eos_token_id)
    if not len(trie):
        return fallback_keywords(question, n), "the question has no content words to decompose", False
    beams = max(2 * n, 2)
    try:
        found = lm.constrained_beam_search(
            DECOMPOSE_CONSTRAINED_PROMPT.format(question=question),
            trie.allowed,
            num_beams=beams,
            num_return_sequences=beams,
            max_new_tokens=max_tokens,
            trace=trace,
        )
    except (ConstraintError, RetrieveKitError) as e:
        why = f"keyword decomposition failed ({type(e).__name__}: {str(e)[:120]})"
        return fallback_keywords(question, n), why, _is_transient(e)
    out: list[str] = []
    for b in found:
        g = back.get(tuple(int(t) for t in b.token_ids))
        # a keyword inside an earlier one ("anozie" after "nonso anozie") adds nothing
        if b.finished and g is not None and not any(set(g.split()) <= set(o.split()) for o in out):
            out.append(g)
    if not out:
        return fallback_keywords(question, n), "the constrained decomposition returned no complete keyword", False
    return out[:n], "", False


def rephrase_constrained(
    lm: ScoringLM,
    question: str,
    keyword: str,
    index: NGramIndex,
    *,
    beams: int = 5,
    keep: int = 5,
    max_tokens: int = 8,
    exclude: Sequence[str] = (),
    trace: Trace | None = None,
) -> list[str]:
    """Corpus N-grams for ``keyword``: a beam search constrained to the token trie of ``index``'s N-grams.

    Only complete N-grams (beams that ended with EOS at a trie leaf) are returned; ``exclude`` N-grams may not be
    emitted. Returns ``[]`` when the vocabulary is empty.

    Examples:
        >>> from retrievekit.core.llm import LocalLM
        >>> from retrievekit.core.types import Passage
        >>> idx = NGramIndex.build([Passage(id="a", text="Prime Suspect was written by Lynda La Plante")])
        >>> rephrase_constrained(LocalLM.load(DEFAULT_MODEL), "Who wrote Prime Suspect?", "author", idx)  # doctest: +SKIP
        ['prime suspect', 'written by lynda', 'suspect was written', 'suspect', 'prime']
    """
    trie, back = index.token_trie(lm.encode, lm.eos_token_id)
    if not len(trie):
        return []
    eos = lm.eos_token_id
    banned = {ids for ids, g in back.items() if g in {" ".join(words(x)) for x in exclude}}

    def allowed(prefix: Sequence[int]) -> list[int]:
        out = trie.allowed(prefix)
        if banned and tuple(prefix) in banned:
            out = [t for t in out if t != eos]
        return out

    try:
        found = lm.constrained_beam_search(
            REPHRASE_PROMPT.format(question=question, keyword=keyword),
            allowed,
            num_beams=beams,
            num_return_sequences=beams,
            max_new_tokens=max_tokens,
            trace=trace,
        )
    except ConstraintError:
        return []
    out: list[str] = []
    for b in found:
        g = back.get(tuple(int(t) for t in b.token_ids))
        if b.finished and g is not None and g not in out:
            out.append(g)
        if len(out) >= keep:
            break
    return out


def snap(phrase: str, index: NGramIndex, n: int = 1, *, cutoff: float = 0.5) -> list[str]:
    """The ``n`` corpus N-grams closest to ``phrase`` by string similarity (``difflib`` ratio on normalised text).

    Candidates are the N-grams sharing a 4-character word prefix with ``phrase`` (or with ``phrase`` without
    spaces); ``[]`` when none reaches ``cutoff``.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> snap("solar", NGramIndex.build([Passage(id="a", text="solar panels")]), 2)
        ['solar', 'solar panels']
    """
    target = " ".join(words(phrase))
    if not target or not len(index):
        return []
    if target in index.postings:
        first = [target]
    else:
        first = []
    stems = {w[:4] for w in target.split()} | {target.replace(" ", "")[:4]}
    cands = [g for g in index.postings if g != target and any(w[:4] in stems for w in g.split())]
    scored = sorted(((difflib.SequenceMatcher(None, target, g).ratio(), g) for g in cands), key=lambda x: (-x[0], x[1]))
    rest = [g for s, g in scored if s >= cutoff]
    return (first + rest)[:n]


def align_keywords(
    llm: Any,
    question: str,
    index: NGramIndex,
    *,
    max_keywords: int = 4,
    beams: int = 5,
    keep: int = 5,
    max_tokens: int = 8,
    decompose_max_tokens: int = 64,
    constrained: bool = True,
    trace: Trace | None = None,
) -> KeywordAlignment:
    """Decompose ``question`` and align every keyword with corpus N-grams (constrained or snapped):
    :func:`align_keywords_step`, its call sent now.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> idx = NGramIndex.build([Passage(id="a", text="Rome was founded by Romulus")])
        >>> a = align_keywords(object(), "Who founded Rome?", idx, keep=2)
        >>> a.mode, a.keywords, a.ngrams["rome"]
        ('snap', ['founded', 'rome'], ['rome'])
    """
    step = align_keywords_step(
        llm,
        question,
        index,
        max_keywords=max_keywords,
        beams=beams,
        keep=keep,
        max_tokens=max_tokens,
        decompose_max_tokens=decompose_max_tokens,
        constrained=constrained,
        trace=trace,
    )
    return drive(step, recovering(llm), trace=trace)


def align_keywords_step(
    llm: Any,
    question: str,
    index: NGramIndex,
    *,
    max_keywords: int = 4,
    beams: int = 5,
    keep: int = 5,
    max_tokens: int = 8,
    decompose_max_tokens: int = 64,
    constrained: bool = True,
    trace: Trace | None = None,
) -> Step[KeywordAlignment]:
    """:func:`align_keywords` as a step (:mod:`retrievekit.core.llm.calls`). A scoring LM decodes in-process
    (constrained beam search, no call yielded); a chat LLM's decomposition is one JSON call (yielded), whose
    phrases are then snapped to corpus N-grams.

    Examples:
        >>> from retrievekit.core.llm.drivers import drive
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> from retrievekit.core.types import Passage
        >>> idx = NGramIndex.build([Passage(id="a", text="Rome was founded by Romulus")])
        >>> llm = FixedReplyLLM('{"keywords": [{"keyword": "Rome", "similar": ["Romulus"]}]}')
        >>> drive(align_keywords_step(llm, "Who founded Rome?", idx), llm).ngrams
        {'Rome': ['rome', 'romulus']}
    """
    if max_keywords < 1:
        return KeywordAlignment([], {}, "off")
    if constrained and has_scoring(llm):
        return _align_constrained(
            llm,
            question,
            index,
            max_keywords=max_keywords,
            beams=beams,
            keep=keep,
            max_tokens=max_tokens,
            decompose_max_tokens=decompose_max_tokens,
            trace=trace,
        )
    kws, similar, why, transient = yield from _decompose_with_similar(
        llm, question, max_keywords, keep, decompose_max_tokens
    )
    out: dict[str, list[str]] = {}
    for kw in kws:
        snapped: list[str] = []
        for phrase in [kw, *similar.get(kw, [])]:
            for g in snap(phrase, index, 1):
                if g not in snapped:
                    snapped.append(g)
        out[kw] = snapped[:keep]
    return KeywordAlignment(kws, out, "snap", why, transient)


def _align_constrained(
    llm: Any,
    question: str,
    index: NGramIndex,
    *,
    max_keywords: int,
    beams: int,
    keep: int,
    max_tokens: int,
    decompose_max_tokens: int,
    trace: Trace | None,
) -> KeywordAlignment:
    """The scoring LM's alignment: in-process constrained decoding, each keyword rephrased into corpus N-grams."""
    kws, why, transient = _decompose_constrained(
        llm, question, max_keywords, max_tokens=decompose_max_tokens, trace=trace
    )
    chosen: list[str] = []
    out: dict[str, list[str]] = {}
    for kw in kws:
        grams = rephrase_constrained(
            llm, question, kw, index, beams=beams, keep=keep, max_tokens=max_tokens, exclude=chosen, trace=trace
        )
        out[kw] = grams
        chosen.extend(grams)
    return KeywordAlignment(kws, out, "constrained", why, transient)


def _decompose_with_similar(
    llm: Any, question: str, n: int, m: int, max_tokens: int
) -> Step[tuple[list[str], dict[str, list[str]], str, bool]]:
    schema = {
        "type": "object",
        "properties": {
            "keywords": {
                "type": "array",
                "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "keyword": {"type": "string"},
                        "similar": {"type": "array", "items": {"type": "string"}, "maxItems": m},
                    },
                    "required": ["keyword"],
                },
            }
        },
        "required": ["keywords"],
    }
    if not callable(getattr(llm, "complete_json", None)):
        return fallback_keywords(question, n), {}, "the LLM has no complete_json method", False
    prompt = SNAP_PROMPT.format(n=n, m=m, question=question)
    (reply,) = yield [ModelCall.json("arm.keywords", prompt, schema, max_tokens=max_tokens * 4)]
    error = failure_of(reply)
    if error is not None:
        return fallback_keywords(question, n), {}, _failed(error), _is_transient(error)
    items = (reply.value or {}).get("keywords") or [] if isinstance(reply.value, dict) else []
    kws: list[str] = []
    similar: dict[str, list[str]] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        kw = _clean([item.get("keyword", "")], 1)
        if not kw or kw[0] in kws:
            continue
        kws.append(kw[0])
        similar[kw[0]] = _clean(item.get("similar") or [], m)
        if len(kws) >= n:
            break
    if not kws:
        return fallback_keywords(question, n), {}, "the LLM returned no keywords", False
    return kws, similar, "", False
