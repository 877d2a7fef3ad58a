"""A served LLM as a pointwise relevance judge: the Yes/No log-probabilities through an OpenAI-compatible API.

:class:`ServedJudge` asks the server one question per (query, candidate) pair, the project's zero-shot Yes/No prompt
(:data:`~retrievekit.core.judge.prompt.CHAT_INSTRUCTION`) as one user turn, and reads the answer two ways:

* ``"logprobs"``: one answer token with ``logprobs`` / ``top_logprobs`` (llama.cpp's server, vLLM and hosted APIs
  return them); the margin is ``logsumexp(Yes-variants) - logsumexp(No-variants)`` of the first answer token, as the
  local zero-shot judge reads its logits (a side missing from the top list is bounded by the lowest listed
  log-probability less one);
* ``"digit"``: a schema-constrained ``{"score": 0..9}`` reply, for servers that return no log-probabilities; the
  margin is the logit of ``(score + 0.5) / 10``.

``mode="auto"`` (default) asks for log-probabilities and, when the first reply carries none, switches to ``"digit"``
for good (noted in the trace). ``P(relevant) = sigmoid(a * margin + b)`` with Platt's ``(a, b)``: ``(1, 0)`` until
:meth:`ServedJudge.calibrate` fits them on labelled pairs (:func:`~retrievekit.core.judge.scorer.fit_platt`, the
local judge's calibration).

The questions are written once, free of I/O, as a step (:meth:`ServedJudge.score_step`: batches of
:class:`~retrievekit.core.llm.calls.ModelCall`), and the drivers send them: :meth:`ServedJudge.score_relevance` with
:func:`~retrievekit.core.llm.drivers.drive`, :meth:`ServedJudge.ascore_relevance` with
:func:`~retrievekit.core.llm.drivers.adrive` (the pairs as tasks of the caller's loop, no thread per request;
cancelled with the awaiting task). Every request goes through the served path of
:class:`~retrievekit.core.judge.served_client.JudgeClient`: control strings defused, the prompt bound, one
:class:`~retrievekit.core.llm.call_policy.CallPolicy` (timeout, retries, typed errors naming the endpoint), at most
``max_concurrency`` pairs in flight, each counted in the trace (calls and tokens: the run's cost; the pairs and scores
reach the run's ``judge`` block through the judge hook). The HTTP client is ``openai`` (``pip install
retrievekit[serve]``), imported when the first request goes.

Examples:
    >>> j = ServedJudge("qwen", "http://127.0.0.1:8080/v1")
    >>> j.mode, j.platt, j.endpoint
    ('auto', (1.0, 0.0), 'http://127.0.0.1:8080/v1 (model qwen)')
    >>> round(digit_margin(9), 3), round(yes_no_margin({"Yes": -0.1, "No": -2.4}), 3)
    (2.944, 2.3)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Generator, Mapping, Sequence
from typing import Any, cast

import numpy as np

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.judge.prompt import CHAT_INSTRUCTION, NO_VARIANTS, YES_VARIANTS
from retrievekit.core.judge.scorer import fit_platt, sigmoid
from retrievekit.core.judge.served_client import JudgeClient
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.drivers import adrive, drive
from retrievekit.core.llm.protocol import JsonResult
from retrievekit.core.llm.served_spec import ServedLLMSpec, parse_served_spec
from retrievekit.core.trace import Trace

__all__ = ["DIGIT_INSTRUCTION", "MODES", "ServedJudge", "digit_margin", "yes_no_margin"]

MODES = ("auto", "logprobs", "digit")
DIGIT_INSTRUCTION = (
    "How relevant is the document to the query? Answer with a score from 0 (not relevant) to 9 (answers the query)."
    '\n\nQuery: {query}\nDocument: {passage}\n\nAnswer {{"score": N}}.'
)
DIGIT_SCHEMA = {
    "title": "score",
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": list(range(10))}},
    "required": ["score"],
    "additionalProperties": False,
}


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def yes_no_margin(top: Mapping[str, float]) -> float:
    """``logsumexp(Yes) - logsumexp(No)`` over the first answer token's ``top_logprobs`` (token -> log-probability).

    A side absent from the list is bounded by the lowest listed log-probability less one.

    Examples:
        >>> round(yes_no_margin({" yes": -0.5, "Yes": -1.5, "No": -1.0}), 3)
        0.813
        >>> yes_no_margin({"Yes": -0.1, "Maybe": -3.0})
        3.9
        >>> yes_no_margin({"Hmm": -0.1})
        0.0
    """
    if not top:
        raise LLMOutputError("the reply's top_logprobs list is empty")
    floor = min(top.values()) - 1.0
    yes = [lp for tok, lp in top.items() if tok.strip().lower() == "yes" or tok in YES_VARIANTS]
    no = [lp for tok, lp in top.items() if tok.strip().lower() == "no" or tok in NO_VARIANTS]
    return (_logsumexp(yes) if yes else floor) - (_logsumexp(no) if no else floor)


def digit_margin(score: int) -> float:
    """The margin of a ``0..9`` score: ``logit((score + 0.5) / 10)``.

    Examples:
        >>> digit_margin(0) < 0 < digit_margin(5)
        True
    """
    p = (int(score) + 0.5) / 10.0
    return math.log(p / (1.0 - p))


class ServedJudge:
    """``score_relevance`` by asking a served LLM Yes or No per pair (a ``RelevanceJudge``; module docstring).

    The questions are :class:`~retrievekit.core.llm.calls.ModelCall` values of one step (:meth:`score_step`), sent by
    the drivers through :attr:`served` (a :class:`~retrievekit.core.judge.served_client.JudgeClient`): sync by
    :meth:`score_relevance`, awaited on the caller's loop by :meth:`ascore_relevance` (no thread per request).

    Args:
        model: the model name the server expects.
        base_url: the OpenAI-compatible base URL (``http://host:port/v1``).
        api_key: sent as the bearer key (local servers take any; ``"-"``).
        mode: ``"auto"`` | ``"logprobs"`` | ``"digit"``.
        policy: timeout and retries of one request.
        max_concurrency: pairs in flight at once.
        max_passage_chars: a candidate is cut to this many characters (about 256 tokens).
        top_logprobs: alternatives asked for the answer token.
        platt: ``(a, b)`` of ``P = sigmoid(a * margin + b)``.
        client: a ready ``openai.OpenAI`` client (tests); built on first use otherwise.

    Examples:
        >>> ServedJudge("m", "http://127.0.0.1:1/v1", mode="guess")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: mode must be one of ('auto', 'logprobs', 'digit'), got 'guess'
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str = "-",
        *,
        mode: str = "auto",
        policy: CallPolicy | None = None,
        max_concurrency: int = 4,
        max_passage_chars: int = 1200,
        top_logprobs: int = 10,
        platt: tuple[float, float] = (1.0, 0.0),
        client: Any = None,
    ) -> None:
        if mode not in MODES:
            raise InvalidInputError(f"mode must be one of {MODES}, got {mode!r}")
        if int(max_concurrency) < 1 or int(max_passage_chars) < 1:
            raise InvalidInputError("max_concurrency and max_passage_chars must be >= 1")
        self.model, self.base_url, self.api_key = str(model), str(base_url).rstrip("/"), api_key
        self.mode = mode
        self.policy = policy or CallPolicy()
        self.max_concurrency = int(max_concurrency)
        self.max_passage_chars = int(max_passage_chars)
        self.top_logprobs = int(top_logprobs)
        self.platt = (float(platt[0]), float(platt[1]))
        self.served = JudgeClient(
            self.model,
            self.base_url,
            api_key,
            policy=self.policy,
            max_concurrency=self.max_concurrency,
            top_logprobs=self.top_logprobs,
            client=client,
        )
        """The served path the questions go through (defusing, limits, call policy, the budget in flight)."""
        self.readout: str | None = None  # how the replies were read: "logprobs" or "digit" (None before any)
        self._lock = threading.Lock()
        self.name = f"served judge {self.model}@{self.base_url}"

    @classmethod
    def from_spec(cls, spec: Any, **kwargs: Any) -> ServedJudge:
        """The judge of ``--llm openai:MODEL@URL`` (its URL, model, key, call policy and concurrency): ``spec`` is the
        string, its :class:`~retrievekit.core.llm.served_spec.ServedLLMSpec`, or the served client built from it.

        Examples:
            >>> ServedJudge.from_spec("openai:qwen@http://127.0.0.1:8080/v1").endpoint
            'http://127.0.0.1:8080/v1 (model qwen)'
            >>> ServedJudge.from_spec("qwen0.5b")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: --judge served needs --llm CLIENT:MODEL@URL (a served LLM), got 'qwen0.5b'
        """
        # a served client built from a spec (``--llm`` as a MethodContext holds it) carries that spec
        parsed = parse_served_spec(spec) if isinstance(spec, str) else getattr(spec, "served_spec", spec)
        if not isinstance(parsed, ServedLLMSpec):
            raise InvalidInputError(f"--judge served needs --llm CLIENT:MODEL@URL (a served LLM), got {spec!r}")
        opts = {"policy": parsed.policy, "max_concurrency": parsed.max_concurrency, **kwargs}
        return cls(parsed.model, parsed.base_url, parsed.api_key, **opts)

    @property
    def endpoint(self) -> str:
        """Where the requests go (named in every error)."""
        return f"{self.base_url} (model {self.model})"

    def __repr__(self) -> str:
        return f"ServedJudge({self.model!r}, {self.base_url!r}, mode={self.mode!r}, platt={self.platt})"

    # ------------------------------------------------------------------ sync and awaited, one step
    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """``P(relevant)`` per candidate, in input order (one request each, ``max_concurrency`` at once)."""
        return drive(self.score_step(query, candidates, trace=trace), self.served, **self._driving(trace))

    async def ascore_relevance(
        self, query: str, candidates: Sequence[str], *, trace: Trace | None = None
    ) -> list[float]:
        """:meth:`score_relevance` awaited: the same step, its requests tasks of the caller's loop through the async
        client (no thread per request); cancelling the awaiting task cancels the requests in flight and sends no
        more."""
        return await adrive(self.score_step(query, candidates, trace=trace), self.served, **self._driving(trace))

    def margins(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """The uncalibrated margins (log-odds) of the pairs, in input order."""
        return drive(self.margins_step(query, candidates, trace=trace), self.served, **self._driving(trace))

    async def amargins(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """:meth:`margins` awaited."""
        return await adrive(self.margins_step(query, candidates, trace=trace), self.served, **self._driving(trace))

    def _driving(self, trace: Trace | None) -> dict[str, Any]:
        return {"trace": trace, "max_concurrency": self.max_concurrency}

    def score_step(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> Step[list[float]]:
        """The judge's work as a step (:mod:`retrievekit.core.llm.calls`), free of I/O: :meth:`margins_step`, then
        Platt's calibration.

        Examples:
            >>> from retrievekit.core.llm.drivers import drive
            >>> from retrievekit.core.judge.served_client import JudgeReply
            >>> class Yes:  # a stand-in server: every question answered Yes at log-probability -0.1, No at -2.4
            ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
            ...         return JudgeReply("Yes", top_logprobs={"Yes": -0.1, "No": -2.4})
            >>> [round(p, 3) for p in drive(ServedJudge("m", "http://x/v1").score_step("q", ["a", "b"]), Yes())]
            [0.909, 0.909]
        """
        margins = yield from self.margins_step(query, candidates, trace=trace)
        a, b = self.platt
        return [float(x) for x in sigmoid(a * np.asarray(margins, dtype=np.float64) + b)]

    def margins_step(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> Step[list[float]]:
        """The margins as a step: one question per pair, side by side (in ``"auto"`` mode the first pair alone
        first: its reply tells whether the server returns log-probabilities); a pair answered without them is asked
        again for a 0-9 score (``"auto"``: from then on for good) or refused (``"logprobs"``)."""
        texts = [" ".join(str(c).split())[: self.max_passage_chars] for c in candidates]
        out = [0.0] * len(texts)
        rest = list(range(len(texts)))
        if self.mode == "auto" and rest:
            yield from self._pairs_step(query, texts, rest[:1], out, trace)
            rest = rest[1:]
        if rest:
            yield from self._pairs_step(query, texts, rest, out, trace)
        return out

    def calibrate(
        self, queries: Sequence[str], passages: Sequence[str], labels: Sequence[int], *, trace: Trace | None = None
    ) -> tuple[float, float]:
        """Fit Platt's ``(a, b)`` on labelled pairs (both labels needed), keep and return them."""
        if not (len(queries) == len(passages) == len(labels)) or not labels:
            raise InvalidInputError("calibrate needs as many queries, passages and labels (and at least one)")
        margins = [m for q, p in zip(queries, passages, strict=True) for m in self.margins(q, [p], trace=trace)]
        self.platt = fit_platt(np.asarray(margins), np.asarray(labels), min_slope=0.01)
        return self.platt

    # ------------------------------------------------------------------ the questions and their replies
    def _pairs_step(
        self, query: str, texts: list[str], which: list[int], out: list[float], trace: Trace | None
    ) -> Generator[list[ModelCall], list[Any], None]:
        """Ask the pairs ``which`` side by side and write their margins into ``out``."""
        digit = self.mode == "digit"
        replies = yield [self._question(query, texts[i], digit=digit) for i in which]
        _count_pairs(trace, replies)
        unread = []
        for i, reply in zip(which, replies, strict=True):
            margin = self._digit_margin(reply) if digit else self._yes_no_margin(reply)
            if margin is None:
                unread.append(i)
            else:
                out[i] = margin
        if not unread:
            return
        if self.mode == "logprobs":
            raise LLMOutputError(f"the LLM at {self.endpoint} returned no log-probabilities (try mode='digit')")
        self._to_digit(trace)
        replies = yield [self._question(query, texts[i], digit=True) for i in unread]
        _count_pairs(trace, replies)
        for i, reply in zip(unread, replies, strict=True):
            out[i] = cast(float, self._digit_margin(reply))

    def _question(self, query: str, passage: str, *, digit: bool) -> ModelCall:
        if digit:
            prompt = DIGIT_INSTRUCTION.format(query=query.strip(), passage=passage)
            return ModelCall.json("served_judge.digit", prompt, DIGIT_SCHEMA, max_tokens=12, retries=0)
        prompt = CHAT_INSTRUCTION.format(query=query.strip(), passage=passage)
        return ModelCall.chat("served_judge.yes_no", prompt, max_tokens=1)

    def _yes_no_margin(self, reply: Any) -> float | None:
        """The margin of a Yes/No reply's log-probabilities; None when it carries none."""
        if isinstance(reply, BaseException):
            raise reply
        top = getattr(reply, "top_logprobs", None)
        if top is None:
            return None
        self.readout = "logprobs"
        return yes_no_margin(top)

    def _digit_margin(self, reply: Any) -> float:
        """The margin of a 0-9 reply: the schema's ``score``, else the reply's first digit (a server that ignored
        the schema)."""
        if isinstance(reply, JsonResult):
            score = int(reply.value["score"])
        elif isinstance(reply, LLMOutputError) and any(c.isdigit() for c in reply.raw):
            score = int(next(c for c in reply.raw if c.isdigit()))
        elif isinstance(reply, LLMOutputError):
            raise LLMOutputError(f"the LLM at {self.endpoint} gave no 0-9 score: {reply.raw[:80]!r}", raw=reply.raw)
        else:
            raise reply if isinstance(reply, BaseException) else LLMOutputError(f"no 0-9 score in {reply!r}")
        self.readout = "digit"
        return digit_margin(score)

    def _to_digit(self, trace: Trace | None) -> None:
        """``"auto"`` found a server without log-probabilities: 0-9 scores from now on, noted."""
        with self._lock:
            self.mode = "digit"
        if trace is not None:
            trace.note("served_judge", f"{self.endpoint} returns no log-probabilities; scoring 0-9 instead")


def _count_pairs(trace: Trace | None, replies: Sequence[Any]) -> None:
    if trace is not None:
        trace.count("served_judge.pairs", len(replies))
