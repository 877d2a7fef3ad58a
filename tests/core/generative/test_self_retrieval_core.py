"""Self-Retrieval core: passages, training data, scoring, trie decoding, training glue (tiny real models, CPU)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from _self_retrieval import ANIMALS, COLORS, DOCS, PAIRS, build_lm, train_small

from retrievekit.core.errors import EmptyCorpusError, InvalidInputError, ModelMismatchError
from retrievekit.core.generative.self_retrieval import (
    QueryPair,
    SelfRetrieval,
    SelfRetrievalConfig,
    build_training_examples,
    combine_scores,
    split_passages,
)
from retrievekit.core.llm import LocalLM
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.trace import Trace
from retrievekit.core.training import TrainConfig, encode_example
from retrievekit.core.types import Passage


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sr") / "run"
    train_small(out, steps=200)
    return out


# ---------------------------------------------------------------------- passages and data


def test_passages_split_dedup_and_exact_offsets() -> None:
    long = " ".join(f"Word{i} is here." for i in range(30))  # 90 words
    docs = [
        Passage(id="a", title="Same", text="A shared text of words."),
        Passage(id="b", title="Same", text="A shared text of words."),  # duplicate passage (same title + text)
        Passage(id="c", title="Long", text=long),
        Passage(id="u", text="Untitled first sentence. Then more."),
    ]
    ps = split_passages(docs, SelfRetrievalConfig(max_passage_words=40))
    assert ps.aliases == {"b": "a"} and ps.stats["duplicates"] == 1 and ps.stats["untitled"] == 1
    assert ps.passages[0].metadata["documents"] == ("a", "b")
    longs = [p for p in ps.passages if p.metadata["document_id"] == "c"]
    assert [p.id for p in longs] == ["c#p0", "c#p1", "c#p2"]
    for p in ps.passages:
        doc = next(d for d in docs if d.id == p.metadata["document_id"])
        assert doc.text[p.metadata["char_start"] : p.metadata["char_end"]] == p.text
        assert len(p.text.split()) <= 40
    assert ps.titles[-1] == "untitled first sentence."
    with pytest.raises(EmptyCorpusError):
        split_passages([Passage(id="e", text="   ")], SelfRetrievalConfig())


def test_training_data_kinds_templates_and_trainable_spans() -> None:
    ps = split_passages(DOCS[:6], SelfRetrievalConfig())
    cfg = SelfRetrievalConfig(neg_num=3, qa_repeat_times=2, candidate_titles=4)
    examples, stats = build_training_examples(ps, cfg, [QueryPair(*PAIRS[0]), QueryPair("q?", "d1", "yes")])
    assert stats["index"] == 12  # two 5-50-word sentences per passage
    assert stats["query-title"] == stats["query-passage"] == stats["approve"] == stats["candidates"] == 4
    assert stats["reject"] == 2 * 2 * 3
    rej = next(e for e in examples if e.kind == "reject")
    assert rej.segments[0].text == "Question: Which animal has red fur?\n\n Related document title: "
    assert (
        rej.segments[1].text.endswith("\n\n Final answer:") and "\n Related document content: " in rej.segments[1].text
    )
    assert [s.trainable for s in rej.segments] == [False, False, True]
    assert rej.segments[2].text == " cannot extract answer"
    assert not rej.segments[1].text.startswith("cat")  # a negative is another passage
    approve = [e for e in examples if e.kind == "approve"]
    assert approve[1].segments[2].text == " yes" and approve[0].segments[2].text == cfg.approval_response
    cand = next(e for e in examples if e.kind == "candidates")
    assert cand.segments[0].text.count("\n ") >= 4 and " cat\n" in cand.segments[0].text + "\n"
    prefix = build_training_examples(ps, SelfRetrievalConfig(index_mode="prefix", prefix_words=3))[0][0]
    assert prefix.segments[1].text == "cat\n Related document content: The cat lives" and not prefix.add_eos
    with pytest.raises(InvalidInputError, match="neither a document nor a passage"):
        build_training_examples(ps, cfg, [QueryPair("q", "nope")])
    _, tok = build_lm()
    enc = encode_example(rej, tok, max_length=512)
    trained_ids = [i for i, lab in zip(enc.input_ids, enc.labels, strict=True) if lab != -100]
    assert tok.decode(trained_ids[:-1]) == " cannot extract answer" and trained_ids[-1] == tok.eos_token_id


# ---------------------------------------------------------------------- scoring


def test_scoring_formula_on_planted_logprobs() -> None:
    titles = [-0.2, -1.5, -0.7]
    ces = [[0.1, 2.0, 0.9], [3.0], [0.5, 0.5]]
    got = combine_scores(titles, ces, tau=0.4, delta=0.4)
    pt = [math.exp(math.exp(t) / 0.4) for t in titles]
    st = [x / sum(pt) for x in pt]
    for i, group in enumerate(ces):
        s = [1 - math.exp(-c) for c in group]
        ps_ = [math.exp(x / 0.4) for x in s]
        expected = [st[i] * x / sum(ps_) for x in ps_]
        assert np.allclose(got[i], expected)
    assert math.isclose(sum(float(g.sum()) for g in got), 1.0)  # products of two distributions
    assert got[0][1] > got[0][0]  # a high rejection loss (model would not reject) ranks higher
    with pytest.raises(InvalidInputError):
        combine_scores([0.0], [[1.0], [1.0]])
    with pytest.raises(InvalidInputError):
        combine_scores([0.0], [[-1.0]])


def test_config_options_and_validation() -> None:
    cfg = SelfRetrievalConfig.from_options({"tau": "0.5", "random_sent_num": "none", "lowercase_titles": "no"})
    assert cfg.tau == 0.5 and cfg.random_sent_num is None and not cfg.lowercase_titles
    with pytest.raises(InvalidInputError):
        SelfRetrievalConfig(index_mode="middle")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="train-self-retrieval"):
        build_method("self-retrieval", MethodContext(corpus=DOCS))


# ---------------------------------------------------------------------- decoding (untrained model)


def test_every_hit_is_an_exact_corpus_passage_even_when_clipped() -> None:
    model, tok = build_lm(seed=3)
    lm = LocalLM(model, tok, name="tiny", use_outlines=False)
    long = " ".join(f"The {a} sees a {c} river." for a, c in zip(ANIMALS, COLORS, strict=True)) * 6  # > context
    corpus = [*DOCS[:8], Passage(id="long", title="cat", text=long)]  # shares the title "cat" with d0
    cfg = SelfRetrievalConfig(max_passage_words=1000, max_passage_tokens=64, title_beams=4, passage_beams=3)
    sr = SelfRetrieval(corpus, lm, cfg)
    assert sr.stats["passages_clipped"] == 1 and len(sr.titles) == 8
    trace = Trace()
    hits = sr.search("Which animal has red fur?", k=20, trace=trace)
    assert hits and len(hits) <= 9
    by_id = {d.id: d for d in corpus}
    for h in hits:
        m = h.obj.metadata
        assert by_id[m["document_id"]].text[m["char_start"] : m["char_end"]] == h.obj.text and m["exact"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert sr.checks["not_exact"] == 0 and trace.counters["self_retrieval.titles"] >= 1
    assert "self_retrieval.assess" in trace.stage_seconds and trace.llm_calls >= 2
    cat = sr.recall_passages("q", "cat")  # two passages under one title: decoded, both exact
    assert sorted(i for p, _ in cat for i in p) == [0, 8]


# ---------------------------------------------------------------------- training glue


def test_trained_model_retrieves_better_than_chance(trained: Path) -> None:
    sr = SelfRetrieval.from_model_dir(trained, DOCS)
    hit1 = mrr = 0.0
    for i, (query, gold) in enumerate(PAIRS):
        ids = [h.id for h in sr.search(query, k=5)]
        hit1 += ids[:1] == [gold]
        mrr += 1 / (ids.index(gold) + 1) if gold in ids else 0.0
        assert len(set(ids)) == len(ids), i
    rng = random.Random(0)
    base1 = base_mrr = 0.0
    for _, gold in PAIRS:  # random baseline: a random ranking of the 20 documents
        ids = rng.sample([d.id for d in DOCS], 5)
        base1 += ids[:1] == [gold]
        base_mrr += 1 / (ids.index(gold) + 1) if gold in ids else 0.0
    n = len(PAIRS)
    assert hit1 / n >= 0.25 > base1 / n + 0.1
    assert mrr / n > base_mrr / n + 0.15
    assert sr.manifest.kind == "self-retrieval" and sr.manifest.settings["data"]["reject"] == 40


def test_model_dir_of_another_corpus_or_settings_is_refused(trained: Path) -> None:
    other = [*DOCS[:19], Passage(id="d19", title="boa", text="Changed text.")]
    with pytest.raises(ModelMismatchError):
        SelfRetrieval.from_model_dir(trained, other)
    with pytest.raises(ModelMismatchError, match="lowercase_titles"):
        SelfRetrieval.from_model_dir(trained, DOCS, SelfRetrievalConfig(lowercase_titles=False))
    sr = build_method(
        "self-retrieval", MethodContext(corpus=DOCS, options={"model_dir": str(trained), "title_beams": 2})
    )
    assert isinstance(sr, SelfRetrieval) and sr.config.hit_level == "document" and sr.config.title_beams == 2


def test_training_interrupted_then_resumed(tmp_path: Path) -> None:
    tcfg = TrainConfig(max_steps=4, batch_size=8, learning_rate=1e-3, save_every_steps=1)

    def crash(step: int, loss: float) -> None:
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_small(tmp_path, steps=4, train_config=tcfg, on_step=crash)
    assert (tmp_path / "checkpoint").is_dir() and not (tmp_path / "model").exists()
    res = train_small(tmp_path, steps=4, train_config=tcfg)
    assert res.resumed_from_step == 2 and res.steps == 4
    assert (tmp_path / "model").is_dir() and not (tmp_path / "checkpoint").exists()
    SelfRetrieval.from_model_dir(tmp_path, DOCS)
