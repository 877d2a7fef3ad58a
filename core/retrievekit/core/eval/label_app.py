"""The page ``retrievekit label`` serves on 127.0.0.1: one question at a time, its candidate passages, a label each.

A small ASGI app (Starlette, served by uvicorn; the ``label`` extra) over a
:class:`~retrievekit.core.eval.label_session.LabelSession`, and one HTML page with its script inline (no front-end
build step). Keyboard: ``j`` / ``k`` (or the arrow keys) move between passages, ``y`` (or ``1``) relevant, ``n``
(or ``2``) not relevant, ``s`` (or ``3``) skip; a question whose passages all have a label gives way to the next,
``]`` / ``[`` go to the next / previous question. The page shows the progress and says when enough questions are
labelled for the interval asked for. Each label is saved when it is given; a reload (or a new ``retrievekit label``
on the same files) starts at the first question not done.

The app answers only requests addressed to ``127.0.0.1`` or ``localhost`` (another Host header is refused: a web
page elsewhere cannot reach it through DNS rebinding), labels only as JSON (a cross-site form cannot post one), and
takes a label only for a shown question's candidates.

Examples:
    >>> import tempfile, pathlib
    >>> from retrievekit.core.eval.label_session import LabelSession
    >>> from retrievekit.core.types import Passage
    >>> from starlette.testclient import TestClient
    >>> docs = [Passage(id="a", text="solar power"), Passage(id="b", text="wind power")]
    >>> app = make_app(LabelSession(docs, {"q": "solar"}, pathlib.Path(tempfile.mkdtemp()) / "l.tsv", k=2))
    >>> client = TestClient(app, base_url="http://127.0.0.1")
    >>> client.post("/api/label", json={"question": "q", "doc": "a", "label": "relevant"}).json()["labelled"]
    1
    >>> client.post("/api/label", data="question=q", headers={"content-type": "text/plain"}).status_code
    415
    >>> TestClient(app, base_url="http://evil.example").get("/").status_code
    400
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.eval.label_page import PAGE
from retrievekit.core.eval.label_session import LabelSession

__all__ = ["LABEL_HINT", "LabelServer", "make_app"]

LABEL_HINT = "pip install 'retrievekit[label]'"
"""What to install for ``retrievekit label`` (Starlette and uvicorn)."""

MAX_BODY = 8192
"""Largest request body a label may come in (bytes)."""


def _starlette() -> Any:
    try:
        import starlette.applications
        import uvicorn  # noqa: F401 - checked here, used by LabelServer
    except ImportError as e:
        raise MissingDependencyError("starlette and uvicorn", LABEL_HINT, str(e)) from e
    return starlette


def make_app(session: LabelSession) -> Any:
    """The Starlette app of the page and its JSON API (``/api/progress``, ``/api/question/{index}``, ``/api/label``).

    Examples:
        >>> import tempfile, pathlib
        >>> from retrievekit.core.types import Passage
        >>> s = LabelSession([Passage(id="a", text="x y")], {"q": "x"}, pathlib.Path(tempfile.mkdtemp()) / "l.tsv")
        >>> sorted(r.path for r in make_app(s).routes)
        ['/', '/api/label', '/api/progress', '/api/question/{index:int}']
    """
    _starlette()
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    lock = threading.Lock()

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE, headers={"cache-control": "no-store", "x-frame-options": "DENY"})

    async def progress(request: Request) -> JSONResponse:
        with lock:
            return JSONResponse(session.progress())

    async def question(request: Request) -> JSONResponse:
        try:
            with lock:
                return JSONResponse(session.question(request.path_params["index"]))
        except InvalidInputError as e:
            return JSONResponse({"error": str(e)}, status_code=404)

    async def label(request: Request) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "labels come as application/json"}, status_code=415)
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"error": f"a label body is at most {MAX_BODY} bytes"}, status_code=413)
        try:
            data = json.loads(body)
            if not isinstance(data, dict) or not all(
                isinstance(data.get(f), str) for f in ("question", "doc", "label")
            ):
                raise InvalidInputError("a label is {'question': id, 'doc': id, 'label': relevant|not|skip}")
            with lock:
                return JSONResponse(session.label(data["question"], data["doc"], data["label"]))
        except (ValueError, InvalidInputError) as e:  # invalid JSON included
            return JSONResponse({"error": str(e)}, status_code=400)

    routes = [
        Route("/", page),
        Route("/api/progress", progress),
        Route("/api/question/{index:int}", question),
        Route("/api/label", label, methods=["POST"]),
    ]
    hosts = Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])
    return Starlette(routes=routes, middleware=[hosts])


class LabelServer:
    """The app served by uvicorn on ``127.0.0.1`` in a background thread; ``with`` gives its URL and stops it.

    Args:
        session: what the page labels.
        port: the port (0: a free one).

    Examples:
        >>> LabelServer.__enter__.__doc__.split(":")[0]
        'Start serving'
    """

    def __init__(self, session: LabelSession, port: int = 0) -> None:
        _starlette()
        import uvicorn

        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidInputError(f"port must be an int in 0..65535, got {port!r}")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", port))
        except OSError as e:
            self.sock.close()
            raise InvalidInputError(
                f"cannot serve on 127.0.0.1:{port} ({e.strerror or e}); try another --port"
            ) from None
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        config = uvicorn.Config(make_app(session), log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> str:
        """Start serving: returns the URL once the server answers (at most 20 s)."""
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            self.__exit__()
            raise InvalidInputError(f"the label page did not start on {self.url}")
        return self.url

    def __exit__(self, *exc: object) -> None:
        """Stop serving (waits for the thread, at most 10 s) and close the socket."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        self.sock.close()

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C in the foreground: uvicorn stops it)."""
        while self.thread.is_alive():
            self.thread.join(timeout=0.5)
