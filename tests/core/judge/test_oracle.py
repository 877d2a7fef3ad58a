"""The gold-label oracle judge (issue #17.1): gold in, 1/0 out; seeded noise that is reproducible per pair and
independent of candidate order and batch; AUC 1 at S=0 and about 0.5 at S=1; refused without refs.

Real components: the oracle itself, BM25 and the benchmark harness (judge-rerank), SciFact when the data is there.
"""

from __future__ import annotations

import random

import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.datasets import Dataset, Query, load_dataset
from retrievekit.core.eval.judge_accuracy import roc_auc
from retrievekit.core.eval.runner import run_benchmark
from retrievekit.core.judge.oracle import OracleJudge, pair_uniforms
from retrievekit.core.llm.judge_hooks import judge_from_options, judge_relevance, parse_oracle
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

GOLD = {"which fruit is yellow?": {"banana"}, "  which   language is safe? ": {"rust", "python"}}


def test_oracle_scores_one_for_gold_and_what_stands_for_it():
    oracle = OracleJudge(GOLD)
    refs = [{"banana"}, {"apple"}, {"apple", "banana", "nile"}, set()]
    assert oracle.score_relevance("which fruit is yellow?", ["a", "b", "c", "d"], refs=refs) == [1.0, 0.0, 1.0, 0.0]
    # keyed by the whitespace-normalised query text
    assert oracle.score_relevance("which language is safe?", ["x"], refs=[["rust"]]) == [1.0]
    with pytest.raises(InvalidInputError, match="no gold labels"):
        oracle.score_relevance("an unknown query", ["x"], refs=[["rust"]])


def test_oracle_without_refs_is_a_typed_error():
    oracle = OracleJudge(GOLD)
    with pytest.raises(InvalidInputError, match="needs refs"):
        oracle.score_relevance("which fruit is yellow?", ["a"])
    with pytest.raises(InvalidInputError, match="needs refs"):
        judge_relevance(oracle, "which fruit is yellow?", ["a"], trace=Trace())
    with pytest.raises(InvalidInputError, match="1 refs for 2"):
        judge_relevance(oracle, "which fruit is yellow?", ["a", "b"], refs=[["banana"]])
    with pytest.raises(InvalidInputError, match="not one string"):
        judge_relevance(oracle, "which fruit is yellow?", ["a"], refs=["banana"])


def test_the_hook_records_refs_and_scores_and_passes_refs_only_to_judges_that_ask():
    seen = []

    class Plain:  # an existing judge: no refs keyword
        def score_relevance(self, query, candidates, *, trace=None):
            seen.append(list(candidates))
            return [0.25] * len(candidates)

    t = Trace()
    assert judge_relevance(Plain(), "q", ["a", "b"], trace=t, refs=[["d1"], ["d2", "d3"]]) == [0.25, 0.25]
    assert judge_relevance(OracleJudge({"q": ["d3"]}), "q", ["a", "b"], trace=t, refs=[["d1"], ["d3"]]) == [0.0, 1.0]
    judge_relevance(Plain(), "q", ["c"], trace=t)  # no refs: scored, not recorded
    assert [b.judge["name"] for b in t.judged] == ["Plain", "oracle"]
    assert t.judged[0].refs == (frozenset({"d1"}), frozenset({"d2", "d3"})) and t.judged[0].scores == (0.25, 0.25)
    assert t.judged[1].judge == {"name": "oracle", "noise": 0.0, "uses_gold_labels": True}
    assert "judged" not in t.to_dict()  # not in the JSON view (a LATTICE node stands for a whole subtree)


def test_noise_is_reproducible_per_pair_and_independent_of_order_and_batch():
    q = "which fruit is yellow?"
    refs = [{"banana"}, {"apple"}, {"nile", "banana"}, {"rust"}, {"everest"}]
    texts = [f"candidate {i}" for i in range(len(refs))]
    oracle = OracleJudge(GOLD, noise=0.7, seed=5)
    batch = oracle.score_relevance(q, texts, refs=refs)
    reverse = oracle.score_relevance(q, texts[::-1], refs=refs[::-1])[::-1]
    one_by_one = [oracle.score_relevance(q, [t], refs=[r])[0] for t, r in zip(texts, refs, strict=True)]
    again = OracleJudge(GOLD, noise=0.7, seed=5).score_relevance(q, texts, refs=[sorted(r) for r in refs])
    assert batch == reverse == one_by_one == again
    assert all(0.0 <= s < 1.0 for s in batch) and len(set(batch)) == len(batch)
    assert OracleJudge(GOLD, noise=0.7, seed=6).score_relevance(q, texts, refs=refs) != batch
    assert pair_uniforms(5, q, {"a", "b"}, "t") == pair_uniforms(5, "  " + q, ("b", "a"), "t")


