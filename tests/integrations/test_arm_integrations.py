"""ArmRetriever where users put it: a LlamaIndex RetrieverQueryEngine, a LangChain LCEL chain, and the
langchain-tests standard retriever suite (real MiniLM, Chroma, BM25, pulp/HiGHS)."""

from __future__ import annotations

import pytest
from _arm import QUESTION, Chat, corpus
from _lcel import run_rag_chain
from _standard_suite import StandardSuite
from langchain_core.documents import Document
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from retrievekit.core.arm import Arm, ArmConfig
from retrievekit.core.errors import InvalidInputError
from retrievekit.langchain import ArmRetriever as LCArm
from retrievekit.llama_index import ArmRetriever as LIArm

_ARM: dict[str, Arm] = {}


def shared_arm(**options) -> Arm:
    """One ARM per option set for the module (building the dense index is the slow part)."""
    key = repr(sorted(options.items()))
    if key not in _ARM:
        _ARM[key] = Arm(corpus(), Chat(), ArmConfig.from_options({"ilp_k": 4, **options}))
    return _ARM[key]


def test_llama_index_query_engine_with_links_in_metadata():
    retriever = LIArm(shared_arm(), similarity_top_k=5)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    resp = engine.query(QUESTION)
    ids = {n.node.node_id for n in resp.source_nodes}
    assert ids == {"Nonso_Anozie_1", "/wiki/Prime_Suspect"}
    table = next(n for n in resp.source_nodes if n.node.node_id == "Nonso_Anozie_1")
    assert any("links to passage 'Prime Suspect'" in link for link in table.node.metadata["arm_links"])
    assert table.node.metadata["retrievekit_kind"] == "table" and "Prime Suspect" in table.node.get_content()
    assert "Lynda La Plante" in str(resp)  # MockLLM echoes the prompt, which carries the retrieved passage
    t = retriever.last_trace
    assert t is not None and t.llm_calls == 1 + 3 - t.counters.get("arm.verify_reused", 0)  # keywords + verifications


def test_llama_index_from_documents_keeps_tables():
    docs = [LIDocument(id_="note", text="Robert is a character in Prime Suspect.", metadata={"title": "Note"})]
    r = LIArm.from_documents([*docs, *corpus()], llm=None, similarity_top_k=3, expand_ks="1")
    nodes = r.retrieve("Which series has the character Robert?")
    assert 1 <= len(nodes) <= 3 and r.arm.llm is None
    assert {o.kind for o in r.arm.corpus} == {"passage", "table"}


def test_langchain_lcel_chain():
    retriever = LCArm(retriever=shared_arm(), k=5)
    answer, seen = run_rag_chain(retriever, QUESTION, "Lynda La Plante.")
    assert answer == "Lynda La Plante."
    assert {d.id for d in seen} == {"Nonso_Anozie_1", "/wiki/Prime_Suspect"}
    assert all(d.metadata["arm_selected"] and "score" in d.metadata for d in seen)
    assert len(retriever.invoke(QUESTION, k=1)) == 1
    with pytest.raises(ValueError):
        retriever.invoke("   ")


def test_langchain_from_documents():
    docs = [Document(page_content="Prime Suspect was devised by Lynda La Plante.", id="p", metadata={"x": 1})]
    r = LCArm.from_documents(docs, llm=None, k=2)
    out = r.invoke("Who devised Prime Suspect?")
    assert [d.id for d in out] == ["p"] and out[0].metadata["x"] == 1


class TestLangChainStandardArm(StandardSuite):
    """langchain-tests' standard retriever suite (``fill_to_k``: the suite expects exactly k documents)."""

    constructor, query, k = LCArm, QUESTION, 2

    def make_core(self):
        return shared_arm(fill_to_k=True, verify=False)


# ---------------------------------------------------------------- a framework LLM reaches ARM's core wrapped
KEYWORDS_REPLY = '{"keywords": [{"keyword": "Nonso Anozie", "similar": ["actor"]}]}'
OBJECTS_REPLY = '{"objects": ["Prime Suspect", "Nonso Anozie - Television"]}'


def _scripted_reply(prompt: str) -> str:
    return OBJECTS_REPLY if "Objects:" in prompt else KEYWORDS_REPLY


def test_llama_index_arm_takes_a_llama_index_llm():
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    from retrievekit.llama_index import LlamaIndexChatLLM

    class Scripted(CustomLLM):
        prompts: list[str] = []

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
            self.prompts.append(prompt)
            return CompletionResponse(text=_scripted_reply(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
            raise NotImplementedError

    llm = Scripted()
    r = LIArm.from_documents(corpus(), llm=llm, similarity_top_k=5, ilp_k=4)
    assert isinstance(r.arm.llm, LlamaIndexChatLLM) and r.arm.llm.llm is llm and not r.arm.scoring
    ids = {n.node.node_id for n in r.retrieve(QUESTION)}
    assert ids == {"Nonso_Anozie_1", "/wiki/Prime_Suspect"}  # as with the scripted retrievekit ChatLLM
    assert len(llm.prompts) == r.last_trace.llm_calls >= 2 and any("Objects:" in p for p in llm.prompts)


def test_langchain_arm_takes_a_langchain_chat_model():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from retrievekit.langchain import LangChainChatLLM

    llm = FakeListChatModel(responses=[KEYWORDS_REPLY] + [OBJECTS_REPLY] * 3)
    r = LCArm.from_documents(corpus(), llm=llm, k=5, ilp_k=4)
    assert isinstance(r.arm.llm, LangChainChatLLM) and r.arm.llm.llm is llm and not r.arm.scoring
    assert {d.id for d in r.invoke(QUESTION)} == {"Nonso_Anozie_1", "/wiki/Prime_Suspect"}
    assert r.last_trace.llm_calls >= 2 and llm.i > 0


def test_arm_edges_take_a_name_as_llm_and_refuse_what_is_no_model():
    r = LCArm.from_documents(corpus(), llm="none", k=2)
    assert r.arm.llm is None
    with pytest.raises(InvalidInputError, match="llm must be a model object"):
        LIArm.from_documents(corpus(), llm=42)


def test_arm_over_saved_indexes_in_a_query_engine_and_a_chain_sync_and_awaited(tmp_path):
    """``Arm.from_indexes`` (the BM25 index opened from its folder, objects read per search) behind both edges."""
    import asyncio

    from retrievekit.core.index.bm25 import BM25Config, BM25Index

    BM25Index.build(iter(corpus()), BM25Config(engine="tantivy"), folder=tmp_path / "bm25")
    listed = shared_arm()
    arm = Arm.from_indexes(BM25Index.load(tmp_path / "bm25"), listed.dense, Chat(), listed.config)
    want = {"Nonso_Anozie_1", "/wiki/Prime_Suspect"}
    engine = RetrieverQueryEngine.from_args(LIArm(arm, similarity_top_k=5), llm=MockLLM())
    assert {n.node.node_id for n in engine.query(QUESTION).source_nodes} == want
    assert {n.node.node_id for n in asyncio.run(engine.aquery(QUESTION)).source_nodes} == want
    answer, seen = run_rag_chain(LCArm(retriever=arm, k=5), QUESTION, "Lynda La Plante.")
    assert answer == "Lynda La Plante." and {d.id for d in seen} == want
    assert {d.id for d in asyncio.run(LCArm(retriever=arm, k=5).ainvoke(QUESTION))} == want
