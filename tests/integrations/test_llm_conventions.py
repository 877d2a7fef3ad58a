"""One convention everywhere: ``llm`` is a model object, ``llm_name`` a registry name; one ``as_chat_llm`` per
framework turns the framework's LLMs into retrievekit ones; the former ``llm="name"`` spelling still works for one
release with a DeprecationWarning."""

from __future__ import annotations

import warnings

import pytest
from _tiny_lm import SENTENCES, TITLES, build_tiny_lm
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative.mindref import create_mindref
from retrievekit.core.judge.scorer import Judge, resolve_judge
from retrievekit.core.llm import LocalLM
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.names import split_llm_argument
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.registry import MethodContext
from retrievekit.core.types import Passage
from retrievekit.langchain import JudgeCompressor, LangChainChatLLM, OneShotCompressor
from retrievekit.langchain import MindRefRetriever as LCMindRef
from retrievekit.langchain import as_chat_llm as lc_as_chat_llm
from retrievekit.llama_index import JudgeReranker, LlamaIndexChatLLM, OneShotPostprocessor
from retrievekit.llama_index import MindRefRetriever as LIMindRef
from retrievekit.llama_index import as_chat_llm as li_as_chat_llm


class Echo(ChatLLMBase):
    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        return Completion("ok", 1, 1)


class Half:
    def score_relevance(self, query, candidates, *, trace=None):
        return [0.5] * len(candidates)


@pytest.fixture(scope="module")
def tiny_lm() -> LocalLM:
    model, tok = build_tiny_lm()
    return LocalLM(model, tok, name="tiny")


@pytest.mark.parametrize("as_chat_llm", [li_as_chat_llm, lc_as_chat_llm], ids=["llama_index", "langchain"])
def test_as_chat_llm_passes_retrievekit_models_and_refuses_names(as_chat_llm, tiny_lm):
    echo, judge = Echo(), Half()
    assert as_chat_llm(None) is None
    assert as_chat_llm(echo) is echo and as_chat_llm(tiny_lm) is tiny_lm and as_chat_llm(judge) is judge
    for bad in ("smollm2", 3, object()):
        with pytest.raises(InvalidInputError, match="llm must be a model object"):
            as_chat_llm(bad)


def test_each_framework_wraps_its_own_llms():
    mock = MockLLM(max_tokens=2)
    wrapped = li_as_chat_llm(mock)
    assert isinstance(wrapped, LlamaIndexChatLLM) and wrapped.llm is mock and li_as_chat_llm(wrapped) is wrapped
    fake = FakeListChatModel(responses=["hi"])
    chat = lc_as_chat_llm(fake)
    assert isinstance(chat, LangChainChatLLM) and chat.llm is fake and chat.complete("Hi").text == "hi"
    with pytest.raises(InvalidInputError):
        li_as_chat_llm(fake)  # a LangChain model is not a LlamaIndex LLM
    with pytest.raises(InvalidInputError):
        lc_as_chat_llm(mock)


def test_oneshot_edges_wrap_framework_llms_with_as_chat_llm():
    pp = OneShotPostprocessor(crop=True, llm=MockLLM())
    assert isinstance(pp._selector.llm, LlamaIndexChatLLM)
    comp = OneShotCompressor(crop=True, llm=FakeListChatModel(responses=["x"]))
    assert isinstance(comp._selector.llm, LangChainChatLLM)
    with pytest.raises(InvalidInputError, match="llm must be a model object"):
        OneShotPostprocessor(crop=True, llm="smollm2")


def test_split_llm_argument():
    assert split_llm_argument(None, "qwen0.5b", where="f") == (None, "qwen0.5b")
    marker = object()
    assert split_llm_argument(marker, "smollm2", where="f") == (marker, "smollm2")
    with pytest.warns(DeprecationWarning, match=r"f\(llm='qwen0.5b'\) is deprecated: pass llm_name='qwen0.5b'"):
        assert split_llm_argument("qwen0.5b", "smollm2", where="f") == (None, "qwen0.5b")


