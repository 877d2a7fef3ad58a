"""A scripted OpenAI-compatible chat server in a process of its own, for load and cancellation tests.

``python tests/_async_llm_server.py DELAY [SLOTS]`` listens on a free loopback port (printed as the first line of
stdout) and answers every ``POST /v1/chat/completions`` after ``DELAY`` seconds, ``SLOTS`` at once (default: as many
as arrive; more wait their turn, as on a real server), with a LATTICE-style JSON reply: ``{"scores": [...]}`` with as many integers as the request's
``response_format`` schema asks for (``minItems``), ``{"keep": [0]}`` to a One-SHOT cropping schema (a ``keep``
array), ARM's ``{"keywords": [...]}`` and ``{"objects": [...]}`` to its keyword and verification schemas
(:func:`_arm_content`), Yes with log-probabilities to a request that asks for them (a served judge's question:
:func:`_yes_no`), or a short text for a plain chat call. ``GET /stats`` answers
``{"arrivals": [monotonic seconds of each request], "open": connections open now}``; ``POST /embeddings`` is
answered too (counted in ``embeddings``, its arrival times in ``embedding_arrivals``), so a test can prove none was
sent. An embeddings request for the model ``"words"`` is answered after ``EMBED_DELAY`` seconds (the optional third
argument, default 0), ``SLOTS`` at once on slots of its own (an embedding server beside the chat one), with a vector
per text that depends on its words (:func:`_words_vector`); any other model gets ``[1.0, i % 3]`` at once. A LATTICE
node-summary question ("What topic do these items share?") is answered with a title made of its items' words
(:func:`_topic_title`), so a tree built through the server has distinct summaries that depend only on its inputs;
``chat_replies`` in ``/stats`` lists the text of each chat reply, in the order they were sent, and
``peak_chat`` / ``peak_words`` the most chat / ``"words"`` requests served at once (``serving_*``: now).

:func:`llm_server` starts it and stops it by its PID; :func:`stats` reads its counters.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import subprocess
import sys
import time
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_ARRIVALS: list[float] = []
_STATE = {"open": 0, "embeddings": 0, "serving_chat": 0, "peak_chat": 0, "serving_words": 0, "peak_words": 0}
_EMBED_ARRIVALS: list[float] = []
_CHAT_REPLIES: list[str] = []
WORDS_DIM = 8
"""The size of the ``"words"`` model's vectors."""
_SLOTS: list[asyncio.Semaphore] = []  # [chat slots, embedding slots] when SLOTS is given
_TOPIC = "What topic do these items share?"


def _arm_content(properties: dict[str, Any], body: dict[str, Any]) -> str:
    """ARM's replies: ``{"keywords": [...]}`` (the two longest words of the prompt's ``Question:`` line, each its
    own "similar" phrase) and ``{"objects": [...]}`` (the first two names the schema's enum allows)."""
    if "objects" in properties:
        names = (properties["objects"].get("items") or {}).get("enum") or []
        return json.dumps({"objects": names[: max(1, min(2, int(properties["objects"].get("maxItems") or 2)))]})
    text = str(((body.get("messages") or [{}])[-1]).get("content") or "")
    question = text.rsplit("Question:", 1)[-1].split("\n", 1)[0]
    words = sorted({w.strip("?,.") for w in question.split()}, key=lambda w: (-len(w), w))[:2]
    return json.dumps({"keywords": [{"keyword": w, "similar": [w.lower()]} for w in words]})


def _yes_no(body: dict[str, Any]) -> dict[str, Any]:
    """A served judge's Yes/No question (``logprobs`` asked): the answer token's alternatives, Yes at a
    log-probability fixed by the prompt's text (a digest), No at -1."""
    text = str(((body.get("messages") or [{}])[-1]).get("content") or "")
    yes = -(int(hashlib.sha256(text.encode()).hexdigest()[:6], 16) % 300) / 100.0
    top = [{"token": "Yes", "logprob": yes, "bytes": None}, {"token": "No", "logprob": -1.0, "bytes": None}]
    return {"content": [{"token": "Yes", "logprob": yes, "bytes": None, "top_logprobs": top}]}


def _reply_for(body: dict[str, Any]) -> dict[str, Any]:
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    properties = schema.get("properties") or {}
    n = (properties.get("scores") or {}).get("minItems")
    content = json.dumps({"scores": [(i * 37 + 11) % 100 for i in range(int(n))]}) if n else "a short summary"
    text = str(((body.get("messages") or [{}])[-1]).get("content") or "")
    if not n and _TOPIC in text:  # a LATTICE node summary
        content = _topic_title(text)
    if "keep" in properties:  # One-SHOT cropping: keep the sentence shown as block 0
        content = json.dumps({"keep": [0]})
    if "keywords" in properties or "objects" in properties:  # ARM's keywords and verification
        content = _arm_content(properties, body)
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    if body.get("logprobs") is True:  # a served judge's Yes/No question
        choice["message"]["content"], choice["logprobs"] = "Yes", _yes_no(body)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [choice],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


