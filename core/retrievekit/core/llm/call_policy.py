"""How one request to a served LLM is bounded, retried and turned into a typed error.

A served LLM (vLLM, Ollama, llama.cpp's server, a hosted API) fails in a few ways, and each gets one answer:

* **no reply in time** -- :class:`~retrievekit.core.errors.LLMTimeoutError` at once, never retried: the server may
  still be computing the request, and a second copy would only queue behind it;
* **no connection, HTTP 429 or 5xx** -- retried up to ``max_retries`` times with exponential backoff (a
  ``Retry-After`` header is honoured up to ``max_backoff``), then :class:`~retrievekit.core.errors.LLMUnavailableError`;
* **another HTTP error** (400, 401, 404...) -- :class:`~retrievekit.core.errors.LLMUnavailableError` at once, with
  its ``status``;
* **a reply that cannot be read** (a body cut mid-JSON, ``"choices": []``) --
  :class:`~retrievekit.core.errors.LLMOutputError`, which the methods turn into a recorded fallback.

Every request is counted in the trace (``llm_calls``; failed ones also under ``llm.failed_requests``), retries under
``llm.retries`` with an ``llm_retry`` note, timeouts under ``llm.timeouts``. The errors name the endpoint.

Client libraries are told to send each request once (retrievekit's adapters turn their own retries off) and are
given the per-request timeout; a watchdog thread ends the wait ``deadline_grace`` seconds later for a client that
ignores it. Errors are recognised by duck typing (``status_code``, the exception's class names), so this module
imports no HTTP client.

The drivers (:mod:`retrievekit.core.llm.drivers`) send each request of a served call's exchange
(:mod:`retrievekit.core.llm.exchange`); this module is what a failed one leads to (:func:`failed_request`).

Examples:
    >>> from retrievekit.core.trace import Trace
    >>> t = Trace()
    >>> failed_request(ConnectionRefusedError("refused"), 1, 3, CallPolicy(backoff=0.5), endpoint="e", trace=t)
    0.5
    >>> t.llm_calls, t.counters["llm.retries"], t.counters["llm.failed_requests"]
    (1, 1, 1)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

from retrievekit.core.errors import (
    InvalidInputError,
    LLMOutputError,
    LLMTimeoutError,
    LLMUnavailableError,
    RetrieveKitError,
)
from retrievekit.core.trace import Trace

__all__ = ["CallPolicy", "FailureKind", "classify_failure", "failed_request"]

FailureKind = Literal["timeout", "connection", "retryable_status", "refused", "malformed", "other"]

_TIMEOUT_NAMES = ("Timeout", "TimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout", "APITimeoutError")
_CONNECTION_NAMES = frozenset(
    {
        "APIConnectionError",
        "ConnectError",
        "NetworkError",
        "RemoteProtocolError",
        "ProtocolError",
        "ServerDisconnectedError",
        "ClientConnectorError",
        "ConnectionError",
    }
)
_MALFORMED_TYPES = (json.JSONDecodeError, IndexError, KeyError, TypeError, AttributeError, ValueError)


@dataclass(frozen=True)
class CallPolicy:
    """Limits of one request to a served LLM (all retrievekit's own; the client library's retries are turned off).

    Attributes:
        timeout: seconds one request may take (ours: 60, the usual client default; a CPU server answering long
            prompts may need more, a GPU server less).
        max_retries: further requests after a connection error, HTTP 429 or 5xx (ours: 2, the OpenAI SDK's
            default). A timeout is never retried.
        backoff: seconds before the first retry, doubled for each next one (ours: 0.5).
        max_backoff: the longest wait between retries, ``Retry-After`` included (ours: 8).
        deadline_grace: seconds past ``timeout`` after which the sync path's watchdog stops waiting for a client that
            ignores its timeout (ours: 5). The async path needs none: its ``asyncio`` deadline is ``timeout`` itself.

    Examples:
        >>> CallPolicy().timeout, CallPolicy(timeout=5).max_retries
        (60.0, 2)
        >>> CallPolicy(timeout=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: CallPolicy.timeout must be > 0, got 0
    """

    timeout: float = 60.0
    max_retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    deadline_grace: float = 5.0

    def __post_init__(self) -> None:
        if not float(self.timeout) > 0:
            raise InvalidInputError(f"CallPolicy.timeout must be > 0, got {self.timeout}")
        if int(self.max_retries) < 0 or float(self.backoff) < 0 or float(self.max_backoff) < 0:
            raise InvalidInputError("CallPolicy.max_retries, backoff and max_backoff must be >= 0")
        if float(self.deadline_grace) < 0:
            raise InvalidInputError(f"CallPolicy.deadline_grace must be >= 0, got {self.deadline_grace}")
        object.__setattr__(self, "timeout", float(self.timeout))

    @classmethod
    def from_client(cls, timeout: object = None, max_retries: object = None) -> CallPolicy:
        """The policy a client's own settings imply: its ``timeout`` (seconds; anything else, such as an
        ``httpx.Timeout`` or None, gives the default) and ``max_retries`` (None gives the default).

        Examples:
            >>> CallPolicy.from_client(10, 1)
            CallPolicy(timeout=10.0, max_retries=1, backoff=0.5, max_backoff=8.0, deadline_grace=5.0)
            >>> CallPolicy.from_client(None, None) == CallPolicy()
            True
        """
        seconds = float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else cls.timeout
        retries = max_retries if isinstance(max_retries, int) and not isinstance(max_retries, bool) else cls.max_retries
        return cls(timeout=seconds, max_retries=retries)

    def wait_before(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): the server's ``Retry-After`` when given, else
        ``backoff * 2 ** (retry - 1)``; never more than ``max_backoff`` (a ``Retry-After`` that is not a finite
        number >= 0 is ignored).

        Examples:
            >>> p = CallPolicy(backoff=0.5, max_backoff=8)
            >>> [p.wait_before(r) for r in (1, 2, 3)], p.wait_before(1, retry_after=30.0)
            ([0.5, 1.0, 2.0], 8.0)
            >>> p.wait_before(1, retry_after=float("nan")), p.wait_before(2, retry_after=-3.0)
            (0.5, 1.0)
        """
        wait = self.backoff * 2 ** (retry - 1)
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            wait = retry_after
        return float(min(max(wait, 0.0), self.max_backoff))


