"""A served OpenAI-compatible embeddings endpoint (``POST {base_url}/embeddings``) as an
:class:`~retrievekit.core.index.embeddings.Embedder`: vLLM, Ollama, llama.cpp's server (``--embedding``), TEI,
a hosted API.

Written on the command line ``openai:MODEL@URL`` (``--embedder openai:nomic-embed@http://127.0.0.1:8080/v1``).
A text list is sent ``batch_size`` texts a request, up to ``max_concurrency`` requests in flight at once (the
server's slots; ours: 4, as a served LLM's), from all threads and event loops together
(:class:`~retrievekit.core.llm.slots.SharedSlots`): a sync :meth:`ServedEmbedder.embed_documents` sends its batches
on that many threads, so a tree build's leaf vectors keep every slot busy.
Each request goes through the project's :class:`~retrievekit.core.llm.call_policy.CallPolicy`: a per-request
timeout (a watchdog ends the wait ``deadline_grace`` seconds later), bounded retries with backoff after a refused
connection, HTTP 429 or 5xx, and typed errors that name the endpoint:
:class:`~retrievekit.core.errors.EmbedderTimeoutError` (never retried) and
:class:`~retrievekit.core.errors.EmbedderUnavailableError`. It uses only the standard library's HTTP client. The API
key is ``OPENAI_API_KEY`` (``"-"`` when unset: local servers take any key).

Awaited (:meth:`ServedEmbedder.aembed_documents`, :meth:`ServedEmbedder.aembed_query`: what the async model driver and
an index's awaited search use), the same requests go through an async client of the running event loop
(:class:`~retrievekit.core.llm.async_http.JsonPoster`, over ``aiohttp``; one per loop, closed with it:
:class:`~retrievekit.core.llm.per_loop.PerLoop`) under the same policy, its deadline ``asyncio.timeout``: no thread
per request, and a cancelled caller closes its requests' connections and sends nothing more.

The server is not trusted: a reply larger than ``max_reply_bytes`` (:data:`MAX_REPLY_BYTES`, 64 MiB, by default) is
refused before it is read whole, and its vectors must be one per text, matched to the texts by their ``index``
fields, finite, not all zeros and of one dimension for the embedder's life (the first reply's, or ``dim=``)
(:mod:`~retrievekit.core.index.embedder_rows`). A reply that breaks any of these is an
:class:`~retrievekit.core.errors.EmbedderUnavailableError` naming the endpoint, not retried.

Examples:
    >>> e = ServedEmbedder("nomic-embed", "http://127.0.0.1:8080/v1/", dim=768)
    >>> e.name, e.dim, e.endpoint
    ('nomic-embed', 768, 'http://127.0.0.1:8080/v1/embeddings (model nomic-embed)')
    >>> parse_embedder_spec("openai:nomic-embed@http://127.0.0.1:8080/v1").base_url
    'http://127.0.0.1:8080/v1'
    >>> parse_embedder_spec("all-MiniLM-L6-v2") is None
    True
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from retrievekit.core.errors import EmbedderTimeoutError, EmbedderUnavailableError, InvalidInputError
from retrievekit.core.index.embedder_rows import checked_rows, ordered_embeddings
from retrievekit.core.llm.async_http import HTTPStatusError, JsonPoster, ReplyTooLargeError
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.per_loop import PerLoop, outlived_its_loop
from retrievekit.core.llm.served_spec import split_served_spec
from retrievekit.core.llm.slots import SharedSlots
from retrievekit.core.threads import run_with_deadline

__all__ = ["MAX_REPLY_BYTES", "ServedEmbedder", "parse_embedder_spec"]

MAX_REPLY_BYTES = 64 * 1024 * 1024
"""The largest reply body a :class:`ServedEmbedder` reads by default (64 MiB: a batch of 64 texts of 8,192-d vectors
written as JSON floats is about 12 MB); a larger one is refused, unread beyond the cap."""

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def parse_embedder_spec(text: str, *, policy: CallPolicy | None = None) -> ServedEmbedder | None:
    """The :class:`ServedEmbedder` ``text`` names (``openai:MODEL@URL``), or None when ``text`` is no such spec.

    Examples:
        >>> parse_embedder_spec("openai:m@ftp://x")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a served embedding model is written openai:MODEL@URL with an http(s) URL, e.g. openai:nomic-embed@http://127.0.0.1:8080/v1; got 'openai:m@ftp://x'
    """
    if not text.startswith("openai:") or "@" not in text:
        return None
    _, model, url = split_served_spec(
        text,
        what="a served embedding model",
        form="openai:MODEL@URL",
        example="openai:nomic-embed@http://127.0.0.1:8080/v1",
    )
    return ServedEmbedder(model, url, policy=policy)


class ServedEmbedder:
    """An OpenAI-compatible embeddings endpoint: ``name`` is the model, vectors are L2-normalised float32.

    Args:
        model: the model name the server expects (also the name an index records).
        base_url: the OpenAI-compatible base URL (``http://host:port/v1``).
        api_key: sent as a bearer token (default: ``OPENAI_API_KEY``, else ``"-"``).
        policy: timeout and retries of one request (default: :class:`CallPolicy`'s).
        batch_size: texts per request.
        max_concurrency: requests in flight at once, from every thread and event loop together (the server's slots;
            ours: 4, as :class:`~retrievekit.core.llm.served.ServedChatLLM`'s).
        dim: the vector size when known; otherwise the first reply fixes it (``dim`` asks with one probe request).
        max_reply_bytes: the largest reply body read (:data:`MAX_REPLY_BYTES` by default).

    Examples:
        >>> e = ServedEmbedder("m", "http://127.0.0.1:8080/v1", policy=CallPolicy(timeout=5, max_retries=1))
        >>> e.embed_query("hello").shape  # needs a server at that URL  # doctest: +SKIP
        (768,)
        >>> ServedEmbedder("m", "127.0.0.1:8080")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: ServedEmbedder needs a model name and an http(s) base URL; got 'm', '127.0.0.1:8080'
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        policy: CallPolicy | None = None,
        batch_size: int = 64,
        max_concurrency: int = 4,
        dim: int | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        if not model or not re.match(r"^https?://", base_url or ""):
            raise InvalidInputError(
                f"ServedEmbedder needs a model name and an http(s) base URL; got {model!r}, {base_url!r}"
            )
        if isinstance(max_concurrency, bool) or int(max_concurrency) < 1:
            raise InvalidInputError(f"max_concurrency must be >= 1, got {max_concurrency!r}")
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "-"
        self.policy = policy if policy is not None else CallPolicy()
        self.batch_size = max(1, int(batch_size))
        self.max_concurrency = int(max_concurrency)
        self.slots = SharedSlots(self.max_concurrency)  # one budget for every thread and event loop
        self._dim = int(dim) if dim is not None else None
        self.max_reply_bytes = max(1, int(max_reply_bytes))
        self._clients: PerLoop[JsonPoster] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """A copy (pickled, deep-copied) takes no event loop's clients and no requests in flight."""
        return {**self.__dict__, "_clients": None, "slots": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy gets a budget of its own, all its slots free (a copy made before ``max_concurrency``: 4)."""
        self.__dict__.update({"max_concurrency": 4, **state})
        self.slots = SharedSlots(self.max_concurrency)

    @property
    def endpoint(self) -> str:
        """The URL requests go to, and the model (as errors name it)."""
        return f"{self.base_url}/embeddings (model {self.name})"

    @property
    def dim(self) -> int:
        """The vector size (asked of the server once, with a one-text request, when not given)."""
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed_documents(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        """Embed texts, :attr:`batch_size` per request, up to :attr:`max_concurrency` requests side by side once the
        first reply fixed the dimension: shape ``(len(texts), dim)``. The first failure (in batch order) is raised
        once the requests in flight have ended; batches not sent yet are not sent."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        first = [self._request(batches[0])] if self._dim is None else []
        return np.concatenate(first + self._side_by_side(batches[len(first) :]), axis=0)

    def _side_by_side(self, batches: list[list[str]]) -> list[np.ndarray]:
        """The rows of each batch, in order, its requests on up to :attr:`max_concurrency` threads."""
        workers = min(self.max_concurrency, len(batches))
        if workers <= 1:
            return [self._request(batch) for batch in batches]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="retrievekit-embed") as pool:
            futures: list[Future[np.ndarray]] = [pool.submit(self._request, batch) for batch in batches]
            for i, f in enumerate(futures):
                error = f.exception()
                if error is not None:
                    for later in futures[i + 1 :]:
                        later.cancel()  # not started yet: never sent
                    raise error
            return [f.result() for f in futures]

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: shape ``(dim,)``."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        """:meth:`embed_documents` awaited on the running loop (module docstring): the same batches, deadline,
        retries and typed errors, the batches sent side by side once the first reply fixed the dimension; no thread.

        Examples:
            >>> import asyncio
            >>> asyncio.run(ServedEmbedder("m", "http://127.0.0.1:8080/v1", dim=3).aembed_documents([])).shape
            (0, 3)
        """
        texts = [str(t) for t in texts]
        if not texts:
            if self._dim is None:
                await self._arequest(["dimension probe"])
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        first = [await self._arequest(batches[0])] if self._dim is None else []
        rest = batches[len(first) :]
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._arequest(batch)) for batch in rest]
        except BaseExceptionGroup as failed:  # the first failure, as the sync path raises it
            raise failed.exceptions[0] from None
        return np.concatenate(first + [t.result() for t in tasks], axis=0)

    async def aembed_query(self, text: str) -> np.ndarray:
        """:meth:`embed_query` awaited on the running loop: shape ``(dim,)``."""
        return (await self.aembed_documents([text]))[0]

    # ------------------------------------------------------------------ one request, under the policy
    def _request(self, texts: list[str]) -> np.ndarray:
        """One batch through :meth:`_send_once` under :attr:`policy` (retries, timeout, typed errors)."""
        attempts = int(self.policy.max_retries) + 1
        for attempt in range(1, attempts + 1):
            try:
                with self.slots:
                    body = run_with_deadline(
                        lambda: self._send_once(texts), self.policy.timeout + self.policy.deadline_grace
                    )
                return self._rows(body, texts)
            except EmbedderUnavailableError:
                raise
            except Exception as e:
                time.sleep(self._failed(e, attempt, attempts))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _arequest(self, texts: list[str]) -> np.ndarray:
        """:meth:`_request` awaited: the deadline is ``asyncio.timeout`` (no watchdog thread), the client this loop's
        (:class:`~retrievekit.core.llm.async_http.JsonPoster`); a cancellation closes the request's connection and
        sends no retry."""
        poster = await self._posters().get()
        attempts = int(self.policy.max_retries) + 1
        for attempt in range(1, attempts + 1):
            try:
                async with self.slots, asyncio.timeout(self.policy.timeout):
                    raw = await poster.post("/embeddings", self._payload(texts), self._headers(), self.max_reply_bytes)
                return self._rows(self._decoded(raw), texts)
            except EmbedderUnavailableError:
                raise
            except ReplyTooLargeError as e:
                raise self._too_big(e.declared) from e
            except Exception as e:  # a cancellation (BaseException) is not a failure: it ends the request here
                if outlived_its_loop():
                    return np.empty((0, 0))  # closed by the collector after its loop was: nobody waits for it
                await asyncio.sleep(self._failed(e, attempt, attempts))
        raise AssertionError("unreachable")  # pragma: no cover

    def _posters(self) -> PerLoop[JsonPoster]:
        """This embedder's async clients, one per event loop, closed with it (made on the first awaited request)."""
        if self._clients is None:
            self._clients = PerLoop(
                lambda: JsonPoster(self.base_url, max_connections=self.max_concurrency),
                JsonPoster.aclose,
                abandon=JsonPoster.abandon,
            )
        return self._clients

    def _rows(self, body: Any, texts: list[str]) -> np.ndarray:
        rows = checked_rows(ordered_embeddings(body, len(texts), self.endpoint), len(texts), self._dim, self.endpoint)
        self._dim = int(rows.shape[1]) if self._dim is None else self._dim
        return rows

    def _failed(self, e: Exception, attempt: int, attempts: int) -> float:
        """What a failed request leads to, the same sync and awaited: the typed error raised, or the seconds to wait
        before the next attempt."""
        status = getattr(e, "code", None) if isinstance(e, (urllib.error.HTTPError, HTTPStatusError)) else None
        if _is_timeout(e):
            raise EmbedderTimeoutError(
                f"the embedding model at {self.endpoint} sent no reply within {self.policy.timeout:g} s "
                "(not retried); raise the timeout or lower the batch size",
                endpoint=self.endpoint,
                attempts=attempt,
            ) from e
        if status is not None and status not in _RETRY_STATUS:
            raise EmbedderUnavailableError(
                f"the embedding model at {self.endpoint} refused the request (HTTP {status}): {_detail(e)}",
                endpoint=self.endpoint,
                status=status,
                attempts=attempt,
            ) from e
        if attempt == attempts:
            raise EmbedderUnavailableError(
                f"the embedding model at {self.endpoint} did not answer after {attempt} request(s): "
                f"{type(e).__name__}: {str(e)[:200]}",
                endpoint=self.endpoint,
                status=status,
                attempts=attempt,
            ) from e
        return self.policy.wait_before(attempt)

    def _payload(self, texts: list[str]) -> bytes:
        return json.dumps({"model": self.name, "input": texts, "encoding_format": "float"}).encode("utf-8")

    def _headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"}

    def _send_once(self, texts: list[str]) -> Any:
        """POST one embeddings request; the decoded JSON body."""
        req = urllib.request.Request(
            f"{self.base_url}/embeddings", data=self._payload(texts), headers=self._headers(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=self.policy.timeout) as resp:  # noqa: S310 - http(s) checked above
            raw = self._read_capped(resp)
        return self._decoded(raw)

    def _decoded(self, raw: bytes) -> Any:
        """The reply body's JSON, or :class:`EmbedderUnavailableError` naming the endpoint."""
        try:
            return json.loads(raw)
        except ValueError as e:
            raise EmbedderUnavailableError(
                f"the embedding model at {self.endpoint} sent a reply that is not JSON: {raw[:200]!r}",
                endpoint=self.endpoint,
            ) from e

    def _read_capped(self, resp: Any) -> bytes:
        """The reply body, or :class:`EmbedderUnavailableError` when it is over :attr:`max_reply_bytes`: refused by
        its ``Content-Length`` before anything is read, else after reading one byte more than the cap."""
        cap = self.max_reply_bytes
        declared = str(resp.headers.get("Content-Length") or "")
        too_big = declared.isdigit() and int(declared) > cap
        raw = b"" if too_big else resp.read(cap + 1)
        if too_big or len(raw) > cap:
            raise self._too_big(declared)
        return bytes(raw)

    def _too_big(self, declared: str) -> EmbedderUnavailableError:
        return EmbedderUnavailableError(
            f"the embedding model at {self.endpoint} sent a reply of more than {self.max_reply_bytes} bytes "
            f"(Content-Length: {declared or 'not given'}); refused, read no further: lower the batch size or "
            "raise max_reply_bytes",
            endpoint=self.endpoint,
        )


def _is_timeout(e: BaseException) -> bool:
    reason = getattr(e, "reason", None)
    return isinstance(e, TimeoutError) or isinstance(reason, TimeoutError)


def _detail(e: BaseException) -> str:
    try:
        return str(e.read()[:300].decode("utf-8", "replace"))  # type: ignore[attr-defined]
    except Exception:
        return str(e)[:300]