def _topic_title(prompt: str) -> str:
    """A LATTICE node summary: the three most frequent words of four letters or more in the question's items (ties
    alphabetically), then a digest of the items, so groups of other children never get the same title."""
    items = prompt.split(_TOPIC, 1)[0]
    counts: dict[str, int] = {}
    for word in items.lower().replace("-", " ").split():
        word = word.strip(".,;:()[]\"'")
        if len(word) >= 4 and word.isalpha():
            counts[word] = counts.get(word, 0) + 1
    top = sorted(counts, key=lambda w: (-counts[w], w))[:3]
    return " ".join([w.capitalize() for w in top] + [hashlib.sha256(items.encode()).hexdigest()[:6]])


def _words_vector(text: str) -> list[float]:
    """The ``"words"`` model: counts of the text's words hashed into :data:`WORDS_DIM` buckets, plus 0.01."""
    v = [0.01] * WORDS_DIM
    for word in text.lower().split():
        v[zlib.crc32(word.encode()) % WORDS_DIM] += 1.0
    return v


async def _served(kind: str, seconds: float, slot: Any) -> None:
    """Serve one ``kind`` request (``"chat"``, ``"words"``) in a place of ``slot`` for ``seconds``: counted in
    ``serving_<kind>`` while served, its most at once in ``peak_<kind>``."""
    async with slot:
        _STATE[f"serving_{kind}"] += 1
        _STATE[f"peak_{kind}"] = max(_STATE[f"peak_{kind}"], _STATE[f"serving_{kind}"])
        try:
            await asyncio.sleep(seconds)
        finally:
            _STATE[f"serving_{kind}"] -= 1


async def _embeddings(body: bytes, embed_delay: float) -> dict[str, Any]:
    _STATE["embeddings"] += 1
    _EMBED_ARRIVALS.append(time.monotonic())
    request = json.loads(body or b"{}")
    texts = request.get("input") or []
    texts = [texts] if isinstance(texts, str) else texts
    if request.get("model") == "words":
        await _served("words", embed_delay, _SLOTS[1] if _SLOTS else contextlib.nullcontext())
        vectors = [_words_vector(str(t)) for t in texts]
    else:
        vectors = [[1.0, float(i % 3)] for i in range(len(texts))]
    data = [{"index": i, "embedding": v, "object": "embedding"} for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": "scripted", "usage": {"prompt_tokens": 1}}


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    body = await reader.readexactly(length) if length else b""
    return method, path, body


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, embed_delay: float = 0.0
) -> None:
    _STATE["open"] += 1
    try:
        while True:
            try:
                got = await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if got is None:
                return
            method, path, body = got
            if method == "GET" and path.endswith("/stats"):
                payload: dict[str, Any] = {
                    "arrivals": _ARRIVALS,
                    "embedding_arrivals": _EMBED_ARRIVALS,
                    "chat_replies": _CHAT_REPLIES,
                    **_STATE,
                }
            elif path.endswith("/embeddings"):
                payload = await _embeddings(body, embed_delay)
            else:
                _ARRIVALS.append(time.monotonic())
                await _served("chat", delay, _SLOTS[0] if _SLOTS else contextlib.nullcontext())
                payload = _reply_for(json.loads(body or b"{}"))
                _CHAT_REPLIES.append(str(payload["choices"][0]["message"]["content"]))
            raw = json.dumps(payload).encode()
            head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(raw)}\r\n\r\n"
            writer.write(head.encode() + raw)
            await writer.drain()
    finally:
        _STATE["open"] -= 1
        writer.close()


async def _main(delay: float, slots: int, embed_delay: float = 0.0) -> None:
    if slots:
        _SLOTS.extend([asyncio.Semaphore(slots), asyncio.Semaphore(slots)])
    server = await asyncio.start_server(lambda r, w: _handle(r, w, delay, embed_delay), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


@dataclass
class LLMServer:
    """The running server: ``url`` (``http://127.0.0.1:PORT/v1``) and its process."""

    url: str
    process: subprocess.Popen[str]


@contextlib.contextmanager
def llm_server(delay: float = 0.2, slots: int = 0, embed_delay: float = 0.0) -> Iterator[LLMServer]:
    """Start the server in its own process on a free loopback port (``slots`` 0: unbounded; ``embed_delay``: the
    ``"words"`` embedding model's reply time); stop it by its PID."""
    args = [sys.executable, __file__, str(delay), str(slots), str(embed_delay)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield LLMServer(f"http://127.0.0.1:{port}/v1", proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def stats(server: LLMServer) -> dict[str, Any]:
    """The server's counters: ``arrivals`` (monotonic seconds, this machine's clock), ``open``, ``embeddings``,
    ``embedding_arrivals``, ``chat_replies``, ``peak_chat``, ``peak_words``."""
    with urllib.request.urlopen(server.url + "/stats", timeout=10) as r:
        return json.loads(r.read())


if __name__ == "__main__":
    argv = sys.argv[1:] + ["0", "0"]
    asyncio.run(_main(float(argv[0]), int(argv[1]), float(argv[2])))
