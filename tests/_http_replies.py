"""A small local HTTP server that answers ``POST /v1/chat/completions`` with scripted replies (malformed bodies,
HTTP errors) and records every request it received: for the tests of how the served-LLM path reads broken replies.
``embeddings(*rows)`` is an embeddings reply; ``dead_url()`` and ``silent_url()`` are the two endpoints a client
cannot get an answer from (nothing listens; a listener that never replies).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply: status, body (bytes sent as is) and extra headers."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def completion(content: Any, *, finish_reason: str = "stop") -> Reply:
    """A well-formed chat completion whose message content is ``content`` (None for a null content)."""
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    return Reply(body=json.dumps(body).encode())


def embeddings(*rows: list[float]) -> Reply:
    """A well-formed embeddings response with one vector a row, its entries listed in reverse (``index`` orders them)."""
    data = [{"object": "embedding", "index": i, "embedding": r} for i, r in reversed(list(enumerate(rows)))]
    return Reply(body=json.dumps({"object": "list", "data": data, "model": "m"}).encode())


def dead_url() -> str:
    """A loopback ``/v1`` URL on a port nothing listens on (a connection is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextlib.contextmanager
def silent_url() -> Iterator[str]:
    """A loopback ``/v1`` URL whose listener accepts connections and never replies, while the block runs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


@dataclass
class ScriptedServer:
    """The running server: ``url`` (``http://127.0.0.1:PORT/v1``), the ``requests`` bodies it received."""

    url: str
    requests: list[dict[str, Any]]


@contextlib.contextmanager
def scripted_server(
    replies: list[Reply] | None = None, *, answer: Callable[[dict[str, Any]], Reply] | None = None
) -> Iterator[ScriptedServer]:
    """Serve ``replies`` in order (the last one repeats) on a free loopback port; or, with ``answer``, what
    ``answer(request body)`` returns for each request."""
    received: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            with lock:
                received.append(json.loads(raw or b"{}"))
                reply = answer(received[-1]) if answer is not None else replies[min(len(received), len(replies)) - 1]
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply.body)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield ScriptedServer(f"http://127.0.0.1:{httpd.server_address[1]}/v1", received)
    finally:
        httpd.shutdown()
        httpd.server_close()