def test_method_context_llm_and_llm_name():
    marker = Echo()
    ctx = MethodContext(corpus=[], llm_name="qwen0.5b", llm=marker)
    assert ctx.llm_name == "qwen0.5b" and ctx.load_llm() is marker
    assert MethodContext(corpus=[], llm_name="none").load_llm() is None
    with pytest.warns(DeprecationWarning, match="llm_name"):
        old = MethodContext(corpus=[], llm="qwen0.5b")
    assert (old.llm_name, old.llm) == ("qwen0.5b", None)
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidInputError, match="llm="):
        MethodContext(corpus=[], llm="smollm2", llm_name="qwen0.5b")


def test_mindref_takes_llm_name_and_the_old_keyword(tiny_lm):
    docs = [Passage(id="a", text=SENTENCES[1], title=TITLES[0]), Passage(id="b", text=SENTENCES[3], title=TITLES[2])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert create_mindref(docs, lm=tiny_lm, llm_name="smollm2").lm is tiny_lm  # lm given: nothing is loaded
        assert create_mindref(docs, llm=tiny_lm).lm is tiny_lm  # llm: a model object, as everywhere
    with pytest.warns(DeprecationWarning, match=r"create_mindref\(llm='smollm2'\)"):
        assert create_mindref(docs, lm=tiny_lm, llm="smollm2").lm is tiny_lm
    with pytest.raises(InvalidInputError, match="MindRef needs a scoring LM"):
        create_mindref(docs, llm=Echo())
    li = [LIDocument(id_="a", text=SENTENCES[1], metadata={"title": TITLES[0]})]
    with pytest.warns(DeprecationWarning, match=r"MindRefRetriever.from_documents\(llm='smollm2'\)"):
        assert LIMindRef.from_documents(li, lm=tiny_lm, llm="smollm2").mindref.lm is tiny_lm
    lc = [Document(page_content=SENTENCES[1], id="a", metadata={"title": TITLES[0]})]
    with pytest.warns(DeprecationWarning, match=r"MindRefRetriever.from_documents\(llm='smollm2'\)"):
        assert LCMindRef.from_documents(lc, lm=tiny_lm, llm="smollm2").mindref.lm is tiny_lm
    assert LCMindRef.from_documents(lc, llm=tiny_lm).mindref.lm is tiny_lm


def test_judge_edges_take_llm_name_and_the_old_keyword():
    judge = Half()
    with pytest.warns(DeprecationWarning, match=r"JudgeReranker\(llm='smollm2'\)"):
        assert JudgeReranker(judge=judge, llm="smollm2").judge is judge
    with pytest.warns(DeprecationWarning, match=r"JudgeCompressor\(llm='smollm2'\)"):
        comp = JudgeCompressor(judge=judge, llm="smollm2")
    assert comp.llm_name == "smollm2" and comp.llm is None
    assert JudgeCompressor(judge=judge, llm_name="qwen0.5b").llm_name == "qwen0.5b"
    with pytest.warns(DeprecationWarning, match=r"resolve_judge\(llm='smollm2'\)"):
        assert resolve_judge(judge, llm="smollm2") is judge


def test_a_zero_shot_judge_needs_a_local_model_and_the_rerankers_score_a_chat_llm_listwise():
    with pytest.raises(InvalidInputError, match="llm must be a LocalLM"):
        Judge.zero_shot(llm=Echo())  # a zero-shot judge reads logits
    # a framework LLM without logits (a served one) reranks by slate prompts instead of being refused
    assert type(JudgeReranker(llm=MockLLM())._judge).__name__ == "ListwiseJudge"
    compressor = JudgeCompressor(llm=FakeListChatModel(responses=['{"scores": [90, 10]}']))
    assert type(compressor._judge).__name__ == "ListwiseJudge"


def test_judge_zero_shot_reads_a_local_model(tiny_lm):
    judge = Judge.zero_shot(llm=tiny_lm, batch_size=2)
    assert judge.base_model == "tiny" and judge.lm is tiny_lm
    with pytest.warns(DeprecationWarning, match="pass a loaded model as llm="):
        assert Judge.zero_shot(tiny_lm).base_model == "tiny"  # the former positional spelling
