"""One convention everywhere: ``llm=`` takes a model's name, a served spec, a framework's model or a retrievekit model,
and one resolver (``retrievekit.core.llm.resolve``) turns it into the model; one ``as_chat_llm`` per framework wraps
that framework's LLMs (registered with the resolver when the edge is imported)."""

from __future__ import annotations

import pytest
from _tiny_lm import SENTENCES, TITLES, tiny_local_lm
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from llama_index.core import Document as LIDocument
from llama_index.core.llms import MockLLM

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative.mindref import create_mindref
from retrievekit.core.judge.scorer import Judge
from retrievekit.core.llm import LocalLM
from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.judge_hooks import resolve_judge
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.llm.resolve import checked_llm, llm_label, resolve_llm
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
    return tiny_local_lm()


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


def test_oneshot_edges_wrap_framework_llms_and_take_names():
    pp = OneShotPostprocessor(crop=True, llm=MockLLM())
    assert isinstance(pp._selector.llm, LlamaIndexChatLLM)
    comp = OneShotCompressor(crop=True, llm=FakeListChatModel(responses=["x"]))
    assert isinstance(comp._selector.llm, LangChainChatLLM)
    with pytest.raises(InvalidInputError, match="llm must be a model object"):
        OneShotPostprocessor(crop=True, llm=3)


def test_the_resolver_takes_every_spelling_of_a_model(tiny_lm):
    echo = Echo()
    assert resolve_llm(echo) is echo and resolve_llm(tiny_lm) is tiny_lm
    assert resolve_llm("none") is None and resolve_llm(None, default=None) is None
    assert isinstance(resolve_llm(MockLLM()), LlamaIndexChatLLM)  # each framework's adapter, one dispatch
    assert isinstance(resolve_llm(FakeListChatModel(responses=["x"])), LangChainChatLLM)
    served = resolve_llm("openai-like:m@http://127.0.0.1:9/v1")  # a served spec: the client is built, nothing is sent
    assert isinstance(served, LlamaIndexChatLLM) and "127.0.0.1:9" in served.endpoint
    with pytest.raises(InvalidInputError, match="llm must be a model object"):
        resolve_llm(object())
    assert llm_label(None) == "smollm2" and llm_label("qwen0.5b") == "qwen0.5b" and llm_label(echo) is None
    assert checked_llm("qwen0.5b") == "qwen0.5b" and isinstance(checked_llm(MockLLM()), LlamaIndexChatLLM)


def test_method_context_takes_names_and_models():
    marker = Echo()
    assert MethodContext(corpus=[], llm=marker).load_llm() is marker
    assert MethodContext(corpus=[], llm="none").load_llm() is None
    ctx = MethodContext(corpus=[], llm="qwen0.5b")
    assert ctx.llm == "qwen0.5b" and ctx.llm_label == "qwen0.5b"  # a name is loaded only when a method needs it
    assert isinstance(MethodContext(corpus=[], llm=MockLLM()).llm, LlamaIndexChatLLM)
    with pytest.raises(InvalidInputError, match="llm must be a model object"):
        MethodContext(corpus=[], llm=3)


def test_mindref_takes_its_model_as_llm(tiny_lm):
    docs = [Passage(id="a", text=SENTENCES[1], title=TITLES[0]), Passage(id="b", text=SENTENCES[3], title=TITLES[2])]
    assert create_mindref(docs, llm=tiny_lm).lm is tiny_lm
    with pytest.raises(InvalidInputError, match="MindRef needs a scoring LM"):
        create_mindref(docs, llm=Echo())
    li = [LIDocument(id_="a", text=SENTENCES[1], metadata={"title": TITLES[0]})]
    assert LIMindRef.from_documents(li, llm=tiny_lm).mindref.lm is tiny_lm
    lc = [Document(page_content=SENTENCES[1], id="a", metadata={"title": TITLES[0]})]
    assert LCMindRef.from_documents(lc, llm=tiny_lm).mindref.lm is tiny_lm


def test_judge_edges_take_a_judge_before_their_llm():
    judge = Half()
    assert JudgeReranker(judge=judge, llm="smollm2").judge is judge  # a ready judge: the model is never loaded
    comp = JudgeCompressor(judge=judge, llm="qwen0.5b")
    assert comp.judge is judge and comp.llm == "qwen0.5b"
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
    assert Judge.zero_shot(tiny_lm).base_model == "tiny"