def test_noise_model_expected_auc_is_one_minus_half_the_strength():
    rng = random.Random(0)
    queries = {f"query {i}": {f"g{i}"} for i in range(40)}
    pairs = [
        (q, {f"g{i}"} if rng.random() < 0.3 else {f"n{i}-{j}"}, f"text {j}")
        for i, q in enumerate(queries)
        for j in range(100)
    ]
    labels = [int(next(iter(r)).startswith("g")) for _, r, _ in pairs]
    for strength in (0.0, 0.25, 0.5, 0.75, 1.0):
        oracle = OracleJudge(queries, noise=strength, seed=1)
        scores = [oracle.score(q, r, t) for q, r, t in pairs]
        assert roc_auc(scores, labels) == pytest.approx(1 - strength / 2, abs=0.03), strength
        if strength < 1:  # the threshold 0.5 reads the (possibly flipped) verdict
            assert all((s >= 0.5) == (s >= 1 - strength / 2) for s in scores)


def test_parse_oracle_and_bad_noise():
    assert parse_oracle("oracle") == (0.0, 0)
    assert parse_oracle("oracle:1") == (1.0, 0)
    assert parse_oracle("oracle:0.3:9") == (0.3, 9)
    assert parse_oracle("runs/oracle-judge") is None and parse_oracle("zero-shot") is None
    for bad in ("oracle:-0.1", "oracle:x", "oracle:0.1:y", "oracle:0.1:2:3"):
        with pytest.raises(InvalidInputError, match="noise S in"):
            parse_oracle(bad)
    with pytest.raises(InvalidInputError, match="noise must be"):
        OracleJudge(GOLD, noise=1.5)


def test_only_the_harness_can_hand_a_method_the_oracle():
    with pytest.raises(InvalidInputError, match="only the benchmark harness"):
        judge_from_options(MethodContext(corpus=[], options={"judge_dir": "oracle:0.5"}))
    oracle = OracleJudge(GOLD)
    got, opts = judge_from_options(MethodContext(corpus=[], options={"judge_dir": "oracle", "calls": 2}, judge=oracle))
    assert got is oracle and opts == {"calls": 2}


def test_oracle_delegates_free_text_to_a_base_model_loaded_once():
    from _judges import OverlapJudge

    loads = []

    def load():
        loads.append(1)
        return OverlapJudge()

    oracle = OracleJudge(GOLD, load_base=load)
    assert oracle.complete("Summarise.").text == "Topic summary"
    oracle.complete("Again.")
    assert loads == [1]
    with pytest.raises(InvalidInputError, match="no base model"):
        OracleJudge(GOLD).complete("Summarise.")


_DOCS = [
    Passage(id=f"{topic}{i}", text=f"{topic} note {i}: {words}")
    for topic, words in [
        ("volcano", "lava magma eruption crater"),
        ("ocean", "waves tide salt current"),
        ("forest", "trees moss fern canopy"),
        ("desert", "sand dune cactus heat"),
    ]
    for i in range(5)
]
_QUERIES = [
    Query(f"q{t}", f"{t} {w}")
    for t, w in [("volcano", "lava"), ("ocean", "tide"), ("forest", "fern"), ("desert", "dune")]
]
_QRELS = {q.id: {f"{q.id[1:]}{i}": 1 for i in (0, 3)} for q in _QUERIES}


def _rerank(dataset: Dataset, spec: str, k: int = 10) -> dict:
    options = {"judge_dir": spec, "rerank_k": k, "first_stage": "bm25"}
    return run_benchmark(dataset, "judge-rerank", k=k, options=options, progress=False)


def test_oracle_through_the_harness_on_bm25():
    ds = Dataset("toy", "dev", _DOCS, _QUERIES, _QRELS)
    exact = _rerank(ds, "oracle")
    assert exact["judge"]["auc"] == 1.0 and exact["judge"]["pairwise_accuracy"] == 1.0
    assert exact["metrics"]["ndcg@10"] == 1.0  # every gold object is in BM25's top 10 and the oracle puts it first
    assert exact["judge"]["scored_pairs"] == 20 and exact["judge"]["positives"] == 8  # BM25 finds 5 per query
    assert exact["judge"]["uses_gold_labels"] and exact["judge"]["warning"].startswith("diagnostic run")
    assert exact["options"]["judge_dir"] == "oracle"


def test_oracle_auc_on_scifact(data_dir):
    ds = load_dataset("scifact", data_dir, split="dev", limit=60, corpus_size=600, seed=0)
    exact, chance = _rerank(ds, "oracle", 20), _rerank(ds, "oracle:1", 20)
    assert exact["judge"]["auc"] == 1.0 and exact["judge"]["noise"] == 0.0
    assert chance["judge"]["auc"] == pytest.approx(0.5, abs=0.12) and chance["judge"]["noise"] == 1.0
    assert exact["judge"]["scored_pairs"] == chance["judge"]["scored_pairs"] == 60 * 20
    assert exact["metrics"]["ndcg@10"] > chance["metrics"]["ndcg@10"]
