"""A LATTICE tree is never saved as finished from an LLM that was down or answering nothing usable (issue #30 item
5): through the real clients, a server that refuses connections stops the build with a typed error (nothing saved;
the next run resumes), and a server whose replies are empty gives a tree marked degraded, which says so when built
and whenever it is loaded."""

from __future__ import annotations

import pytest
from _corpora import FRUIT
from _http_replies import completion, scripted_server
from _lattice import KeywordLLM

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


def test_canned_lorem_ipsum_summaries_give_a_tree_marked_degraded(tmp_path, minilm):
    """A server answering the same non-JSON text to everything: each summary is well formed, all are one text."""
    with scripted_server([completion("Lorem ipsum dolor sit amet.")]) as srv:
        with pytest.warns(DegradedTreeWarning, match="repeat another one word for word"):
            lat = create_lattice(
                list(FRUIT), llm=_llm(srv.url), embedder=minilm, tree_dir=tmp_path / "t", max_children=2
            )
    assert lat.tree.meta["repeated_summaries"] > 0 and "degraded" in lat.tree.meta
    with pytest.warns(DegradedTreeWarning, match="is degraded"):
        SemanticTree.load(tmp_path / "t")


def test_garbage_slate_replies_warn_once_per_retriever(tmp_path, minilm):
    """Every slate reply unusable: the ranking is cosine-only, and the retriever says so once (bench's 5 % rule)."""
    from retrievekit.core.errors import FallbackWarning
    from retrievekit.core.lattice import Lattice, LatticeConfig

    tree = create_lattice(list(FRUIT), llm=KeywordLLM(), embedder=minilm, max_children=2).tree
    with scripted_server([completion("<html>lorem ipsum</html>")]) as srv:
        lat = Lattice(tree, _llm(srv.url), LatticeConfig(num_iters=2, retries=0), embedder=minilm)
        with pytest.warns(FallbackWarning, match=r"lattice.search fell back on 100.0% of its LLM asks") as got:
            hits = lat.search("a yellow fruit", k=3)
            lat.search("a red fruit", k=3)
    assert hits and len([w for w in got if w.category is FallbackWarning]) == 1
    assert lat.fallbacks.warned
