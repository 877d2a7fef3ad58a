"""A LATTICE tree is never saved as finished from an LLM that was down or answering nothing usable (issue #30 item
5): through the real clients, a server that refuses connections stops the build with a typed error (nothing saved;
the next run resumes), and a server whose replies are empty gives a tree marked degraded, which says so when built
and whenever it is loaded."""

from __future__ import annotations

import pytest
from _corpora import FRUIT
from _http_replies import completion, scripted_server

from retrievekit.core.errors import DegradedTreeWarning, LLMUnavailableError
from retrievekit.core.lattice import create_lattice
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.llm.llamacpp_server import free_port
from retrievekit.langchain import LangChainChatLLM

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def _llm(url: str) -> LangChainChatLLM:
    from langchain_openai import ChatOpenAI

    return LangChainChatLLM(
        ChatOpenAI(base_url=url, api_key="-", model="m"), policy=CallPolicy(timeout=10, backoff=0.01)
    )


def test_a_build_against_a_dead_server_stops_typed_and_saves_nothing(tmp_path, minilm):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMUnavailableError, match="did not answer"):
        create_lattice(list(FRUIT), llm=_llm(dead), embedder=minilm, tree_dir=tmp_path / "tree", max_children=2)
    assert not (tmp_path / "tree").exists() or not any((tmp_path / "tree").iterdir())


def test_empty_replies_give_a_tree_marked_degraded_that_says_so_on_load(tmp_path, minilm):
    with scripted_server([completion(None)]) as srv:
        with pytest.warns(DegradedTreeWarning, match="fell back to extractive labels"):
            lat = create_lattice(
                list(FRUIT), llm=_llm(srv.url), embedder=minilm, tree_dir=tmp_path / "t", max_children=2
            )
    meta = lat.tree.meta
    assert meta["extractive_summaries"] == meta["summaries"] > 0 and "degraded" in meta
    with pytest.warns(DegradedTreeWarning, match="is degraded"):
        SemanticTree.load(tmp_path / "t")
