"""LATTICE with a relevance judge (issue #9): one ``score_relevance`` call per slate instead of the slate prompt.

The judges are scripted (tests/_judges.py) and the tree is planted (tests/_lattice.py): the scripted scores are the
point, and every test asserts that the search follows them.
"""

from __future__ import annotations

from _judges import OverlapJudge, PromptScorer
from _lattice import planted_tree

from retrievekit.core.lattice import Lattice, LatticeConfig, SlateScorer
from retrievekit.core.trace import Trace


def test_lattice_with_a_judge_reaches_the_planted_leaf_one_call_per_slate():
    judge = OverlapJudge()
    lat = Lattice(planted_tree(), judge, LatticeConfig(beam_size=1, num_iters=3))
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
    hits_j = Lattice(planted_tree(), judge, cfg).search("volcano eruption magma lava", k=3, trace=t_judge)
    hits_p = Lattice(planted_tree(), prompt_llm, cfg).search("volcano eruption magma lava", k=3, trace=t_prompt)
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


def test_a_trained_judge_without_tree_dir_uses_its_base_models_tree():
    """A trained judge writes summaries with its untuned base, so it shares that model's default tree; a judge
    with no base left (its own weights write) gets a tree of its own."""
    from types import SimpleNamespace

    from retrievekit.core.lattice.method import _summary_llm_tag
    from retrievekit.core.registry import MethodContext

    ctx = MethodContext(corpus=[], options={"judge_dir": "judges/smollm2-scifact"})
    assert _summary_llm_tag(ctx, SimpleNamespace(free_text_model="smollm2")) == "smollm2"
    assert _summary_llm_tag(ctx, SimpleNamespace(free_text_model=None)).startswith("judge-")


def test_a_search_says_what_each_node_stands_for_without_listing_its_leaves():
    """The refs a LATTICE search hands the judge hook are lazy: membership walks up the tree, so a search over a
    large tree does not list every leaf below the nodes it scores (it did, and that grew with the corpus); the
    judged pairs it records are still labelled from them."""
    from retrievekit.core.eval.judge_accuracy import query_pairs

    tree = planted_tree()
    trace = Trace()
    Lattice(tree, OverlapJudge(), LatticeConfig(beam_size=1, num_iters=3)).search("volcano eruption", k=3, trace=trace)
    assert tree._leaf_sets == {}  # no subtree was listed
    pairs = query_pairs(trace.judged, {"t1s2l0": 1})
    first = trace.judged[0]  # the root's slate: t1 holds the gold leaf, its siblings do not
    assert "t1s2l0" in first.refs[1] and "t1s2l0" not in first.refs[0]
    assert pairs["labels"][:3] == [0, 1, 0] and 1 in pairs["labels"]
    assert sorted(first.refs[1]) == sorted(tree.leaves_under("t1"))  # listed only when asked
