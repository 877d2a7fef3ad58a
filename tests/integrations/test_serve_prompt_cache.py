"""llama.cpp's host-memory prompt cache, capped or turned off (``cache_ram_mib``, ``retrievekit serve --cache-ram``):
a real server with one slot is asked prompt A, then B (which takes A's slot), then A again. With the cache on, the
third request finds A's tokens in the cache (``timings.cache_n`` near A's length); with ``--cache-ram 0`` it computes
A again (only the chat template's first tokens, shared with B, are reused)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from _llama_server import MODEL, llama_server

from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.llm.llamacpp_server import LlamaCppServer, _health, free_port

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

A = "Volcanoes erupt when magma rises through the crust and reaches the surface. " * 3
B = " ".join(str(i) for i in range(1, 41))


def _reused(url: str) -> list[int]:
    """``timings.cache_n`` (prompt tokens not computed again) of A, B, then A again."""
    reused = []
    for text in (A, B, A):
        messages = [{"role": "system", "content": text}, {"role": "user", "content": text}]
        body = json.dumps({"model": MODEL, "messages": messages, "max_tokens": 1, "temperature": 0}).encode()
        request = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as r:
            reused.append(int(json.loads(r.read())["timings"]["cache_n"]))
    return reused


def test_a_capped_cache_still_serves_a_prompt_again_from_memory():
    with llama_server(parallel=1, cache_ram_mib=64) as server:
        first, _, again = _reused(server.url)
    assert first == 0 and again > 40  # A's ~90 prompt tokens came back from the cache


def test_serve_cache_ram_0_turns_the_cache_off():
    pytest.importorskip("xllamacpp")
    from retrievekit.core.llm.models import locate_gguf

    try:
        locate_gguf(MODEL)
    except MissingDependencyError as e:
        pytest.skip(str(e))
    port = free_port()
    cmd = [sys.executable, "-m", "retrievekit.core.cli", "serve", "--port", str(port), "--parallel", "1"]
    process = subprocess.Popen([*cmd, "--cache-ram", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not _health(f"http://127.0.0.1:{port}/health"):  # the check LlamaCppServer.start waits on
            assert process.poll() is None, "retrievekit serve exited while starting"
            assert time.monotonic() < deadline, "retrievekit serve did not come up in 180 s"
            time.sleep(0.25)
        first, _, again = _reused(f"http://127.0.0.1:{port}/v1")
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    assert first == 0 and again < 20  # A computed again: only the template's first tokens, shared with B


@pytest.mark.parametrize("value", [-2, True, 1.5, "64"])
def test_a_wrong_cache_size_is_refused_before_any_process_starts(value):
    with pytest.raises(InvalidInputError, match="cache_ram_mib"):
        LlamaCppServer.start(cache_ram_mib=value)
