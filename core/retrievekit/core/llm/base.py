"""The one base class of every retrievekit chat model, and the JSON-by-prompt steps the model classes share.

:class:`ChatLLMBase` implements the :class:`~retrievekit.core.llm.protocol.ChatLLM` protocol once: a model class
implements one method, ``_reply`` (one reply of the model), and gets ``complete`` and ``complete_json`` (the schema
in the prompt, parse with repair, validate, retry, and finally
:class:`~retrievekit.core.errors.LLMOutputError` -- the caller decides on the fallback). A model with a JSON path
of its own (constrained decoding, a server's schema mode) overrides ``_json`` and falls back to
``_complete_json_by_repair``. The served models (:class:`~retrievekit.core.llm.served.ServedChatLLM`) implement
``_send`` instead, under their call policy.

The steps, pure functions over the protocol's values:

* :func:`json_instruction` / :func:`build_json_messages` -- the schema put in the prompt;
* :func:`check_json_reply` -- one reply parsed, repaired and validated (:mod:`retrievekit.core.llm.json_output`),
  with its trace notes;
* :func:`retry_messages` -- the prompt of a retry;
* :func:`grown_limit` -- the token limit after a reply was cut;
* :func:`count_json_call` -- the ``json.calls`` counter.

Examples:
    >>> class Scripted(ChatLLMBase):
    ...     def _reply(self, prompt, max_tokens, temperature, trace):
    ...         return Completion('{"ok": true}', 1, 1)
    >>> Scripted().complete_json("Say ok", {"type": "object"}).value
    {'ok': True}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from typing import Any, cast

from pydantic import BaseModel

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.llm.json_output import (
    MAX_ERROR_CHARS,
    ParsedJson,
    parse_json_lenient,
    schema_to_json,
    validate_json,
)
from retrievekit.core.llm.protocol import ChatMessage, Completion, JsonResult, JsonSchemaLike, Prompt, as_messages
from retrievekit.core.llm.repetition import repeats_itself
from retrievekit.core.trace import Trace

__all__ = [
    "LENGTH_GROWTH_CAP",
    "ChatLLMBase",
    "build_json_messages",
    "check_json_reply",
    "check_retries",
    "count_json_call",
    "grown_limit",
    "json_attempts",
    "json_instruction",
    "retry_messages",
    "run_attempts",
]


def json_instruction(schema: dict[str, Any]) -> str:
    """The instruction appended to a prompt to ask for JSON matching ``schema``.

    Examples:
        >>> "JSON schema" in json_instruction({"type": "object"})
        True
    """
    return (
        "Reply with a single JSON value that conforms to this JSON schema, and nothing else "
        "(no explanations, no code fences):\n" + json.dumps(schema, ensure_ascii=False)
    )


def build_json_messages(prompt: str | Sequence[ChatMessage], schema: dict[str, Any]) -> list[ChatMessage]:
    """Append the JSON instruction to the last user turn (or add a user turn when the last one is not a user's).

    Examples:
        >>> msgs = build_json_messages("Rate this.", {"type": "integer"})
        >>> len(msgs), msgs[0].content.startswith("Rate this.")
        (1, True)
    """
    msgs = as_messages(prompt)
    instruction = json_instruction(schema)
    if msgs[-1].role == "user":
        return [*msgs[:-1], ChatMessage("user", msgs[-1].content.rstrip() + "\n\n" + instruction)]
    return [*msgs, ChatMessage("user", instruction)]


class ChatLLMBase:
    """Base class for chat LLMs: subclasses implement ``complete``; ``complete_json`` comes for free.

    ``complete`` must record its call with ``trace.record_llm_call`` when a trace is given.
    ``complete_json`` asks for JSON with the schema in the prompt, parses with repair, validates with pydantic
    (or ``jsonschema`` for a dict schema), retries up to ``retries`` times with a short note of the error (the
    failed reply is not sent back, so retries do not grow the prompt),
    and raises :class:`~retrievekit.core.errors.LLMOutputError` when every attempt failed. Repairs are noted as
    ``"json_repair"`` events, retries as ``"json_retry"``, the final failure as ``"json_failed"``.

    A model class implements ``_reply(prompt, max_tokens, temperature, trace)`` (or overrides ``complete``) and, for
    a JSON path of its own (constrained decoding, a server's schema mode), ``_json(prompt, schema, max_tokens, trace,
    retries)``; the public ``complete`` / ``complete_json`` are these two, with the protocol's signatures.

    Examples:
        >>> from retrievekit.core.trace import Trace
        >>> class Scripted(ChatLLMBase):
        ...     def __init__(self, replies):
        ...         self.replies = list(replies)
        ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        ...         text = self.replies.pop(0)
        ...         self._record(trace, 10, 5)
        ...         return Completion(text, 10, 5)
        >>> t = Trace()
        >>> r = Scripted(["oops", "{'n': 3,}"]).complete_json("Count.", {"type": "object"}, trace=t)
        >>> r.value, r.repaired, r.attempts, t.llm_calls, [e.kind for e in t.events]
        ({'n': 3}, True, 2, 2, ['json_retry', 'json_repair'])
    """

    def complete(
        self,
        prompt: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        trace: Trace | None = None,
    ) -> Completion:
        """Return the model's reply to ``prompt``."""
        return self._reply(prompt, max_tokens, temperature, trace)

    def _reply(self, prompt: Prompt, max_tokens: int, temperature: float, trace: Trace | None) -> Completion:
        """One reply of the model (what a subclass implements)."""
        raise NotImplementedError

    @staticmethod
    def _record(trace: Trace | None, prompt_tokens: int, completion_tokens: int) -> None:
        """Record one LLM call in ``trace`` when given."""
        if trace is not None:
            trace.record_llm_call(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    def complete_json(
        self,
        prompt: str | Sequence[ChatMessage],
        schema: type[BaseModel] | dict[str, Any],
        *,
        max_tokens: int = 256,
        trace: Trace | None = None,
        retries: int = 2,
    ) -> JsonResult:
        """Ask for JSON matching ``schema``; parse with repair, validate, retry; raise ``LLMOutputError`` at the end.

        Examples:
            >>> class Bad(ChatLLMBase):
            ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
            ...         return Completion("no")
            >>> Bad().complete_json("x", {"type": "object"}, retries=0)
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.LLMOutputError: LLM reply did not match the schema after 1 attempt(s): ...
        """
        return self._json(prompt, schema, max_tokens, trace, check_retries(retries))

    def _json(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> JsonResult:
        """JSON by prompt and repair (a subclass with a JSON path of its own overrides this)."""
        return self._complete_json_by_repair(prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries)

    def _complete_json_by_repair(
        self,
        prompt: str | Sequence[ChatMessage],
        schema: type[BaseModel] | dict[str, Any],
        *,
        max_tokens: int,
        trace: Trace | None,
        retries: int,
        counted: bool = False,
    ) -> JsonResult:
        if retries < 0:
            raise InvalidInputError(f"retries must be >= 0, got {retries}")
        messages = build_json_messages(prompt, schema_to_json(schema))
        if not counted:  # a JSON path that fell back here has counted its call already
            count_json_call(trace)
        attempts = json_attempts(messages, schema, max_tokens=max_tokens, retries=retries, trace=trace)

        def send(sent: list[ChatMessage], limit: int) -> Completion:
            return self.complete(sent, max_tokens=limit, temperature=0.0, trace=trace)

        return run_attempts(attempts, send)


JsonAttempts = Generator[tuple[list[ChatMessage], int], Completion, JsonResult]
"""The JSON attempt loop as values: yields ``(messages, token limit)`` of each attempt, receives its reply, returns
the :class:`~retrievekit.core.llm.protocol.JsonResult` or raises ``LLMOutputError``."""


def json_attempts(
    messages: list[ChatMessage],
    schema: JsonSchemaLike,
    *,
    max_tokens: int,
    retries: int,
    trace: Trace | None,
    mode: str = "prompt",
) -> JsonAttempts:
    """The one JSON attempt loop of every chat model, sync or async, local or served: ask, parse with repair,
    validate; retry with a short note (the prompt never grows); a reply cut at its limit is asked again with the
    limit grown (:func:`grown_limit`); ``LLMOutputError`` when no reply validates after ``retries`` retries.

    Examples:
        >>> loop = json_attempts([ChatMessage("user", "Rate.")], {"type": "object"}, max_tokens=8, retries=1, trace=None)
        >>> next(loop)[1]
        8
        >>> run_attempts(loop, lambda msgs, limit: Completion('{"a": 1}'), first=([], 8)).value
        {'a': 1}
    """
    attempts, limit = retries + 1, int(max_tokens)
    last_error, last_raw = "", ""
    for attempt in range(1, attempts + 1):
        sent = messages if attempt == 1 else retry_messages(messages, last_error)
        done = yield sent, limit
        checked = check_json_reply(done.text, schema, trace, attempt=attempt, attempts=attempts)
        if not isinstance(checked, str):
            return JsonResult(value=checked.value, raw=done.text, repaired=bool(checked.repairs), attempts=attempt)
        last_error, last_raw = checked, done.text
        if done.finish_reason == "length":  # cut off: the same limit would cut it again
            limit = grown_limit(limit, max_tokens, done.text)
    how = f" ({mode})" if mode != "prompt" else ""
    raise LLMOutputError(
        f"LLM reply did not match the schema after {attempts} attempt(s){how}: {last_error}", raw=last_raw
    )


def run_attempts(
    attempts: JsonAttempts,
    send: Callable[[list[ChatMessage], int], Completion],
    *,
    first: tuple[list[ChatMessage], int] | None = None,
) -> JsonResult:
    """Drive :func:`json_attempts` with ``send(messages, limit)`` (``first``: the attempt already taken from it).

    Examples:
        >>> loop = json_attempts([ChatMessage("user", "x")], {"type": "object"}, max_tokens=4, retries=0, trace=None)
        >>> run_attempts(loop, lambda msgs, limit: Completion("{}")).value
        {}
    """
    ask = first if first is not None else next(attempts)
    while True:
        try:
            ask = attempts.send(send(*ask))
        except StopIteration as done:
            return cast(JsonResult, done.value)


LENGTH_GROWTH_CAP = 4
"""A reply cut at its token limit is asked again with the limit doubled, up to this many times the call's own."""


def grown_limit(limit: int, max_tokens: int, reply: str = "") -> int:
    """The token limit to ask again with after a JSON reply was cut at ``limit``: doubled (the same limit would cut
    it again), at most :data:`LENGTH_GROWTH_CAP` times the call's own ``max_tokens``; ``limit`` itself when the cut
    ``reply`` was running on, repeating one unit or counting up (:func:`~retrievekit.core.llm.repetition.repeats_itself`:
    a larger limit would only let it run on longer).

    Examples:
        >>> grown_limit(64, 64), grown_limit(128, 64), grown_limit(256, 64), grown_limit(64, 64, "[" + "0, " * 30)
        (128, 256, 256, 64)
    """
    return int(limit) if repeats_itself(reply) else min(int(limit) * 2, int(max_tokens) * LENGTH_GROWTH_CAP)


def check_retries(retries: object) -> int:
    """``retries`` of a ``complete_json`` call (sync or awaited) when it is an int >= 0, else ``InvalidInputError``.

    Examples:
        >>> check_retries(2)
        2
        >>> check_retries(True)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: retries must be an int >= 0, got True
    """
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidInputError(f"retries must be an int >= 0, got {retries!r}")
    return retries


def count_json_call(trace: Trace | None) -> None:
    """Count one ``complete_json`` call (``json.calls``) in ``trace``.

    Examples:
        >>> t = Trace(); count_json_call(t); t.counters
        {'json.calls': 1}
    """
    if trace is not None:
        trace.count("json.calls")


def check_json_reply(
    raw: str, schema: type[BaseModel] | dict[str, Any], trace: Trace | None, *, attempt: int, attempts: int
) -> ParsedJson | str:
    """Parse (with repair) and validate one JSON reply: the validated :class:`ParsedJson`, or the error text.

    Counts ``json.replies`` and ``json.invalid`` in ``trace`` and notes ``json_repair`` / ``json_retry`` /
    ``json_failed`` (the last when ``attempt == attempts``; ``json.failed`` is counted then).

    Examples:
        >>> t = Trace()
        >>> check_json_reply('{"a": 1,}', {"type": "object"}, t, attempt=1, attempts=2).value
        {'a': 1}
        >>> check_json_reply("no", {"type": "object"}, t, attempt=2, attempts=2)
        'reply contains no JSON object or array'
        >>> t.counters, [e.kind for e in t.events]
        ({'json.replies': 2, 'json.invalid': 1, 'json.failed': 1}, ['json_repair', 'json_failed'])
    """
    if trace is not None:
        trace.count("json.replies")
    try:
        parsed = parse_json_lenient(raw)
        value = validate_json(parsed.value, schema)
    except (LLMOutputError, ValueError) as e:
        error = str(e)[:MAX_ERROR_CHARS]
        if trace is not None:
            trace.count("json.invalid")
            kind = "json_retry" if attempt < attempts else "json_failed"
            if kind == "json_failed":
                trace.count("json.failed")
            trace.note(kind, f"attempt {attempt}/{attempts}: {error}", raw=raw[:MAX_ERROR_CHARS])
        return error
    if parsed.repairs and trace is not None:
        trace.note("json_repair", "repaired LLM JSON: " + ", ".join(parsed.repairs), attempt=attempt)
    return ParsedJson(value, parsed.repairs)


_RETRY_ERROR_CHARS = 200


def retry_messages(messages: Sequence[ChatMessage], error: str) -> list[ChatMessage]:
    """The messages of a retry: the first attempt's messages with one short note on the last user turn.

    The failed reply is not sent back, so a retry's prompt is as long as the first one plus the note, however many
    retries there are.

    Examples:
        >>> first = [ChatMessage("user", "Rate this.")]
        >>> retry_messages(first, "missing 'score'")[-1].content.splitlines()[-1]
        "Your previous reply was not valid (missing 'score'). Reply with only the JSON value, nothing else."
    """
    note = f"Your previous reply was not valid ({error[:_RETRY_ERROR_CHARS]}). Reply with only the JSON value, nothing else."
    msgs = list(messages)
    if msgs and msgs[-1].role == "user":
        return [*msgs[:-1], ChatMessage("user", msgs[-1].content.rstrip() + "\n\n" + note)]
    return [*msgs, ChatMessage("user", note)]
