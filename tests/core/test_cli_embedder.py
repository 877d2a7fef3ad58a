"""``--embedder`` on the command line: ``retrievekit bench --method dense|hybrid --embedder openai:MODEL@URL`` embeds the
corpus and the claims through a served OpenAI-compatible endpoint (a local word-count embeddings server), records the
model in the result's run settings, and an unknown name exits 2 with the accepted forms."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _mini_scifact import FEVER_CLAIMS, FEVER_DOCS, write_mini_scifact

from retrievekit.core.cli import main

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

WORDS = ["aspirin", "statins", "cholesterol", "sun", "sunlight", "vitamin", "fever", "reduces"]


@contextlib.contextmanager
def word_count_server() -> Iterator[tuple[str, list[list[str]]]]:
    """``POST /v1/embeddings``: each input's counts of :data:`WORDS` (plus a small constant), as OpenAI answers."""
    seen: list[list[str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append(list(body["input"]))
            data = [
                {"index": i, "embedding": [t.lower().split().count(w) + 0.01 for w in WORDS]}
                for i, t in enumerate(body["input"])
            ]
            raw = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_bench_embeds_through_a_served_endpoint(tmp_path: Path, method: str) -> None:
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    out, records = tmp_path / "r.json", tmp_path / "r.jsonl"
    with word_count_server() as (url, seen):
        argv = ["bench", "--dataset", "scifact", "--data-dir", str(data), "--method", method, "--k", "3"]
        argv += ["--embedder", f"openai:words@{url}", "--out", str(out), "--records", str(records), "--no-progress"]
        assert main(argv) == 0
    embedded = {t for batch in seen for t in batch}
    assert {"fever aspirin", "fever sunlight"} <= embedded  # the claims went to the server
    assert any("aspirin reduces fever" in t for t in embedded)  # and the corpus
    result = json.loads(out.read_text())
    assert result["metrics"]["hit@1"] == 1.0  # word counts find each claim's document first
    assert json.loads(records.read_text().splitlines()[0])["settings"]["embedder"] == "words"


def test_an_unknown_embedder_exits_2_naming_the_accepted_forms(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    data = write_mini_scifact(tmp_path, FEVER_DOCS, FEVER_CLAIMS)
    argv = ["bench", "--dataset", "scifact", "--data-dir", str(data), "--method", "dense", "--embedder", "bge-huge"]
    assert main([*argv, "--out", str(tmp_path / "r.json"), "--no-progress"]) == 2
    assert "openai:MODEL@URL" in capsys.readouterr().err
