"""A loopback HTTP proxy that adds a fixed latency to every request before passing it to an OpenAI-compatible server.

On a 2-core machine the server's own compute dominates every request, so concurrency hardly shows in seconds. A GPU
server answers a small prompt in tens of milliseconds and its clients wait mostly on the network and queueing; this
proxy plays that part: each request waits ``latency`` seconds (concurrently: requests in flight wait side by side),
then goes to the real server. Sequential calls pay the latency once each, overlapping calls once per round.

    with LatencyProxy("http://127.0.0.1:8080/v1", latency=1.0) as proxy:
        ...  # point the client at proxy.url
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["LatencyProxy"]


class LatencyProxy:
    """Forward ``POST``/``GET`` to ``upstream`` (``http://host:port/v1``) after ``latency`` seconds each.

    Examples:
        >>> p = LatencyProxy("http://127.0.0.1:9/v1", latency=0.0)  # doctest: +SKIP
    """

    def __init__(self, upstream: str, latency: float) -> None:
        self.upstream = upstream.rstrip("/")
        self.latency = float(latency)
        base = self.upstream.rsplit("/v1", 1)[0]
        delay = self.latency

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self, body: bytes | None) -> None:
                time.sleep(delay)
                req = urllib.request.Request(base + self.path, data=body, method=self.command)
                req.add_header("content-type", self.headers.get("content-type", "application/json"))
                try:
                    with urllib.request.urlopen(req, timeout=3600) as r:  # noqa: S310 - loopback only
                        status, payload = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, payload = e.code, e.read()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self._forward(self.rfile.read(int(self.headers.get("content-length", 0))))

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._forward(None)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The proxy's OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        """Stop the proxy."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LatencyProxy:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