def _class_names(exc: BaseException) -> list[str]:
    return [c.__name__ for c in type(exc).__mro__]


def _status_of(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _retry_after(exc: BaseException) -> float | None:
    """The ``Retry-After`` seconds of a failed request; None when absent or not a finite number >= 0 (``nan``,
    ``-1``, an HTTP date: the backoff applies)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        value = float(headers.get("retry-after")) if headers is not None else math.nan
    except (TypeError, ValueError, AttributeError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def classify_failure(exc: BaseException) -> tuple[FailureKind, int | None]:
    """What a client library's exception means: ``(kind, HTTP status or None)``.

    Examples:
        >>> classify_failure(TimeoutError("read timed out"))
        ('timeout', None)
        >>> classify_failure(ConnectionRefusedError("refused"))
        ('connection', None)
        >>> class APIStatusError(Exception):
        ...     status_code = 503
        >>> classify_failure(APIStatusError("unavailable"))
        ('retryable_status', 503)
        >>> classify_failure(IndexError("list index out of range"))  # "choices": []
        ('malformed', None)
    """
    if isinstance(exc, LLMOutputError):
        return "malformed", None
    if isinstance(exc, RetrieveKitError):  # already typed by retrievekit: passed on as it is
        return "other", None
    names = _class_names(exc)
    if isinstance(exc, TimeoutError) or any(n.endswith(_TIMEOUT_NAMES) for n in names):
        return "timeout", None
    status = _status_of(exc)
    if status is not None and status >= 400:
        if status == 429 or status >= 500:
            return "retryable_status", status
        return "refused", status
    if isinstance(exc, ConnectionError) or _CONNECTION_NAMES.intersection(names):
        return "connection", None
    if isinstance(exc, _MALFORMED_TYPES) or "APIResponseValidationError" in names or "ValidationError" in names:
        return "malformed", status
    return "other", status


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def failed_request(
    e: Exception, attempt: int, attempts: int, policy: CallPolicy, *, endpoint: str, trace: Trace | None
) -> float:
    """What a failed request leads to, the same for both drivers: the typed error raised (or ``e`` itself when it is
    none of the client's failures), or the seconds to wait before the next attempt (counted as a retry).

    Examples:
        >>> failed_request(ConnectionRefusedError("no"), 1, 3, CallPolicy(backoff=0.25), endpoint="e", trace=None)
        0.25
    """
    kind, status = classify_failure(e)
    if kind == "other":
        raise e
    _record_failure(trace, kind)
    if kind == "timeout":
        raise LLMTimeoutError(
            f"the LLM at {endpoint} sent no reply within {policy.timeout:g} s (not retried: the server may "
            "still be computing it); raise the timeout or lower the load",
            endpoint=endpoint,
            timeout=policy.timeout,
            attempts=attempt,
        ) from e
    if kind == "malformed":
        if isinstance(e, LLMOutputError):
            raise e
        raise LLMOutputError(f"the reply from the LLM at {endpoint} could not be read ({_short(e)})") from e
    if kind == "refused" or attempt == attempts:
        said = (
            f"refused the request (HTTP {status}): {str(e)[:300]}"
            if kind == "refused"
            else (f"did not answer after {attempt} request(s): {_short(e)}")
        )
        raise LLMUnavailableError(
            f"the LLM at {endpoint} {said}", endpoint=endpoint, status=status, attempts=attempt
        ) from e
    wait = policy.wait_before(attempt, _retry_after(e))
    if trace is not None:
        trace.count("llm.retries")
        trace.note(
            "llm_retry", f"request {attempt}/{attempts} to {endpoint} failed ({_short(e)}); retrying in {wait:g} s"
        )
    return wait


def _record_failure(trace: Trace | None, kind: FailureKind) -> None:
    if trace is None:
        return
    trace.record_llm_call(0, 0)
    trace.count("llm.failed_requests")
    if kind == "timeout":
        trace.count("llm.timeouts")
