"""Relevance-judge hooks (issue #9): LATTICE, llm-rerank, ARM verification, One-SHOT cropping and the agent use a
``RelevanceJudge`` (``score_relevance``) instead of their prompt when they get one, and the bench factories load it
from ``judge_dir`` (``retrievekit bench --judge DIR``).

The judges here are scripted (word overlap or planted numbers): the scripted scores are the point, and every test
asserts that the method's behaviour follows them. Search structures, indexes, Chroma, the MiniLM embedder, the MIP
and the LangGraph runtime are real.
"""

from __future__ import annotations

import json
import math
import re
import sys
import types
from pathlib import Path

import pytest
from _lcel import run_rag_chain
from conftest import FRUIT
from langchain_core.messages import AIMessage, ToolMessage
from test_lattice_core import _planted_tree

from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.method import Arm, build_arm
from retrievekit.core.arm.verify import verify_draft
from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.judge.hooks import judge_from_options, judge_relevance
from retrievekit.core.lattice import FlatLLMReranker, Lattice, LatticeConfig, SemanticTree, SlateScorer
from retrievekit.core.lattice.method import build_lattice, build_llm_rerank
from retrievekit.core.llm.json_output import ChatLLMBase
from retrievekit.core.llm.protocol import ChatLLM, Completion, RelevanceJudge
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.cropping import SentenceCropper
from retrievekit.core.oneshot.method import build_oneshot
from retrievekit.core.oneshot.selector import OneShotSelector
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage, ScoredHit
from retrievekit.langgraph.graph import build_iterative_agent
from retrievekit.langgraph.method import run_agent
from retrievekit.langgraph.testing import ScriptedToolChatModel

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class OverlapJudge(ChatLLMBase):
    """A judge (and a chat LLM, like the real one) scoring P(relevant) = word overlap with the query.

    ``planted`` maps a substring to a fixed score (first match wins) to force a decision. Its chat side must not
    be used for scoring: ``complete`` counts calls so the tests can assert the prompt path was bypassed.
    """

    def __init__(self, planted: dict[str, float] | None = None) -> None:
        self.planted = dict(planted or {})
        self.judge_calls: list[tuple[str, list[str]]] = []
        self.chat_calls = 0

    def score_relevance(self, query, candidates, *, trace=None):
        self.judge_calls.append((query, list(candidates)))
        if trace is not None:
            trace.record_llm_call(10 * len(candidates), 0)
        q = _words(query)
        out = []
        for c in candidates:
            fixed = next((v for key, v in self.planted.items() if key in c), None)
            out.append(fixed if fixed is not None else len(q & _words(c)) / max(1, len(q)))
        return out

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.chat_calls += 1
        self._record(trace, 1, 1)
        return Completion("Topic summary")


