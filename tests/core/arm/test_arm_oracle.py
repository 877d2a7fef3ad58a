"""ARM with the gold-label oracle (issue #17.1): an ARM object stands for itself, so oracle verification keeps
exactly the gold objects of a draft, and the search returns the gold objects its drafts held.

Real components: the oracle, ARM's verification and search (MiniLM, BM25, the MIP), the harness.
"""

from __future__ import annotations

from _arm import QUESTION, Chat, corpus
from _corpora import FRUIT

from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.method import Arm
from retrievekit.core.arm.verify import verify_draft
from retrievekit.core.eval.datasets import Dataset, Query
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.judge.oracle import OracleJudge
from retrievekit.core.trace import Trace

Q = "Which fruits are sweet?"


def test_oracle_verification_keeps_exactly_the_gold_objects():
    objs = list(FRUIT[:4])
    trace = Trace()
    v = verify_draft(
        OracleJudge({Q: ["banana", "apple"]}), Q, objs, ["A", "B", "P", "R"], [], scoring=False, trace=trace
    )
    assert v.ok and set(v.chosen) == {"apple", "banana"}
    assert trace.judged[0].refs == tuple(frozenset({o.id}) for o in objs) and trace.judged[0].scores == (1, 1, 0, 0)


def test_arm_search_with_the_oracle_returns_the_gold_objects(minilm):
    cfg = ArmConfig(keywords=False, expand_ks=(2, 3), base_k=3, pool_size=6, vocab_objects=6, mip_time_limit=10)
    arm = Arm(list(FRUIT), OracleJudge({Q: ["apple", "banana"]}), cfg, embedder=minilm)
    trace = Trace()
    hits = arm.search(Q, k=5, trace=trace)
    assert {h.id for h in hits} == {"apple", "banana"}
    judged = {next(iter(r)): s for b in trace.judged for r, s in zip(b.refs, b.scores, strict=True)}
    assert {i for i, s in judged.items() if s == 1.0} == {"apple", "banana"}


def test_arm_with_the_oracle_through_the_harness_keeps_its_chat_stages(minilm):
    ds = Dataset(
        "arm", "dev", corpus(), [Query("q1", QUESTION)], {"q1": {"/wiki/Prime_Suspect": 1, "Nonso_Anozie_1": 1}}
    )
    oracle = OracleJudge.from_qrels(ds.queries, ds.qrels, base=Chat())  # the keyword stage needs a chat model
    cfg = ArmConfig(expand_ks=(2, 3), base_k=3, pool_size=6, vocab_objects=6, mip_time_limit=10)
    arm = Arm(ds.corpus, oracle, cfg, embedder=minilm)
    result = run_benchmark(ds, arm, k=5, label="arm+oracle", progress=False, keep_run=True)
    assert set(result["run"]["q1"]) == {"/wiki/Prime_Suspect", "Nonso_Anozie_1"}
    assert result["judge"]["auc"] == 1.0 and result["judge"]["uses_gold_labels"]  # flagged, even for a ready retriever
    assert result["cost"]["llm_calls_per_query"] >= 1  # keyword decomposition went to the base chat model


def test_a_judge_over_a_scoring_base_changes_verification_only_the_keywords_are_decoded_as_without_it(minilm):
    from _tiny_lm import build_tiny_lm

    from retrievekit.core.llm import LocalLM

    model, tok = build_tiny_lm()
    lm = LocalLM(model, tok, name="tiny", use_outlines=False)
    cfg = ArmConfig(max_keywords=2, keyword_beams=2, words_per_keyword=2, verify=False, ilp_k=4, mip_time_limit=10)
    objs = corpus()
    plain, judged = Trace(), Trace()
    Arm(objs, lm, cfg, embedder=minilm).search(QUESTION, k=3, trace=plain)
    oracle = OracleJudge({QUESTION: ["/wiki/Prime_Suspect"]}, base=lm)
    Arm(objs, oracle, cfg, embedder=minilm).search(QUESTION, k=3, trace=judged)

    def keywords(trace):
        (note,) = [e for e in trace.events if e.kind == "keywords"]
        return note.data["mode"], note.data["keywords"], note.data["ngrams"]

    assert keywords(judged)[0] == "constrained"  # not the chat path with snapping, which a judge used before
    assert keywords(judged) == keywords(plain)


def test_a_trained_judge_decodes_keywords_with_its_untuned_base_model(minilm):
    """A trained judge's tuned weights score only: ARM's keywords come from the base it was trained from, as
    without a judge, and the keyword cache is keyed by that base's name; a judge with no base left writes itself."""
    from _tiny_lm import build_tiny_lm

    from retrievekit.core.arm.method import _keyword_model
    from retrievekit.core.judge import Judge
    from retrievekit.core.llm import LocalLM
    from retrievekit.core.registry import MethodContext

    base = LocalLM(*build_tiny_lm(), name="tiny", use_outlines=False)
    tuned, tok = build_tiny_lm(seed=1)  # other weights, same tokenizer: what fine-tuning leaves
    cfg = ArmConfig(max_keywords=2, keyword_beams=2, words_per_keyword=2, verify=False, ilp_k=4, mip_time_limit=10)
    objs = corpus()

    def keywords(llm):
        trace = Trace()
        Arm(objs, llm, cfg, embedder=minilm).search(QUESTION, k=3, trace=trace)
        (note,) = [e for e in trace.events if e.kind == "keywords"]
        return note.data["mode"], note.data["keywords"], note.data["ngrams"]

    loads = []
    judge = Judge(tuned, tok, load_base=lambda: loads.append(1) or base, free_text_model="tiny")
    assert keywords(judge) == keywords(base) and keywords(judge)[0] == "constrained"
    assert loads == [1]  # loaded once, on the first free-text request
    own = Judge(tuned, tok)  # merged into a model handed over in code: no base to load
    assert own.chat_model().model is tuned and keywords(own) == keywords(LocalLM(tuned, tok, use_outlines=False))
    ctx = MethodContext(corpus=objs, llm="tiny", options={"judge_dir": "judges/x"})
    assert _keyword_model(ctx, judge) == "tiny" and _keyword_model(ctx, own) == "judge:judges/x"
