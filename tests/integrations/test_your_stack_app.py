"""The FastAPI app of docs/your-stack.md, run as written: its code block is executed with six documents and the
URL of llama.cpp's real server (SmolLM2 on loopback, 2 slots), then asked 8 concurrent questions through httpx's ASGI
transport. Each request gets its answer, its sources and its own trace; the LLM is the user's ``Settings.llm``."""

from __future__ import annotations

import asyncio
import re

import pytest
from _llama_server import llama_server
from _paths import REPO
from llama_index.core import Document, Settings

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

DOCS = [
    Document(text="Volcanoes erupt when magma rises through the crust.", id_="volcano"),
    Document(text="Glaciers carve valleys as they slowly move downhill.", id_="glacier"),
    Document(text="Coral reefs grow in warm, shallow tropical seas.", id_="reef"),
    Document(text="Deserts receive less than 250 millimetres of rain a year.", id_="desert"),
    Document(text="Rainforests hold more than half of the world's species.", id_="rainforest"),
    Document(text="Earthquakes happen where tectonic plates slip past each other.", id_="quake"),
]
QUESTIONS = [
    "Why do volcanoes erupt?",
    "Where do coral reefs grow?",
    "What causes earthquakes?",
    "How do glaciers shape valleys?",
    "How much rain falls in a desert?",
    "Where do most species live?",
    "What rises through the crust?",
    "Which seas are warm and shallow?",
]
"""Eight concurrent requests against a 2-slot server: every component shares the one adapter the docs build for
``Settings.llm``, two requests in flight, so none waits out its timeout in the server's queue."""


def documented_app_code() -> str:
    """The python block that follows the ``tested:`` marker in docs/your-stack.md."""
    text = (REPO / "docs" / "your-stack.md").read_text(encoding="utf-8")
    found = re.search(
        r"<!-- tested: tests/integrations/test_your_stack_app.py[^>]*-->\s*```python\n(.*?)```", text, re.S
    )
    assert found, "docs/your-stack.md lost its tested FastAPI block"
    return found.group(1)


def test_the_documented_fastapi_app_answers_concurrent_requests(tmp_path, monkeypatch, minilm):
    import httpx

    code = documented_app_code()
    monkeypatch.chdir(tmp_path)  # the block's tree_dir="runs/tree" lands here
    with llama_server(parallel=2) as server:
        namespace = {"documents": DOCS, "LLM_URL": server.url}
        try:
            exec(compile(code, "docs/your-stack.md", "exec"), namespace)

            async def ask_all():
                transport = httpx.ASGITransport(app=namespace["app"])
                async with httpx.AsyncClient(transport=transport, base_url="http://app", timeout=300) as client:
                    return await asyncio.gather(*[client.get("/ask", params={"q": q}) for q in QUESTIONS])

            replies = asyncio.run(ask_all())
            assert namespace["retriever"].lattice.llm.llm is Settings.llm  # built without llm=: Settings.llm
        finally:
            Settings._llm = None
    assert [r.status_code for r in replies] == [200] * len(QUESTIONS)
    bodies = [r.json() for r in replies]
    ids = {d.id_ for d in DOCS}
    assert all(b["sources"] and set(b["sources"]) <= ids and isinstance(b["answer"], str) for b in bodies)
    assert all(b["llm_calls"] >= 1 for b in bodies)  # each request read its own trace
    assert (tmp_path / "runs" / "tree" / "manifest.json").exists()
