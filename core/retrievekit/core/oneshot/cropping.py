"""LLM chunk cropping: the LLM picks which sentences of a chunk to keep, so cropping can never invent text.

A chunk is split into sentences (:func:`split_sentences`: sentence punctuation followed by space, and line breaks,
which separate list items in regulatory text); the LLM sees them in reading order, each in a numbered data block
(``0, 1, ...``; with ``shuffle_ids`` the ids are drawn from the question and the text, so "keep only sentence 3"
written into the chunk names a random sentence), and returns ``{"keep": [ids]}`` through ``complete_json``
(schema-constrained on local models). The cropped text is the kept sentences' original spans, in
their original order, joined by the original separators' kind (newline if the gap had one, else a space).

Anything else falls back to the uncropped chunk and records why in the trace (``kind="fallback"``): an
:class:`~retrievekit.core.errors.LLMOutputError` (invalid JSON after the adapter's repair and retries), indices out of
range or not integers, or an empty selection.

With a relevance judge (an ``llm`` implementing :class:`~retrievekit.core.llm.protocol.RelevanceJudge`) there is no
prompt: one batched ``score_relevance(question, sentences)`` call scores every sentence, and the sentences with
``P(relevant) >= judge_threshold`` are kept (the best one when none passes; ties keep the earlier sentence). The
cropped text is built from the kept sentences' original spans exactly as above; the trace gets a ``oneshot.judge``
note with the scores and the ``oneshot.judge_crops`` counter. A judge failure falls back to the uncropped chunk.

The model call is a value (:mod:`retrievekit.core.llm.calls`): :meth:`SentenceCropper.ask` builds it (nothing is
sent), :meth:`SentenceCropper.read` turns the reply, or the call's recoverable error, into the :class:`CropResult`.
:meth:`SentenceCropper.crop` sends one call now; the One-SHOT selector yields the calls of all the chunks it crops as
one batch, sent by the sync or the async model driver (:mod:`retrievekit.core.llm.drivers`). There a model's
``InvalidInputError`` (e.g. a chunk longer than a local model's context) raises, as the driver raises it, where
``crop`` keeps the chunk uncropped.

Examples:
    >>> split_sentences("Firms must report. They must keep records.\\n(a) daily; and\\n(b) weekly.")
    ['Firms must report.', 'They must keep records.', '(a) daily; and', '(b) weekly.']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import LLMUnavailableError, RetrieveKitError
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import send_call
from retrievekit.core.llm.protocol import ChatLLM, RelevanceJudge
from retrievekit.core.llm.untrusted import DATA_RULE, fence, unpredictable_order
from retrievekit.core.spans import trimmed_spans
from retrievekit.core.trace import Trace

__all__ = [
    "CROP_SCHEMA",
    "CropAsk",
    "CropResult",
    "crop_schema",
    "SentenceCropper",
    "sentence_spans",
    "split_sentences",
]

_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\s*\n+\s*")

CROP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"keep": {"type": "array", "items": {"type": "integer"}, "minItems": 1}},
    "required": ["keep"],
}
"""The reply schema: ``{"keep": [int, ...]}`` with at least one id (a schema-constrained model cannot keep nothing).
Kept constant (range checked after parsing) so a local model compiles its constrained-decoding index once, not once
per chunk length."""


def crop_schema(n: int) -> dict[str, Any]:
    """The reply schema for a passage of ``n`` sentences: ids restricted to ``0..n-1``, 1 to ``n`` of them. Sent to
    a served LLM, whose server compiles a grammar per request anyway; a local model keeps :data:`CROP_SCHEMA`.

    Examples:
        >>> crop_schema(3)["properties"]["keep"]["items"]
        {'type': 'integer', 'enum': [0, 1, 2]}
    """
    keep = {"type": "array", "items": {"type": "integer", "enum": list(range(n))}, "minItems": 1, "maxItems": n}
    return {"type": "object", "properties": {"keep": keep}, "required": ["keep"]}


_PROMPT = (
    "Question: {question}\n\n"
    "Below are the sentences of one passage, each in a numbered data block. Return the ids of the blocks needed to "
    "answer the question (keep definitions and conditions they depend on). Return all ids if unsure.\n"
    "{rule}\n\n{sentences}\n\n"
    'Reply as JSON: {{"keep": [block ids]}}'
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the sentences of ``text`` (whitespace-trimmed, empty ones skipped).

    Examples:
        >>> t = "One. Two."
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['One.', 'Two.']
    """
    return trimmed_spans(text, _BOUNDARY)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see the module docstring for the rule).

    Examples:
        >>> split_sentences("No boundary here")
        ['No boundary here']
    """
    return [text[a:b] for a, b in sentence_spans(text)]


@dataclass(frozen=True)
class CropResult:
    """The (possibly) cropped text and what happened.

    Attributes:
        text: the cropped text (a subset of the original sentences, in order), or the original text.
        kept: indices of the kept sentences (all of them on fallback).
        n_sentences: how many sentences the chunk had.
        cropped: True when some sentences were removed.
        fallback: the reason the original was kept, or None.

    Examples:
        >>> CropResult("a", (0,), 1, False, None).cropped
        False
    """

    text: str
    kept: tuple[int, ...]
    n_sentences: int
    cropped: bool
    fallback: str | None = None


@dataclass(frozen=True)
class CropAsk:
    """One chunk's cropping request, as a value (:meth:`SentenceCropper.ask`; nothing is sent yet).

    Attributes:
        text: the chunk.
        spans: ``(start, end)`` of each of its sentences.
        ids: the id each sentence is shown with (a judge call: ``0..n-1``).
        chunk_id: the passage's id (named in the trace; what each sentence stands for, for a judge).
        call: the :class:`~retrievekit.core.llm.calls.ModelCall` (a JSON call, or a judge call).

    Examples:
        >>> SentenceCropper(None).ask("q", "A. B.").spans  # type: ignore[arg-type]
        ((0, 2), (3, 5))
    """

    text: str
    spans: tuple[tuple[int, int], ...]
    ids: tuple[int, ...]
    chunk_id: str
    call: ModelCall


class SentenceCropper:
    """Crop a chunk to the sentences an LLM says are needed for the question.

    Args:
        llm: any :class:`~retrievekit.core.llm.protocol.ChatLLM` (``LocalLM``, or an adapter around a LlamaIndex /
            LangChain model).
        max_tokens: generation limit for the reply.
        judge_threshold: with a :class:`~retrievekit.core.llm.protocol.RelevanceJudge` as ``llm``, sentences with
            ``P(relevant)`` at least this are kept (see the module docstring).
        shuffle_ids: number the sentences with ids drawn from the question and the text (a permutation of
            ``0..n-1``) instead of ``0, 1, 2, ...`` (default False).

    Examples:
        >>> from retrievekit.core.llm.protocol import JsonResult
        >>> class Keep0:
        ...     def complete(self, *a, **k): ...
        ...     def complete_json(self, prompt, schema, **k):
        ...         return JsonResult(value={"keep": [0]}, raw='{"keep": [0]}')
        >>> SentenceCropper(Keep0()).crop("Who pays?", "The firm pays. The sky is blue.").text
        'The firm pays.'
        >>> class Judge:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.8 if "firm" in c else 0.1 for c in candidates]
        >>> SentenceCropper(Judge()).crop("Who pays?", "The sky is blue. The firm pays.").text
        'The firm pays.'
    """

    def __init__(
        self,
        llm: ChatLLM | RelevanceJudge,
        *,
        max_tokens: int = 96,
        judge_threshold: float = 0.5,
        shuffle_ids: bool = False,
    ) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.judge_threshold = float(judge_threshold)
        self.shuffle_ids = bool(shuffle_ids)

    def block_ids(self, question: str, sentences: Sequence[str]) -> list[int]:
        """The id each sentence is shown with (a permutation of ``0..n-1``; ``0, 1, ...`` without ``shuffle_ids``).

        Examples:
            >>> SentenceCropper(None).block_ids("q", ["a", "b", "c"])  # type: ignore[arg-type]
            [0, 1, 2]
            >>> sorted(SentenceCropper(None, shuffle_ids=True).block_ids("q", ["a", "b", "c"]))  # type: ignore[arg-type]
            [0, 1, 2]
        """
        n = len(sentences)
        return unpredictable_order([question, *sentences], n) if self.shuffle_ids else list(range(n))

    def _schema(self, n: int) -> dict[str, Any]:
        from retrievekit.core.llm.local import LocalLM

        return CROP_SCHEMA if isinstance(self.llm, LocalLM) else crop_schema(n)

    def prompt(self, question: str, sentences: Sequence[str]) -> str:
        """The cropping prompt for ``sentences`` (numbered with :meth:`block_ids`).

        Examples:
            >>> cropper = SentenceCropper(None, shuffle_ids=False)  # type: ignore[arg-type]
            >>> '<data id="1">b</data>' in cropper.prompt("q", ["a", "b"])
            True
        """
        return self._prompt(question, sentences, self.block_ids(question, sentences))

    def _prompt(self, question: str, sentences: Sequence[str], ids: Sequence[int]) -> str:
        return _PROMPT.format(question=question, rule=DATA_RULE, sentences=fence(sentences, ids=ids))

    def crop(self, question: str, text: str, *, trace: Trace | None = None, chunk_id: str = "") -> CropResult:
        """Ask the LLM which sentences to keep; fall back to ``text`` unchanged (and say why) on any bad reply:
        :meth:`ask`, the call sent now (:func:`~retrievekit.core.llm.drivers.send_call`), :meth:`read`.

        ``chunk_id`` (the passage's id) names the chunk in the trace and, for a judge, is what each sentence stands
        for (``judge_relevance(refs=)``). A served LLM that is down or too slow (``LLMUnavailableError``) raises;
        any other error of the call is a fallback, as a bad reply is.

        Examples:
            >>> SentenceCropper(None).crop("q", "Only one sentence").fallback  # type: ignore[arg-type]
            'fewer than 2 sentences'
        """
        ask = self.ask(question, text, chunk_id=chunk_id)
        if isinstance(ask, CropResult):
            return ask
        reply: Any
        try:
            reply = send_call(ask.call, self.llm, trace)
        except LLMUnavailableError:  # a served LLM that is down or too slow: the caller hears of it
            raise
        except (RetrieveKitError, ValueError) as e:  # e.g. a chunk longer than a local model's context
            reply = e
        return self.read(ask, reply, trace)

    def ask(self, question: str, text: str, *, chunk_id: str = "") -> CropAsk | CropResult:
        """The model call that crops ``text`` (a :class:`CropAsk`: nothing is sent), or, for a chunk of fewer than 2
        sentences, its :class:`CropResult` (no call needed). A judge call when ``llm`` is a
        :class:`~retrievekit.core.llm.protocol.RelevanceJudge` (each sentence stands for ``chunk_id``), else the JSON
        prompt with the sentences numbered by :meth:`block_ids`.

        Examples:
            >>> ask = SentenceCropper(None).ask("q", "One. Two.", chunk_id="c1")  # type: ignore[arg-type]
            >>> ask.call.kind, ask.call.purpose, ask.ids
            ('json', 'oneshot.crop', (0, 1))
        """
        spans = tuple(sentence_spans(text))
        n = len(spans)
        if n < 2:
            return CropResult(text, tuple(range(n)), n, False, "fewer than 2 sentences")
        sentences = [text[a:b] for a, b in spans]
        if isinstance(self.llm, RelevanceJudge):
            refs = [(chunk_id,)] * n if chunk_id else None  # each sentence stands for its passage
            return CropAsk(text, spans, tuple(range(n)), chunk_id, ModelCall.judge(question, sentences, refs=refs))
        ids = self.block_ids(question, sentences)  # the id each sentence is shown with
        prompt = self._prompt(question, sentences, ids)
        call = ModelCall.json("oneshot.crop", prompt, self._schema(n), max_tokens=self.max_tokens)
        return CropAsk(text, spans, tuple(ids), chunk_id, call)

    def read(self, ask: CropAsk, reply: Any, trace: Trace | None) -> CropResult:
        """The crop that the model's reply to :meth:`ask` gives (an exception: the call failed), or the uncropped
        chunk when the reply is unusable, noted in ``trace`` (``kind="fallback"``, module docstring). A judge's reply
        keeps the sentences at or above ``judge_threshold`` (else the best one), counted (``oneshot.judge_crops``)
        and noted (``oneshot.judge``).

        Examples:
            >>> from retrievekit.core.llm.protocol import JsonResult
            >>> cropper = SentenceCropper(None)  # type: ignore[arg-type]
            >>> ask = cropper.ask("q", "Keep me. Drop me.")
            >>> cropper.read(ask, JsonResult({"keep": [0]}, ""), None).text
            'Keep me.'
            >>> cropper.read(ask, ValueError("bad"), None).fallback
            'LLM reply unusable (ValueError: bad)'
        """
        n = len(ask.spans)
        judged = ask.call.kind == "judge"
        if isinstance(reply, Exception):
            who = "judge" if judged else "LLM"
            return self._fall_back(ask, trace, f"{who} reply unusable ({type(reply).__name__}: {str(reply)[:160]})")
        keep: Any
        if judged:
            keep = self._judged(ask, [float(p) for p in reply], trace)
        else:
            value = reply.value
            keep = value.get("keep") if isinstance(value, dict) else None
            if not isinstance(keep, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in keep):
                return self._fall_back(ask, trace, f"reply is not a list of sentence indices: {str(reply.raw)[:120]!r}")
            sentence_of = {b: i for i, b in enumerate(ask.ids)}
            keep = [sentence_of.get(b, b) for b in keep]  # an id out of range stays out of range
        bad = sorted({i for i in keep if not 0 <= i < n})
        if bad:
            return self._fall_back(ask, trace, f"sentence indices {bad[:10]} out of range 0..{n - 1}", indices=bad[:10])
        chosen = tuple(sorted(set(keep)))
        if not chosen:
            return self._fall_back(ask, trace, "LLM kept no sentence")
        if len(chosen) == n:
            return CropResult(ask.text, chosen, n, False, None)
        return CropResult(_joined(ask.text, ask.spans, chosen), chosen, n, True, None)

    def _judged(self, ask: CropAsk, ps: list[float], trace: Trace | None) -> list[int]:
        """The sentences a judge's scores keep: ``P(relevant) >= judge_threshold``, else the best one (ties: the
        earlier), counted and noted in ``trace``."""
        n = len(ps)
        keep = [i for i, p in enumerate(ps) if p >= self.judge_threshold]
        if not keep:
            keep = [min(range(n), key=lambda i: (-ps[i], i))]
        if trace is not None:
            trace.count("oneshot.judge_crops")
            trace.note(
                "oneshot.judge",
                f"judged {n} sentences of {ask.chunk_id or 'chunk'}: kept {len(keep)} "
                f"(P(relevant) >= {self.judge_threshold}, or the best one)",
                scores=[round(p, 4) for p in ps],
                kept=keep,
            )
        return keep

    @staticmethod
    def _fall_back(ask: CropAsk, trace: Trace | None, reason: str, **data: Any) -> CropResult:
        """The uncropped chunk, and why (noted in ``trace``)."""
        if trace is not None:
            trace.note("fallback", f"cropping {ask.chunk_id or 'chunk'}: {reason}; kept the uncropped chunk", **data)
        n = len(ask.spans)
        return CropResult(ask.text, tuple(range(n)), n, False, reason)


def _joined(text: str, spans: Sequence[tuple[int, int]], chosen: Sequence[int]) -> str:
    """The chosen sentences' original spans in order, joined by a newline where the gap had one, else a space."""
    parts: list[str] = []
    prev_end: int | None = None
    for i in chosen:
        a, b = spans[i]
        if prev_end is not None:
            parts.append("\n" if "\n" in text[prev_end:a] else " ")
        parts.append(text[a:b])
        prev_end = b
    return "".join(parts)
