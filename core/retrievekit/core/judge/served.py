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
local judge's calibration). The pairs go side by side (``max_concurrency``), each request bounded by a
:class:`~retrievekit.core.llm.call_policy.CallPolicy` (timeout, retries, typed errors naming the endpoint) and counted
in the trace (calls and tokens: the run's cost; the pairs and scores reach the run's ``judge`` block through the
judge hook). The HTTP client is ``openai`` (``pip install retrievekit[serve]``), imported when the first request goes.

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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError, LLMOutputError, MissingDependencyError
from retrievekit.core.judge.prompt import CHAT_INSTRUCTION, NO_VARIANTS, YES_VARIANTS
from retrievekit.core.judge.scorer import fit_platt, sigmoid
from retrievekit.core.llm.call_policy import CallPolicy, call_with_policy
from retrievekit.core.llm.concurrency import map_calls
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.served_spec import ServedLLMSpec, parse_served_spec
from retrievekit.core.llm.untrusted import defuse_control_tokens
from retrievekit.core.trace import Trace

__all__ = ["DIGIT_INSTRUCTION", "MODES", "ServedJudge", "digit_margin", "yes_no_margin"]

MODES = ("auto", "logprobs", "digit")
DIGIT_INSTRUCTION = (
    "How relevant is the document to the query? Answer with a score from 0 (not relevant) to 9 (answers the query)."
    '\n\nQuery: {query}\nDocument: {passage}\n\nAnswer {{"score": N}}.'
)
DIGIT_SCHEMA = {
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
        self._client = client
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

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """``P(relevant)`` per candidate, in input order (one request each, ``max_concurrency`` at once)."""
        margins = self.margins(query, candidates, trace=trace)
        a, b = self.platt
        return [float(x) for x in sigmoid(a * np.asarray(margins, dtype=np.float64) + b)]

    def margins(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """The uncalibrated margins (log-odds) of the pairs, in input order."""
        texts = list(candidates)
        if not texts:
            return []
        if self.mode == "auto":  # the first reply tells whether this server returns log-probabilities
            head = [self._margin(query, texts[0], trace)]
            texts = texts[1:]
        else:
            head = []
        rest = map_calls(
            lambda text, sub: self._margin(query, text, sub),
            texts,
            llm=self,
            max_concurrency=self.max_concurrency,
            trace=trace,
        )
        return head + rest

    def calibrate(
        self, queries: Sequence[str], passages: Sequence[str], labels: Sequence[int], *, trace: Trace | None = None
    ) -> tuple[float, float]:
        """Fit Platt's ``(a, b)`` on labelled pairs (both labels needed), keep and return them."""
        if not (len(queries) == len(passages) == len(labels)) or not labels:
            raise InvalidInputError("calibrate needs as many queries, passages and labels (and at least one)")
        margins = [m for q, p in zip(queries, passages, strict=True) for m in self.margins(q, [p], trace=trace)]
        self.platt = fit_platt(np.asarray(margins), np.asarray(labels), min_slope=0.01)
        return self.platt

    # ------------------------------------------------------------------ one request
    def _margin(self, query: str, passage: str, trace: Trace | None) -> float:
        text = " ".join(passage.split())[: self.max_passage_chars]
        if self.mode != "digit":
            top = self._ask_logprobs(query, text, trace)
            if top is not None:
                self.readout = "logprobs"
                return yes_no_margin(top)
            if self.mode == "logprobs":
                raise LLMOutputError(f"the LLM at {self.endpoint} returned no log-probabilities (try mode='digit')")
            with self._lock:
                self.mode = "digit"
            if trace is not None:
                trace.note("served_judge", f"{self.endpoint} returns no log-probabilities; scoring 0-9 instead")
        self.readout = "digit"
        return digit_margin(self._ask_digit(query, text, trace))

    def _client_or_new(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as e:
                    raise MissingDependencyError("openai", "pip install retrievekit[serve]", str(e)) from e
                self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "-", max_retries=0)
            return self._client

    def _send(self, trace: Trace | None, *, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        """One request (``messages`` plus ``kwargs``) under the call policy: the one place the request body is built,
        so every text in it has its chat control strings broken first (``<|im_start|>`` in a query or a candidate
        never reaches the server's template as one: :func:`~retrievekit.core.llm.untrusted.defuse_control_tokens`)."""
        client = self._client_or_new()
        messages = [{**m, "content": defuse_control_tokens(m["content"])} for m in messages]
        got: list[Any] = []

        def send(timeout: float) -> Completion:
            reply = client.chat.completions.create(
                model=self.model, messages=messages, temperature=0.0, timeout=timeout, **kwargs
            )
            choice = reply.choices[0]
            usage = getattr(reply, "usage", None)
            got.append(choice)
            return Completion(
                choice.message.content or "",
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
            )

        call_with_policy(send, self.policy, endpoint=self.endpoint, trace=trace)
        if trace is not None:
            trace.count("served_judge.pairs")
        return got[-1]

    def _ask_logprobs(self, query: str, passage: str, trace: Trace | None) -> dict[str, float] | None:
        content = CHAT_INSTRUCTION.format(query=query.strip(), passage=passage)
        choice = self._send(
            trace,
            messages=[{"role": "user", "content": content}],
            max_tokens=1,
            logprobs=True,
            top_logprobs=self.top_logprobs,
        )
        tokens = getattr(getattr(choice, "logprobs", None), "content", None) or []
        if not tokens or not getattr(tokens[0], "top_logprobs", None):
            return None
        out: dict[str, float] = {}
        for alt in tokens[0].top_logprobs:
            out[str(alt.token)] = max(out.get(str(alt.token), -math.inf), float(alt.logprob))
        return out

    def _ask_digit(self, query: str, passage: str, trace: Trace | None) -> int:
        content = DIGIT_INSTRUCTION.format(query=query.strip(), passage=passage)
        schema = {"type": "json_schema", "json_schema": {"name": "score", "schema": DIGIT_SCHEMA, "strict": True}}
        choice = self._send(
            trace, messages=[{"role": "user", "content": content}], max_tokens=12, response_format=schema
        )
        text = choice.message.content or ""
        digits = [c for c in text if c.isdigit()]
        if not digits:
            raise LLMOutputError(f"the LLM at {self.endpoint} gave no 0-9 score: {text[:80]!r}")
        return int(digits[0])
