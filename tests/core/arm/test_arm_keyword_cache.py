"""ARM's keyword alignment is cached per (model, question, vocabulary, settings, prompts) and decoded once."""

from __future__ import annotations

import pytest
from _arm import QUESTION, corpus
from _tiny_lm import build_tiny_lm

from retrievekit.core.arm import Arm, ArmConfig
from retrievekit.core.arm.keyword_cache import KeywordCache
from retrievekit.core.index.bm25 import BM25Index
from retrievekit.core.index.dense import DenseIndex
from retrievekit.core.llm import LocalLM
from retrievekit.core.trace import Trace

CFG = {"max_keywords": 2, "keyword_beams": 2, "words_per_keyword": 2, "verify": False, "ilp_k": 4}


@pytest.fixture(scope="module")
def parts(minilm):
    objs = corpus()
    model, tok = build_tiny_lm()
    lm = LocalLM(model, tok, name="tiny", use_outlines=False)
    return objs, DenseIndex.build(objs, embedder=minilm), BM25Index.build(objs), lm


def _search(parts, cache, **options):
    objs, dense, bm25, lm = parts
    arm = Arm(objs, lm, ArmConfig.from_options({**CFG, **options}), dense=dense, bm25=bm25, keyword_cache=cache)
    trace = Trace()
    hits = arm.search(QUESTION, k=3, trace=trace)
    return [h.id for h in hits], trace


def test_second_run_reuses_the_alignment_and_returns_the_same_set(parts, tmp_path):
    first_ids, first = _search(parts, KeywordCache(tmp_path, model="tiny"))
    assert first.llm_calls >= 2 and "arm_keyword_cache_hits" not in first.counters
    again_ids, again = _search(parts, KeywordCache(tmp_path, model="tiny"))  # a new process would read the file
    assert again.llm_calls == 0 and again.counters["arm_keyword_cache_hits"] == 1
    assert again_ids == first_ids


def test_another_model_or_setting_decodes_again(parts, tmp_path):
    _search(parts, KeywordCache(tmp_path, model="tiny"))
    _, other_model = _search(parts, KeywordCache(tmp_path, model="another-model"))
    assert other_model.llm_calls >= 2
    _, other_setting = _search(parts, KeywordCache(tmp_path, model="tiny"), max_keywords=1)
    assert other_setting.llm_calls >= 2


def test_a_line_cut_short_is_ignored(parts, tmp_path):
    _search(parts, KeywordCache(tmp_path, model="tiny"))
    (own,) = tmp_path.glob("keywords.*.jsonl")
    own.write_text(own.read_text()[:-20])  # the last entry cut mid-line, as by a killed process
    cache = KeywordCache(tmp_path, model="tiny")
    assert len(cache) == 0
    _, trace = _search(parts, cache)
    assert trace.llm_calls >= 2