class PromptScorer(ChatLLMBase):
    """The zero-shot prompt path: the same overlap scores, answered as slate JSON."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.calls += 1
        text = prompt if isinstance(prompt, str) else prompt[-1].content
        query = _words(re.search(r"Query: (.*)", text).group(1))
        items = re.findall(r"^\[(\d+)\] (.*)$", text, flags=re.M)
        scores = [min(100, 100 * len(query & _words(t)) // max(1, len(query))) for _, t in items]
        out = json.dumps({"scores": scores})
        self._record(trace, len(text) // 4, len(out) // 4)
        return Completion(out, len(text) // 4, len(out) // 4)


def test_scripted_judge_satisfies_both_protocols():
    judge = OverlapJudge()
    assert isinstance(judge, RelevanceJudge) and isinstance(judge, ChatLLM)
    assert not isinstance(PromptScorer(), RelevanceJudge)


# ---------------------------------------------------------------------- the shared hook
def test_judge_relevance_checks_and_clips():
    class Bad:
        def __init__(self, reply):
            self.reply = reply

        def score_relevance(self, query, candidates, *, trace=None):
            return self.reply

    t = Trace()
    assert judge_relevance(Bad([1.5, -0.2]), "q", ["a", "b"], trace=t) == [1.0, 0.0]
    assert t.counters["judge.clipped"] == 2 and any(e.kind == "judge.clipped" for e in t.events)
    with pytest.raises(LLMOutputError, match="1 scores for 2"):
        judge_relevance(Bad([0.5]), "q", ["a", "b"])
    with pytest.raises(LLMOutputError, match="NaN"):
        judge_relevance(Bad([0.5, float("nan")]), "q", ["a", "b"])
    with pytest.raises(LLMOutputError, match="non-number"):
        judge_relevance(Bad(["high", 0.1]), "q", ["a", "b"])
    with pytest.raises(LLMOutputError):
        judge_relevance(Bad(None), "q", ["a"])


# ---------------------------------------------------------------------- LATTICE
def test_lattice_with_a_judge_reaches_the_planted_leaf_one_call_per_slate():
    judge = OverlapJudge()
    lat = Lattice(_planted_tree(), judge, LatticeConfig(beam_size=1, num_iters=3))
    trace = Trace()
    hits = lat.search("volcano eruption magma lava", k=3, trace=trace)
    assert lat.last_state.expanded == ["root", "t1", "t1s2"]
    assert hits[0].id == "t1s2l0"
    slates = trace.counters["lattice.slates"]
    assert slates == 3 and len(judge.judge_calls) == slates
    assert trace.counters["judge.calls"] == slates and trace.counters["lattice.judge_slates"] == slates
    assert judge.chat_calls == 0  # no prompt: the slate JSON path is bypassed
    assert {src for *_, src in lat.last_state.slates} == {"judge"}
    # each call is one whole slate, in item order (children of the expanded node)
    assert judge.judge_calls[0][1] == ["sports 0", "geology volcano eruption", "sports 2"]


def test_lattice_judge_and_prompt_paths_spend_the_same_number_of_calls():
    cfg = LatticeConfig(beam_size=2, num_iters=4)
    judge, prompt_llm = OverlapJudge(), PromptScorer()
    t_judge, t_prompt = Trace(), Trace()
    hits_j = Lattice(_planted_tree(), judge, cfg).search("volcano eruption magma lava", k=3, trace=t_judge)
    hits_p = Lattice(_planted_tree(), prompt_llm, cfg).search("volcano eruption magma lava", k=3, trace=t_prompt)
    assert t_judge.counters["lattice.slates"] == t_prompt.counters["lattice.slates"]
    assert len(judge.judge_calls) == prompt_llm.calls == t_prompt.llm_calls
    assert "judge.calls" not in t_prompt.counters and "lattice.judge_slates" not in t_prompt.counters
    assert hits_j[0].id == hits_p[0].id == "t1s2l0"


def test_lattice_judge_failure_falls_back_like_a_bad_reply():
    class Short(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            return [0.5]

    trace = Trace()
    res = SlateScorer(Short()).score("q", ["a", "b"], trace=trace)
    assert res.source == "fallback" and res.scores == [0.0, 0.0]
    assert trace.counters["lattice.fallback_slates"] == 1
    assert any("judge reply unusable" in e.message for e in trace.events)


def test_lattice_judge_sees_clipped_candidates():
    judge = OverlapJudge()
    SlateScorer(judge, LatticeConfig(max_candidate_chars=10)).score("q", ["a  b", "x" * 50])
    assert judge.judge_calls[0][1] == ["a b", "x" * 7 + "..."]


def test_llm_rerank_with_a_judge_orders_by_judge_score():
    docs = [Passage(id=f"d{i}", text=f"sun report number {i}") for i in range(6)]
    planted = {"number 4": 0.9, "number 1": 0.7, "number 5": 0.3}
    judge = OverlapJudge(planted={**planted, "number": 0.05})
    rr = FlatLLMReranker(BM25Index.build(docs), judge, candidates=6, calls=2)
    trace = Trace()
    hits = rr.search("sun", k=6, trace=trace)
    assert [h.id for h in hits[:3]] == ["d4", "d1", "d5"]
    assert [h.score for h in hits[:3]] == [0.9, 0.7, 0.3]
    assert len(judge.judge_calls) == 2 == trace.counters["judge.calls"] and judge.chat_calls == 0


# ---------------------------------------------------------------------- factories and --judge
@pytest.fixture
def fake_judge_module(monkeypatch):
    """``retrievekit.core.judge`` replaced by a module whose ``load_judge`` returns a scripted judge."""
    loaded: list[str] = []
    judge = OverlapJudge()

    def load_judge(path, **kwargs):
        loaded.append(str(path))
        return judge

    mod = types.ModuleType("retrievekit.core.judge")
    mod.load_judge = load_judge
    monkeypatch.setitem(sys.modules, "retrievekit.core.judge", mod)
    return judge, loaded


def testjudge_from_options(fake_judge_module):
    judge, loaded = fake_judge_module
    got, opts = judge_from_options(MethodContext(corpus=[], options={"judge_dir": "runs/j", "calls": 3}))
    assert got is judge and opts == {"calls": 3} and loaded == ["runs/j"]
    assert judge_from_options(MethodContext(corpus=[], options={"calls": 3})) == (None, {"calls": 3})


def test_judge_from_options_refuses_a_non_judge(monkeypatch):
    mod = types.ModuleType("retrievekit.core.judge")
    mod.load_judge = lambda path, **kw: PromptScorer()
    monkeypatch.setitem(sys.modules, "retrievekit.core.judge", mod)
    with pytest.raises(InvalidInputError, match="score_relevance"):
        judge_from_options(MethodContext(corpus=[], options={"judge_dir": "runs/j"}))


def test_lattice_and_rerank_factories_use_the_judge(fake_judge_module, tmp_path, minilm):
    judge, loaded = fake_judge_module
    tree_dir = tmp_path / "tree"
    tree = _planted_tree()
    tree.save(tree_dir)
    corpus = list(tree.objects.values())
    lat = build_lattice(MethodContext(corpus=corpus, options={"judge_dir": "j", "tree_dir": str(tree_dir)}))
    assert lat.llm is judge and lat.scorer.llm is judge
    assert lat.search("volcano eruption magma lava", k=1)[0].id == "t1s2l0"
    rr = build_llm_rerank(
        MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "calls": 2, "first_stage": "bm25"})
    )
    assert rr.scorer.llm is judge and rr.calls == 2
    assert loaded == ["j", "j"]


# ---------------------------------------------------------------------- ARM
_OBJS = [
    Passage(id="a", title="Alpha", text="Alpha text."),
    Passage(id="b", title="Beta", text="Beta text."),
    Passage(id="c", title="Gamma", text="Gamma text."),
]


def test_arm_verification_keeps_exactly_the_objects_at_or_above_threshold():
    judge = OverlapJudge(planted={"Alpha": 0.9, "Beta": 0.2, "Gamma": 0.5})
    trace = Trace()
    v = verify_draft(judge, "q?", _OBJS, ["A", "B", "G"], [], scoring=False, judge_threshold=0.5, trace=trace)
    assert v.ok and set(v.chosen) == {"a", "c"}
    assert v.chosen["a"] == pytest.approx(math.log(0.9)) and v.chosen["c"] == pytest.approx(math.log(0.5))
    assert len(judge.judge_calls) == 1 and judge.chat_calls == 0  # one batched call per draft, no prompt
    assert trace.counters["arm_verify_judge"] == 1 and trace.counters["judge.calls"] == 1
    note = next(e for e in trace.events if e.kind == "arm.judge")
    assert note.data["kept"] == ["a", "c"] and note.data["scores"] == {"a": 0.9, "b": 0.2, "c": 0.5}


def test_arm_verification_keeps_the_best_when_none_passes():
    judge = OverlapJudge(planted={"Alpha": 0.1, "Beta": 0.3, "Gamma": 0.3})
    v = verify_draft(judge, "q?", _OBJS, ["A", "B", "G"], [], scoring=False, judge_threshold=0.5)
    assert v.ok and v.chosen == {"b": pytest.approx(math.log(0.3))}  # ties: the earlier object
    zero = verify_draft(OverlapJudge(planted={"text": 0.0}), "q?", _OBJS[:1], ["A"], [], scoring=False)
    assert zero.chosen == {"a": pytest.approx(math.log(1e-6))}  # floored, still finite for aggregation


def test_arm_verification_judge_failure_is_a_failed_verdict():
    class Broken(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            return [float("nan")] * len(candidates)

    v = verify_draft(Broken(), "q?", _OBJS, ["A", "B", "G"], [], scoring=False)
    assert not v.ok and "judge verification failed" in v.message


def test_arm_threshold_is_a_validated_option():
    assert ArmConfig().judge_threshold == 0.5
    assert ArmConfig.from_options({"judge_threshold": "0.7"}).judge_threshold == 0.7
    with pytest.raises(InvalidInputError, match="judge_threshold"):
        ArmConfig(judge_threshold=1.5)


def test_arm_search_with_a_judge_returns_the_judged_set(minilm):
    liked = {"apple", "banana"}
    judge = OverlapJudge(planted={"Apple": 0.95, "Banana": 0.8, "": 0.1})
    cfg = ArmConfig(keywords=False, expand_ks=(2, 3), base_k=3, pool_size=6, vocab_objects=6, mip_time_limit=10)
    arm = Arm(list(FRUIT), judge, cfg, embedder=minilm)
    trace = Trace()
    hits = arm.search("Which fruits are sweet?", k=5, trace=trace)
    ids = {h.id for h in hits}
    assert ids == liked
    for h in hits:
        assert h.obj.metadata["arm_logprob"] == pytest.approx(math.log(0.95 if h.id == "apple" else 0.8))
    assert hits[0].id == "apple"  # the higher judge confidence wins the aggregation
    assert trace.counters["arm_verify_judge"] >= 1 and judge.chat_calls == 0


def test_build_arm_uses_the_judge(fake_judge_module):
    judge, loaded = fake_judge_module
    arm = build_arm(MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "judge_threshold": 0.6}))
    assert arm.llm is judge and arm.config.judge_threshold == 0.6 and loaded == ["j"]


# ---------------------------------------------------------------------- One-SHOT cropping
_CHUNK = "The sky is blue today.  Firms must report losses.\nThey pay a fee. Rome is old.\n(a) daily losses only."


def test_cropping_keeps_the_judged_sentences_exact_spans():
    judge = OverlapJudge(planted={"Firms": 0.9, "fee": 0.6, "daily": 0.5, "": 0.1})
    trace = Trace()
    out = SentenceCropper(judge).crop("Who reports losses?", _CHUNK, trace=trace, chunk_id="c1")
    assert out.cropped and out.kept == (1, 2, 4) and out.n_sentences == 5
    assert out.text == "Firms must report losses.\nThey pay a fee.\n(a) daily losses only."
    assert judge.judge_calls[0][1] == [
        "The sky is blue today.",
        "Firms must report losses.",
        "They pay a fee.",
        "Rome is old.",
        "(a) daily losses only.",
    ]
    assert trace.counters["oneshot.judge_crops"] == 1 and judge.chat_calls == 0
    note = next(e for e in trace.events if e.kind == "oneshot.judge")
    assert note.data["kept"] == [1, 2, 4] and note.data["scores"] == [0.1, 0.9, 0.6, 0.1, 0.5]


def test_cropping_threshold_and_best_sentence():
    judge = OverlapJudge(planted={"Firms": 0.4, "fee": 0.45, "": 0.1})
    strict = SentenceCropper(judge, judge_threshold=0.5).crop("q", _CHUNK)
    assert strict.kept == (2,) and strict.text == "They pay a fee."
    loose = SentenceCropper(judge, judge_threshold=0.0).crop("q", _CHUNK)
    assert not loose.cropped and loose.text == _CHUNK  # every sentence kept: the chunk is unchanged


def test_cropping_judge_failure_keeps_the_chunk():
    class Broken(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            return []

    trace = Trace()
    out = SentenceCropper(Broken()).crop("q", _CHUNK, trace=trace)
    assert out.text == _CHUNK and out.fallback.startswith("judge reply unusable")
    assert any(e.kind == "fallback" for e in trace.events)


def test_oneshot_selector_crops_with_the_judge_and_its_threshold():
    judge = OverlapJudge(planted={"Firms": 0.9, "fee": 0.6, "": 0.1})
    cfg = OneShotConfig(budget=500, crop=True, crop_judge_threshold=0.7)
    hits = [ScoredHit(Passage(id="c1", text=_CHUNK), 1.0, 0)]
    trace = Trace()
    res = OneShotSelector(cfg, llm=judge).select("Who reports losses?", hits, trace=trace)
    assert res.chunks[0].cropped and res.chunks[0].obj.text == "Firms must report losses."
    assert res.chunks[0].obj.metadata["oneshot_kept_sentences"] == [1]
    with pytest.raises(InvalidInputError, match="crop_judge_threshold"):
        OneShotConfig(crop_judge_threshold=2)


def test_build_oneshot_crops_with_the_judge(fake_judge_module):
    judge, _ = fake_judge_module
    r = build_oneshot(MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "crop_judge_threshold": "0.6"}))
    assert r.selector.llm is judge and r.selector.config.crop and r.selector.config.crop_judge_threshold == 0.6
    with pytest.raises(InvalidInputError, match="crop=false"):
        build_oneshot(MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "crop": "false"}))


# ---------------------------------------------------------------------- the agent
_AGENT_DOCS = [
    Passage(id="v1", text="Volcanoes erupt lava and magma."),
    Passage(id="v2", text="Lava from volcanoes cools into rock."),
    Passage(id="w1", text="Volcano weather balloons measure wind."),
    Passage(id="x1", text="Completely unrelated text about cooking."),
]


def _search_then_answer(query: str = "volcano lava"):
    return ScriptedToolChatModel(
        replies=[AIMessage("", tool_calls=[{"name": "chunk_search", "args": {"query": query}, "id": "1"}]), "done"]
    )


def test_agent_judge_deletes_low_chunks_after_search():
    judge = OverlapJudge(planted={"weather": 0.1, "Lava from": 0.4})
    graph = build_iterative_agent(
        _search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=judge, fallback_on_first_turn=False
    )
    state = graph.invoke({"question": "What do volcanoes erupt, lava?"})
    kept = [c["id"] for c in state["working_set"]]
    assert kept == ["v1"]
    ev = next(e for e in state["trace"] if e["kind"] == "judge_delete")
    assert sorted(ev["data"]["removed"]) == ["v2", "w1"] and ev["data"]["threshold"] == 0.5
    assert set(ev["data"]["scores"]) == {"v1", "v2", "w1"}
    assert state["usage"]["judge_calls"] == 1 and len(judge.judge_calls) == 1
    assert judge.judge_calls[0][0] == "What do volcanoes erupt, lava?"  # judged against the question
    tool_msg = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert "The relevance judge removed" in tool_msg.content and "[w1]" in tool_msg.content
    run = run_agent(
        build_iterative_agent(_search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=OverlapJudge()), "volcano?"
    )
    assert run.trace.counters["judge_calls"] >= 1


def test_agent_without_a_judge_is_unchanged():
    graph = build_iterative_agent(_search_then_answer(), BM25Index.build(_AGENT_DOCS), fallback_on_first_turn=False)
    state = graph.invoke({"question": "What do volcanoes erupt, lava?"})
    assert [c["id"] for c in state["working_set"]] == ["v1", "v2", "w1"]
    assert not any(e["kind"].startswith("judge") for e in state["trace"])
    assert "judge_calls" not in state["usage"]


def test_agent_judge_that_keeps_everything_and_a_broken_judge():
    graph = build_iterative_agent(
        _search_then_answer(),
        BM25Index.build(_AGENT_DOCS),
        judge=OverlapJudge(planted={"": 0.9}),
        fallback_on_first_turn=False,
    )
    state = graph.invoke({"question": "volcano lava"})
    assert len(state["working_set"]) == 3 and any(e["kind"] == "judge" for e in state["trace"])

    class Broken(OverlapJudge):
        def score_relevance(self, query, candidates, *, trace=None):
            raise RuntimeError("GPU fell over")

    state = build_iterative_agent(
        _search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=Broken(), fallback_on_first_turn=False
    ).invoke({"question": "volcano lava"})
    assert len(state["working_set"]) == 3 and state["answer"] == "done"
    assert any(e["kind"] == "judge_error" and "GPU fell over" in e["message"] for e in state["trace"])


def test_agent_rejects_bad_judge_arguments():
    with pytest.raises(InvalidInputError, match="score_relevance"):
        build_iterative_agent(_search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=object())
    with pytest.raises(InvalidInputError, match="judge_threshold"):
        build_iterative_agent(
            _search_then_answer(), BM25Index.build(_AGENT_DOCS), judge=OverlapJudge(), judge_threshold=2
        )


def test_build_iterative_passes_the_judge(fake_judge_module, monkeypatch):
    judge, _ = fake_judge_module
    from retrievekit.core.llm import local
    from retrievekit.langgraph import graph as graph_mod
    from retrievekit.langgraph import method as method_mod

    monkeypatch.setattr(local.LocalLM, "load", classmethod(lambda cls, name, **kw: OverlapJudge()))
    seen = {}
    real = graph_mod.build_iterative_agent

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_mod, "build_iterative_agent", spy)
    m = method_mod.build_iterative(
        MethodContext(corpus=list(FRUIT), options={"judge_dir": "j", "judge_threshold": "0.7", "base": "bm25"})
    )
    assert seen["judge"] is judge and seen["judge_threshold"] == 0.7 and m.graph is not None


def test_docs_pages_have_a_judge_section():
    root = Path(__file__).resolve().parents[1] / "docs" / "methods"
    for page in ("lattice.md", "arm.md", "oneshot.md", "iterative.md"):
        assert "## Using a judge" in (root / page).read_text(encoding="utf-8"), page


# ---------------------------------------------------------------------- where users put them
def test_llama_index_query_engine_with_judged_lattice_and_judged_cropping():
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from retrievekit.llama_index import LatticeRetriever, OneShotPostprocessor

    judge = OverlapJudge()
    docs = [*FRUIT, Passage(id="nile2", text="The Nile is long. Cairo lies on the Nile river.", title="Nile facts")]
    lat = Lattice(SemanticTree.flat(docs), judge, LatticeConfig(num_iters=3))
    crop = OneShotPostprocessor(config=OneShotConfig(budget=500, crop=True, crop_judge_threshold=0.5), llm=judge)
    engine = RetrieverQueryEngine.from_args(
        LatticeRetriever(lat, similarity_top_k=2), llm=MockLLM(), node_postprocessors=[crop]
    )
    resp = engine.query("Which city lies on the Nile river?")
    ids = [n.node.node_id for n in resp.source_nodes]
    assert "nile2" in ids
    nile2 = next(n for n in resp.source_nodes if n.node.node_id == "nile2")
    assert nile2.node.get_content() == "Cairo lies on the Nile river."  # the judge's sentence, exact span
    assert judge.chat_calls == 0 and len(judge.judge_calls) >= 2  # slates + one crop, no prompt


def test_langchain_lcel_chain_with_judged_lattice():
    from retrievekit.langchain import LatticeRetriever

    judge = OverlapJudge()
    r = LatticeRetriever(retriever=Lattice(SemanticTree.flat(list(FRUIT)), judge), k=1)
    answer, docs = run_rag_chain(r, "Rust systems programming language memory safety", "Rust.")
    seen = [d.id for d in docs]
    assert answer == "Rust."
    assert seen == ["rust"] and r.last_trace.counters["lattice.judge_slates"] >= 1
